"""The backward pass: accumulation, retain_graph, no_grad, detach, graph walking, custom Functions."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import Function
from minigrad.tensor.autograd import topological_order


def test_gradient_of_a_scalar_loss_and_accumulation_across_calls():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2, 4, 6])
    (x * 3).sum().backward()  # leaves accumulate, as in PyTorch
    np.testing.assert_allclose(x.grad.cpu().numpy(), [5, 7, 9])
    x.grad = None
    x.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [1, 1, 1])


def test_reused_tensor_sums_its_gradients():
    x = mt.tensor(2.0, requires_grad=True)
    y = x * x + x * 3 + x  # x used four times
    y.backward()
    assert x.grad.item() == pytest.approx(2 * 2 + 3 + 1)


def test_backward_with_gradient_on_a_non_scalar():
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    y.backward(gradient=mt.tensor([[1.0, 0.0], [0.5, 2.0]]))
    np.testing.assert_allclose(x.grad.cpu().numpy(), [[2, 0], [1, 4]])


def test_backward_on_a_non_scalar_without_gradient_says_what_to_do():
    x = mt.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\).*out\.sum\(\)"):
        (x * 2).backward()
    with pytest.raises(mt.ShapeError, match="gradient has shape"):
        (x * 2).backward(mt.ones(3))


def test_backward_on_something_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.ones(3).sum().backward()


def test_second_backward_raises_unless_retain_graph():
    x = mt.randn(3, 4, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"MulBackward: trying to backward through the graph a second time.*retain_graph=True"):
        y.backward()
    z = (x * x).sum()
    x.grad = None
    z.backward(retain_graph=True)
    first = x.grad.cpu().numpy().copy()
    z.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * first)


def test_second_backward_through_nodes_without_saved_tensors_works_like_pytorch():
    x = mt.ones(3, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2, 2, 2])


def test_no_grad_and_enable_grad():
    x = mt.ones(3, requires_grad=True)
    with mt.no_grad():
        y = x * 2
        assert not mt.is_grad_enabled()
        with mt.enable_grad():
            z = x * 2
    assert mt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert z.requires_grad and z.grad_fn is not None

    @mt.no_grad()
    def evaluate(t):
        return t * 3

    assert not evaluate(x).requires_grad
    with mt.set_grad_enabled(False):
        assert not (x + 1).requires_grad


def test_detach_shares_data_and_version_but_leaves_the_graph():
    x = mt.randn(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert mt.shares_memory(d, y) and d._version_counter is y._version_counter
    loss = (y * d).sum()  # d is a constant: d(loss)/dx = 2 * d
    loss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * d.cpu().numpy())


def test_requires_grad_rules():
    with pytest.raises(mt.DTypeError, match="only floating point"):
        mt.tensor([1, 2], requires_grad=True)
    y = mt.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    x = mt.zeros(2)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf


def test_retain_grad_keeps_intermediate_gradients():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.cpu().numpy(), 2 * h.detach().cpu().numpy())
    assert (h * 1).grad is None


def test_gradients_never_share_memory_between_leaves():
    a = mt.ones(3, requires_grad=True)
    b = mt.ones(3, requires_grad=True)
    (a + b).sum().backward()  # Add passes the very same array to both inputs
    assert not mt.shares_memory(a.grad, b.grad)
    a.grad += 1
    np.testing.assert_allclose(b.grad.cpu().numpy(), [1, 1, 1])


def test_gradient_of_a_transposed_weight_is_usable():
    w = mt.randn(4, 3, requires_grad=True)
    x = mt.randn(5, 3)
    (x @ w.T).sum().backward()
    assert w.grad.shape == (4, 3)
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.ones((5, 4)).T @ x.cpu().numpy(), rtol=1e-5)
    w.grad.zero_()  # grads are writeable
    assert float(w.grad.abs().sum()) == 0


def test_graph_can_be_walked_like_pytorch():
    w = mt.randn(3, 2, requires_grad=True)
    b = mt.zeros(2, requires_grad=True)
    x = mt.randn(4, 3)
    loss = (x @ w + b).relu().sum()
    node = loss.grad_fn
    assert node.name == "SumBackward"
    (relu, _), = node.next_functions
    assert relu.name == "ReluBackward" and relu.output_shape == (4, 2)
    (add, _), = relu.next_functions
    (mm, _), (acc_b, _) = add.next_functions
    assert mm.name == "MatmulBackward" and acc_b.name == "AccumulateGrad" and acc_b.variable is b
    (const, _), (acc_w, _) = mm.next_functions
    assert const is None and acc_w.variable is w  # x does not require grad
    assert mm.needs_input_grad == (False, True)
    order = topological_order(node)
    names = [n.name for n in order]
    assert names[-1] == "SumBackward" and set(names) >= {"AccumulateGrad", "MatmulBackward", "AddBackward"}
    for i, n in enumerate(order):  # every node after the nodes it was computed from
        for parent, _ in n.next_functions:
            if parent is not None:
                assert order.index(parent) < i
    assert len(mm.saved_tensors) == 2


def test_the_same_leaf_has_one_accumulate_node():
    w = mt.randn(2, requires_grad=True)
    y = w * w
    (p1, _), (p2, _) = y.grad_fn.next_functions
    assert p1 is p2 and p1.variable is w


def test_deep_graphs_do_not_hit_the_recursion_limit():
    x = mt.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001**5000, rel=1e-3)


def test_custom_function():
    class Cube(Function):
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a**3

        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return 3 * a**2 * grad

    x = mt.tensor([1.0, -2.0], dtype=mt.float64, requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name == "CubeBackward" and y.grad_fn.op == "cube"
    assert mt.gradcheck(Cube.apply, [x])


def test_custom_function_mistakes_get_clear_errors():
    class WrongShape(Function):
        def forward(ctx, a):
            return a.sum()

        def backward(ctx, grad):
            return grad  # forgot to broadcast back to the input shape

    class TooMany(Function):
        def forward(ctx, a):
            return a * 2

        def backward(ctx, grad):
            return grad, grad

    x = mt.ones(3, requires_grad=True)
    with pytest.raises(mt.ShapeError, match=r"WrongShapeBackward: backward returned a gradient of shape \(\) for an input of shape \(3,\)"):
        WrongShape.apply(x).backward()
    with pytest.raises(RuntimeError, match="returned 2 gradients but forward had 1 inputs"):
        TooMany.apply(x).sum().backward()


def test_gradcheck_catches_a_wrong_backward_and_names_the_element():
    class BadSquare(Function):
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * a  # should be 2 * a

    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=mt.float64, requires_grad=True)
    result = mt.gradcheck(BadSquare.apply, [x], raise_exception=False)
    assert not result and result.input_index == 0 and result.checked == 4
    assert result.analytic == pytest.approx(result.numeric / 2, rel=1e-6)  # the bug: half the gradient
    assert "MISMATCH" in str(result) and str(result.element) in str(result)
    with pytest.raises(mt.GradcheckError, match=r"worst is input 0 at \(\d, \d\): backward gives"):
        mt.gradcheck(BadSquare.apply, [x])
    with pytest.raises(ValueError, match="no input has requires_grad"):
        mt.gradcheck(lambda a: a * 2, [mt.ones(2)])


def test_gradcheck_leaves_inputs_and_grads_untouched():
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    x.grad = mt.tensor([5.0, 5.0], dtype=mt.float64)
    before = x.cpu().numpy().copy() if not x.requires_grad else x.detach().cpu().numpy().copy()
    assert mt.gradcheck(lambda a: (a * a).sum(), [x])
    np.testing.assert_array_equal(x.detach().cpu().numpy(), before)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [5.0, 5.0])


def test_ops_on_tensors_that_do_not_require_grad_build_no_graph():
    x = mt.ones(3)
    y = (x * 2).exp().sum()
    assert y.grad_fn is None and not y.requires_grad


def test_saved_tensors_are_released_after_backward():
    x = mt.randn(100, requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    y.sum().backward()
    assert node._saved is None
