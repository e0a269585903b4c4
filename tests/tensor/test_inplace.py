"""In-place ops and version counters: what they change, and when autograd refuses them."""

import numpy as np
import pytest

import minigrad.tensor as mt


def test_inplace_ops_write_into_memory_and_bump_the_shared_version():
    x = mt.zeros(2, 3)
    v = x[0]  # a view
    t = x.T
    assert x._version == v._version == t._version == 0
    x.add_(1)
    x.mul_(mt.tensor([1.0, 2.0, 3.0]))
    x += 1
    x -= mt.ones(3)
    x *= 2
    x /= 2
    x.sub_(1, alpha=2)
    assert x._version == v._version == t._version == 7
    np.testing.assert_allclose(v.cpu().numpy(), [-1, 0, 1])
    v.zero_()
    np.testing.assert_allclose(x.cpu().numpy(), [[0, 0, 0], [-1, 0, 1]])
    x[1, 1:] = mt.tensor([7.0, 8.0])
    x[0] = 5
    np.testing.assert_allclose(t.cpu().numpy(), [[5, -1], [5, 7], [5, 8]])
    x.fill_(2)
    x.copy_(mt.tensor([[1.0], [2.0]]))
    np.testing.assert_allclose(x.cpu().numpy(), [[1, 1, 1], [2, 2, 2]])
    assert x._version == 12
    assert x.detach()._version_counter is x._version_counter
    assert x.data._version_counter is not x._version_counter  # .data is the untracked way


def test_modifying_a_saved_tensor_is_caught_at_backward_time():
    a = mt.randn(3, 4, requires_grad=True)
    h = a * 2  # a non-leaf, saved by the next Mul
    y = h * a
    h.add_(1)
    with pytest.raises(
        RuntimeError,
        match=r"one of the tensors needed for gradient computation \(saved by MulBackward, shape \(3, 4\)\) "
        r"was modified by an in-place operation: version 1, expected 0",
    ):
        y.sum().backward()


def test_modifying_a_saved_tensor_through_a_view_is_caught():
    w = mt.randn(5, 3)
    x = mt.randn(4, 3, requires_grad=True)
    y = x @ w.T  # matmul saves w.T, a view of w
    w[0, 0] = 100.0  # under no recording: w does not require grad
    with pytest.raises(RuntimeError, match=r"saved by MatmulBackward, shape \(3, 5\)\) was modified.*version 1, expected 0"):
        y.sum().backward()


def test_saved_output_modified_in_place_is_caught():
    x = mt.randn(5, requires_grad=True)
    y = x.exp()  # saves its output
    y.mul_(2)
    with pytest.raises(RuntimeError, match="saved by ExpBackward"):
        y.sum().backward()


def test_inplace_on_a_leaf_that_requires_grad_is_refused_outside_no_grad():
    w = mt.ones(3, requires_grad=True)
    for op in (lambda: w.add_(1), lambda: w.mul_(2), lambda: w.zero_(), lambda: w.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match=r"a leaf tensor that requires grad \(shape \(3,\)\).*no_grad"):
            op()
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w += 1
    with mt.no_grad():
        w -= 0.5
        w[0] = 2.0
    np.testing.assert_allclose(w.detach().cpu().numpy(), [2, 0.5, 0.5])
    assert w.requires_grad and w.is_leaf and w._version == 2


def test_an_sgd_step_under_no_grad():
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with mt.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
    np.testing.assert_allclose(w.detach().cpu().numpy(), [0.8, 1.6])
    np.testing.assert_allclose(w.grad.cpu().numpy(), [0, 0])


def test_recorded_inplace_on_a_non_leaf_rewires_the_graph():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.add_(x)  # y = 3x
    y.mul_(y)  # y = 9x^2
    assert y.grad_fn.name == "MulBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 18 * x.detach().cpu().numpy())


def test_writing_a_tensor_that_requires_grad_into_a_plain_buffer():
    w = mt.tensor([2.0, 3.0], requires_grad=True)
    buf = mt.zeros(4)
    buf[1:3] = w * w
    assert buf.requires_grad and buf.grad_fn.name == "SetItemBackward"
    (buf * mt.arange(4.0)).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), [2 * 2 * 1, 2 * 3 * 2])


def test_recorded_inplace_on_a_view_is_refused_with_a_fix():
    x = mt.randn(3, 4, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match=r"view of another tensor.*clone"):
        x[0].add_(1)
    with pytest.raises(RuntimeError, match="view"):
        x.T.mul_(2)


def test_inplace_errors_name_the_problem():
    x = mt.zeros(2, 3)
    with pytest.raises(mt.ShapeError, match=r"add_: an in-place op cannot change the tensor's shape \(2, 3\)"):
        x.add_(mt.ones(4, 3))
    i = mt.zeros(3, dtype=mt.int64)
    with pytest.raises(mt.DTypeError, match="int64"):
        i.add_(0.5)
    e = mt.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="expanded"):
        e.add_(1)
    with pytest.raises(IndexError, match=r"setitem: .*shape \(2, 3\)"):
        x[5] = 1.0


# --------------------------------------------------------------------------- saved arrays that are views


def _channels_last(x):
    return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


@pytest.mark.parametrize(
    "make_input",
    [
        lambda: mt.randn(2, 1, 4, 4),  # one channel: im2col of a 1x1 kernel is a view of the input
        lambda: _channels_last(mt.randn(2, 3, 4, 4)),  # channels-last: the same
        lambda: mt.randn(2, 1, 4, 4, requires_grad=True) * 1,  # a non-leaf input
    ],
    ids=["one-channel", "channels-last", "non-leaf"],
)
def test_conv_with_a_1x1_kernel_catches_its_input_modified_in_place(make_input):
    from minigrad import nn

    mt.manual_seed(0)
    x = make_input()
    conv = nn.Conv2d(x.shape[1], 2, 1)
    y = conv(x)
    if x.requires_grad:
        x = x.detach()  # same buffer and version counter, outside the graph
    x.mul_(10)
    with pytest.raises(RuntimeError, match="Conv2dFunctionBackward.*modified by an in-place operation"):
        y.sum().backward()
    assert conv.weight.grad is None  # nothing was accumulated from the stale values


def test_conv_with_a_1x1_kernel_still_gives_the_right_gradient_without_the_edit():
    from minigrad import nn

    mt.manual_seed(0)
    x = mt.randn(2, 1, 4, 4)
    conv = nn.Conv2d(1, 2, 1)
    conv(x).sum().backward()
    np.testing.assert_allclose(conv.weight.grad.cpu().numpy().ravel(), [x.sum().item()] * 2, rtol=1e-5)


@pytest.mark.parametrize("op", ["amax", "amin", "logsumexp"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_that_save_their_output_catch_it_modified_in_place(op, keepdim):
    x = mt.randn(3, 4, requires_grad=True)
    y = getattr(x.exp(), op)(1, keepdim=keepdim)
    y.mul_(10)  # recorded in place: y's buffer is the array the node saved
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    assert x.grad is None


def test_reduction_output_modified_through_detach_is_caught():
    x = mt.randn(3, 4, requires_grad=True)
    y = x.amax(1)
    y.detach().zero_()
    with pytest.raises(RuntimeError, match="AmaxBackward.*modified by an in-place operation"):
        y.sum().backward()


def test_a_saved_view_of_an_unrelated_buffer_is_not_flagged():
    x = mt.randn(3, 4, requires_grad=True)
    y = x.amax(1)
    other = mt.randn(3)
    other.mul_(2)  # another buffer: nothing to do with the graph
    y.sum().backward()
    assert x.grad is not None
