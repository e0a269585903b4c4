"""Module hooks behave as PyTorch's: a table of cases, each run on minigrad and, when torch imports, on torch.

Each case builds the same modules with the framework it is given and returns
what it recorded as plain Python values (call orders, numbers); the two
records must be equal.
"""

import numpy as np
import pytest

import minigrad.nn as mnn
import minigrad.tensor as mt
from minigrad.nn.modules import module as mg_module_paths

W = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]
B = [0.1, -0.2]
X = [[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]]


class Minigrad:
    nn = mnn
    paths = mg_module_paths
    no_grad = staticmethod(mt.no_grad)

    @staticmethod
    def tensor(data, requires_grad=False):
        return mt.tensor(data, dtype=mt.float64, requires_grad=requires_grad)


class Torch:
    def __init__(self, torch):
        self.torch = torch
        self.nn = torch.nn
        self.paths = torch.nn.modules.module
        self.no_grad = torch.no_grad

    def tensor(self, data, requires_grad=False):
        return self.torch.tensor(data, dtype=self.torch.float64, requires_grad=requires_grad)


def values(t):
    return None if t is None else np.round(t.detach().cpu().numpy().astype(np.float64), 12).tolist()


def linear(fw):
    lin = fw.nn.Linear(3, 2)
    lin.to(fw.tensor(0.0).dtype)
    with fw.no_grad():
        lin.weight.copy_(fw.tensor(W))
        lin.bias.copy_(fw.tensor(B))
    return lin


def model(fw):
    return fw.nn.Sequential(linear(fw), fw.nn.ReLU())


# ----------------------------------------------------------------------------------------- the cases


def order_of_global_and_module_hooks(fw):
    calls = []
    net = model(fw)
    handles = [
        fw.paths.register_module_forward_pre_hook(lambda m, a: calls.append(("global pre", type(m).__name__))),
        fw.paths.register_module_forward_hook(lambda m, a, o: calls.append(("global post", type(m).__name__))),
        net.register_forward_pre_hook(lambda m, a: calls.append(("pre", type(m).__name__))),
        net.register_forward_hook(lambda m, a, o: calls.append(("post", type(m).__name__))),
        net[0].register_forward_pre_hook(lambda m, a: calls.append(("pre", type(m).__name__))),
        net[0].register_forward_hook(lambda m, a, o: calls.append(("post", type(m).__name__))),
    ]
    try:
        net(fw.tensor(X))
    finally:
        for h in handles:
            h.remove()
    return calls


def forward_hook_replaces_the_output(fw):
    lin = linear(fw)
    seen = []
    lin.register_forward_hook(lambda m, a, o: seen.append(values(o)))
    lin.register_forward_hook(lambda m, a, o: o * 2.0)
    lin.register_forward_hook(lambda m, a, o: seen.append(values(o)))  # later hooks see the replacement
    return seen, values(lin(fw.tensor(X)))


def pre_hook_replaces_the_input(fw):
    lin = linear(fw)
    lin.register_forward_pre_hook(lambda m, a: a[0] + 1.0)  # not a tuple: wrapped in one
    lin.register_forward_pre_hook(lambda m, a: (a[0] * 2.0,))
    seen = []
    lin.register_forward_hook(lambda m, a, o: seen.append((len(a), values(a[0]))))
    return values(lin(fw.tensor(X))), seen


def removal_through_the_handle(fw):
    lin = linear(fw)
    calls = []
    first = lin.register_forward_hook(lambda m, a, o: calls.append("first"))
    lin.register_forward_hook(lambda m, a, o: calls.append("second"))
    glob = fw.paths.register_module_forward_pre_hook(lambda m, a: calls.append("global"))
    lin(fw.tensor(X))
    first.remove()
    glob.remove()
    first.remove()  # twice is fine
    lin(fw.tensor(X))
    return calls


def hooks_on_a_module_called_twice(fw):
    lin = linear(fw)
    calls = []
    lin.register_forward_pre_hook(lambda m, a: calls.append(("pre", values(a[0]))))
    lin.register_forward_hook(lambda m, a, o: calls.append(("post", values(o))))
    net = fw.nn.Sequential(lin, fw.nn.ReLU(), fw.nn.Linear(2, 3).to(fw.tensor(0.0).dtype))
    with fw.no_grad():
        net[2].weight.copy_(fw.tensor(np.array(W).T.tolist()))
        net[2].bias.zero_()
    lin(net(fw.tensor(X))[:, :3])
    return calls


def backward_hook_sees_grad_input_and_grad_output(fw):
    lin = linear(fw)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(([values(g) for g in gi], [values(g) for g in go])))
    x = fw.tensor(X, requires_grad=True)
    y = lin(x)
    (y * fw.tensor([[1.0, 2.0], [3.0, -1.0]])).sum().backward()
    return seen, values(x.grad), values(lin.weight.grad)


def backward_hook_of_a_first_layer_sees_no_input_gradient(fw):
    lin = linear(fw)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(([values(g) for g in gi], [values(g) for g in go])))
    (lin(fw.tensor(X)) ** 2).sum().backward()
    return seen, values(lin.bias.grad)


def backward_hook_replaces_grad_input(fw):
    net = model(fw)
    net[1].register_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g * 0.5 for g in gi))
    x = fw.tensor(X, requires_grad=True)
    net(x).sum().backward()
    return values(x.grad), values(net[0].weight.grad)


def backward_hooks_on_a_module_called_twice(fw):
    lin = fw.nn.Linear(2, 2).to(fw.tensor(0.0).dtype)
    with fw.no_grad():
        lin.weight.copy_(fw.tensor([[1.0, 2.0], [-1.0, 0.5]]))
        lin.bias.zero_()
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((values(gi[0]), values(go[0]))))
    x = fw.tensor([[1.0, -2.0]], requires_grad=True)
    lin(lin(x)).sum().backward()
    return seen, values(x.grad)


def always_called_forward_hook_runs_when_forward_raises(fw):
    calls = []

    class Broken(fw.nn.Module):
        def forward(self, x):
            raise ValueError("broken")

    net = Broken()
    net.register_forward_hook(lambda m, a, o: calls.append(("always", o is None)), always_call=True)
    net.register_forward_hook(lambda m, a, o: calls.append("normal"))
    with pytest.raises(ValueError, match="broken"):
        net(fw.tensor(X))
    return calls


def registration_hooks_see_parameters_and_buffers(fw):
    calls = []
    handles = [
        fw.paths.register_module_parameter_registration_hook(lambda m, n, p: calls.append(("param", n, tuple(p.shape)))),
        fw.paths.register_module_buffer_registration_hook(lambda m, n, b: calls.append(("buffer", n))),
    ]
    try:
        fw.nn.Linear(3, 2)
        fw.nn.BatchNorm1d(4)
    finally:
        for h in handles:
            h.remove()
    fw.nn.Linear(3, 2)  # removed: nothing more
    return calls


CASES = [order_of_global_and_module_hooks, forward_hook_replaces_the_output, pre_hook_replaces_the_input,
         removal_through_the_handle, hooks_on_a_module_called_twice, backward_hook_sees_grad_input_and_grad_output,
         backward_hook_of_a_first_layer_sees_no_input_gradient, backward_hook_replaces_grad_input,
         backward_hooks_on_a_module_called_twice, always_called_forward_hook_runs_when_forward_raises,
         registration_hooks_see_parameters_and_buffers]

# what minigrad must record, written out (so the table is checked without torch too)
EXPECTED = {
    "order_of_global_and_module_hooks": [
        ("global pre", "Sequential"), ("pre", "Sequential"), ("global pre", "Linear"), ("pre", "Linear"),
        ("global post", "Linear"), ("post", "Linear"), ("global pre", "ReLU"), ("global post", "ReLU"),
        ("global post", "Sequential"), ("post", "Sequential")],
    "removal_through_the_handle": ["global", "first", "second", "second"],
    "always_called_forward_hook_runs_when_forward_raises": [("always", True)],
    "registration_hooks_see_parameters_and_buffers": [
        ("param", "weight", (2, 3)), ("param", "bias", (2,)), ("param", "weight", (4,)), ("param", "bias", (4,)),
        ("buffer", "running_mean"), ("buffer", "running_var"), ("buffer", "num_batches_tracked")],
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_module_hooks_on_minigrad(case):
    record = case(Minigrad)
    if case.__name__ in EXPECTED:
        assert record == EXPECTED[case.__name__]


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch's note on a first layer
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_module_hooks_match_pytorch(case, torch):
    assert case(Minigrad) == case(Torch(torch))


def test_hook_values_are_what_the_maths_says():
    """Spot values without torch: the backward hook's gradients of y = x W^T + b, weighted by G."""
    (seen, x_grad, w_grad) = backward_hook_sees_grad_input_and_grad_output(Minigrad)
    G = np.array([[1.0, 2.0], [3.0, -1.0]])
    assert seen == [([(G @ np.array(W)).tolist()], [G.tolist()])]
    assert x_grad == (G @ np.array(W)).tolist() and w_grad == (G.T @ np.array(X)).tolist()
    out, _ = pre_hook_replaces_the_input(Minigrad)
    np.testing.assert_allclose(out, ((np.array(X) + 1) * 2) @ np.array(W).T + B)


def test_a_module_without_hooks_goes_back_to_the_plain_call():
    lin = mnn.Linear(3, 2)
    handle = lin.register_forward_hook(lambda m, a, o: None)
    assert lin._hooks is not None
    handle.remove()
    assert lin._hooks is None


def test_hooks_must_be_callable():
    with pytest.raises(TypeError, match="callable"):
        mnn.Linear(2, 2).register_forward_hook(3)
    with pytest.raises(TypeError, match="callable"):
        mg_module_paths.register_module_forward_hook("no")


def test_replacing_the_gradients_of_several_inputs_is_refused():
    class Add(mnn.Module):
        def forward(self, a, b):
            return a + b

    m = Add()
    m.register_full_backward_hook(lambda mod, gi, go: tuple(g * 2.0 for g in gi))
    a, b = mt.ones(2, requires_grad=True), mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="one tensor input"):
        m(a, b).sum().backward()
