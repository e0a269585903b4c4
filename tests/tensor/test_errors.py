"""Bad input gets an error that names the op, the operands and a fix — never a bare NumPy traceback."""

import numpy as np
import pytest

import minigrad.tensor as mt


def test_matmul_inner_dimension_mismatch():
    x, w = mt.zeros(32, 784), mt.zeros(256, 128)
    with pytest.raises(mt.ShapeError, match=r"^matmul: \(32, 784\) @ \(256, 128\): inner dimensions 784 and 256 differ"):
        x @ w


def test_matmul_suggests_the_transpose_that_fits():
    x, w = mt.zeros(32, 784), mt.zeros(256, 784)
    with pytest.raises(mt.ShapeError, match=r"inner dimensions 784 and 256 differ — did you mean W\.T\?"):
        x @ w
    with pytest.raises(mt.ShapeError, match=r"did you mean x\.T\?"):
        mt.zeros(5, 3) @ mt.zeros(5, 2)


def test_matmul_other_mistakes():
    with pytest.raises(mt.ShapeError, match="at least one dimension.*use \\*"):
        mt.zeros(()) @ mt.zeros(3)
    with pytest.raises(mt.ShapeError, match=r"batch dimensions do not broadcast.*dimension -1 has sizes 2 and 3"):
        mt.zeros(2, 4, 5) @ mt.zeros(3, 5, 6)


def test_broadcasting_mismatch_names_both_shapes_the_dimension_and_a_fix():
    with pytest.raises(
        mt.ShapeError,
        match=r"^add: shapes \(3, 4\) and \(5,\) cannot be broadcast: dimension -1 has sizes 4 and 5.*unsqueeze",
    ):
        mt.zeros(3, 4) + mt.zeros(5)
    with pytest.raises(mt.ShapeError, match=r"^mul: shapes"):
        mt.zeros(3, 4) * mt.zeros(2, 4)
    with pytest.raises(mt.ShapeError, match=r"^gt: shapes \(2,\) and \(3,\)"):
        mt.zeros(2) > mt.zeros(3)


@pytest.mark.host_only  # between the CPU and another device
def test_device_mismatch_names_devices_and_the_fix(twin_device):
    a = mt.ones(3)
    b = mt.ones(3, device=twin_device)
    with pytest.raises(mt.DeviceError, match=r"^add: expected all tensors on the same device, got \(3,\) on cpu, \(3,\) on twin.*\.to\('cpu'\)"):
        a + b
    with pytest.raises(mt.DeviceError, match="matmul"):
        mt.ones(2, 3) @ mt.ones(3, 2, device=twin_device)
    # "cuda" is the GPU stage's (tests/gpu/test_backend_errors.py checks its messages)
    with pytest.raises(mt.DeviceError, match=r"unknown device type 'tpu'; registered: .*cpu"):
        mt.ones(2).to("tpu")


def test_dtype_mistakes():
    with pytest.raises(mt.DTypeError, match=r"getitem: tensors used as indices must be int64 or bool, got float32.*\.long\(\)"):
        mt.zeros(3)[mt.tensor([0.0, 1.0])]
    with pytest.raises(mt.DTypeError, match="where: condition must be a bool tensor"):
        mt.where(mt.ones(3), mt.ones(3), mt.zeros(3))
    with pytest.raises(TypeError, match="unknown dtype 'float8'"):
        mt.zeros(2, dtype="float8")
    with pytest.raises(mt.DTypeError, match="one_hot: indices must be an integer tensor"):
        mt.one_hot(mt.tensor([0.5]), 3)
    with pytest.raises(TypeError, match="add: unsupported operand type str"):
        mt.ones(2) + "a"


def test_shape_op_mistakes():
    x = mt.zeros(2, 3)
    with pytest.raises(mt.ShapeError, match=r"reshape: shape \(4, 2\) is invalid for a tensor of 6 elements \(shape \(2, 3\)\)"):
        x.reshape(4, 2)
    with pytest.raises(mt.ShapeError, match=r"expand: the expanded size 4 must match the existing size 3 at dimension 1"):
        x.expand(2, 4)
    with pytest.raises(mt.ShapeError, match=r"cat: tensors must have the same shape except in dimension 0; tensor 0 has shape \(2, 3\) and tensor 1 has shape \(2, 4\)"):
        mt.cat([x, mt.zeros(2, 4)])
    with pytest.raises(mt.ShapeError, match="stack: all tensors must have the same shape"):
        mt.stack([x, mt.zeros(3, 2)])
    with pytest.raises(IndexError, match=r"sum: dimension 2 is out of range for a tensor with 2 dimensions \(valid: -2 to 1\)"):
        x.sum(2)
    with pytest.raises(IndexError, match=r"transpose: dimension 5 is out of range for a tensor of shape \(2, 3\)"):
        x.transpose(0, 5)
    with pytest.raises(ValueError, match="permute: dims"):
        x.permute(0, 0)
    with pytest.raises(mt.ShapeError, match=r"split: sizes \[1, 1\] add up to 2 but dimension 1 has size 3"):
        x.split([1, 1], dim=1)
    with pytest.raises(mt.ShapeError, match=r"item: only one-element tensors.*shape \(2, 3\)"):
        x.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    with pytest.raises(mt.ShapeError, match=r"one_hot: indices must lie in \[0, 3\)"):
        mt.one_hot(mt.tensor([0, 3]), 3)


def test_indexing_mistakes():
    x = mt.zeros(2, 3)
    with pytest.raises(IndexError, match=r"getitem: index 5 is out of bounds.*tensor of shape \(2, 3\) with \[5, \.\.\.\]"):
        x[5]
    with pytest.raises(IndexError, match=r"getitem: .*shape \(2, 3\)"):
        x[mt.tensor([0, 7])]
    with pytest.raises(TypeError, match="unsupported index"):
        x[{"a": 1}]


def test_numpy_conversion_rules():
    w = mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
        w.cpu().numpy()
    np.testing.assert_array_equal(np.asarray(w.detach().cpu()), [1, 1])
    with pytest.raises(mt.ShapeError, match="ragged"):
        mt.tensor([[1, 2], [3]])


@pytest.mark.parametrize("make, message", [
    (lambda: mt.randn(2.5, 3), r"randn: sizes must be ints, got float 2.5 at position 0 of size \(2.5, 3\)"),
    (lambda: mt.zeros(2.7), r"zeros: sizes must be ints, got float 2.7"),
    (lambda: mt.zeros(2.0), r"zeros: sizes must be ints, got float 2.0"),
    (lambda: mt.ones((2, 3.0)), r"ones: sizes must be ints, got float 3.0 at position 1"),
    (lambda: mt.rand(np.float64(4)), r"rand: sizes must be ints, got float64 4.0"),
    (lambda: mt.empty(True), r"empty: sizes must be ints, got bool True"),
    (lambda: mt.full(2.7, 1.0), r"full: sizes must be ints, got float 2.7"),
    (lambda: mt.full((2, 1.5), 1.0), r"full: sizes must be ints, got float 1.5"),
    (lambda: mt.linspace(0, 1, 2.5), r"linspace: sizes must be ints, got float 2.5"),
])
def test_factories_refuse_non_integral_sizes_instead_of_truncating(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_factories_refuse_negative_sizes_and_accept_integer_types():
    with pytest.raises(ValueError, match=r"zeros: sizes must be >= 0, got -1 at position 1 of size \(2, -1\)"):
        mt.zeros(2, -1)
    assert mt.zeros(np.int64(3), np.int32(2)).shape == (3, 2)
    assert mt.randn([2, mt.tensor(3)]).shape == (2, 3)  # 0-d integer tensors index like ints, as in PyTorch
    assert mt.full(3, 1.0).shape == (3,) and mt.full((), 1.0).shape == ()
    assert mt.zeros(()).shape == () and mt.ones(0).shape == (0,)


def test_var_with_correction_beyond_the_sample_size_is_inf_with_a_warning_as_in_pytorch():
    x = mt.tensor([1.0, 2.0, 4.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"var: correction=4 leaves no degrees of freedom for 3 element\(s\)"):
        v = x.var(correction=4)  # was (sum of squares) / (3 - 4): a negative variance
    assert v.item() == np.inf
    v.backward()
    assert np.array_equal(x.grad.cpu().numpy(), [-np.inf, -np.inf, np.inf])
    with pytest.warns(UserWarning, match="no degrees of freedom"):
        assert x.var(correction=3).item() == np.inf  # n - correction = 0: PyTorch's inf, not a ZeroDivisionError
    with pytest.warns(UserWarning, match="std: correction=2"):
        assert np.isnan(mt.tensor([[3.0, 3.0]]).std(1, correction=2).item())  # 0 / 0, as in PyTorch
    with pytest.warns(UserWarning, match="for 2 element"):
        assert mt.tensor([[1.0, 2.0], [3.0, 5.0]]).var(1, correction=2).tolist() == [np.inf, np.inf]
    assert x.var(correction=2).item() == pytest.approx(14 / 3)  # one degree of freedom left: fine
    with pytest.raises(TypeError, match="var: correction must be a number"):
        x.var(correction="1")
