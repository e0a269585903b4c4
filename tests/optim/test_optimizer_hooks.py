"""Optimizer step hooks behave as PyTorch's (order, arguments, replacement, removal), cross-checked when torch imports."""

import numpy as np
import pytest

import minigrad.optim as moptim
import minigrad.tensor as mt
from minigrad.optim import optimizer as mg_optimizer
from minigrad.optim import update_kernels


class Minigrad:
    optim = moptim
    paths = mg_optimizer

    @staticmethod
    def param(data):
        return mt.tensor(data, dtype=mt.float64, requires_grad=True)


class Torch:
    def __init__(self, torch):
        import torch.optim.optimizer as paths

        self.torch, self.optim, self.paths = torch, torch.optim, paths

    def param(self, data):
        return self.torch.tensor(data, dtype=self.torch.float64, requires_grad=True)


def sgd_with_a_gradient(fw):
    p = fw.param([1.0, -2.0, 3.0])
    (p * p).sum().backward()
    return p, fw.optim.SGD([p], lr=0.1)


def values(p):
    return np.round(p.detach().cpu().numpy(), 12).tolist()


def order_of_global_and_own_hooks(fw):
    p, opt = sgd_with_a_gradient(fw)
    calls = []
    handles = [
        fw.paths.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global pre", values(p)))),
        fw.paths.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global post", values(p)))),
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", values(p)))),
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post", values(p)))),
    ]
    try:
        opt.step()
    finally:
        for h in handles:
            h.remove()
    return calls


def hooks_see_the_arguments_of_step(fw):
    p, opt = sgd_with_a_gradient(fw)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append((o is opt, len(a), sorted(k))))
    opt.register_step_post_hook(lambda o, a, k: seen.append((o is opt, len(a), sorted(k))))
    opt.step()

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    return seen, round(float(loss.item()), 12), values(p)


def a_pre_hook_replaces_the_arguments(fw):
    p, opt = sgd_with_a_gradient(fw)
    calls = []

    def closure():
        calls.append("closure")
        return p.sum()

    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure}))
    loss = opt.step()
    return calls, round(float(loss.item()), 12)


def removal_through_the_handle(fw):
    p, opt = sgd_with_a_gradient(fw)
    calls = []
    own = opt.register_step_pre_hook(lambda o, a, k: calls.append("own"))
    glob = fw.paths.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global"))
    opt.step()
    own.remove()
    glob.remove()
    own.remove()
    opt.step()
    return calls, values(p)


def hooks_run_at_every_step(fw):
    p, opt = sgd_with_a_gradient(fw)
    steps = []
    opt.register_step_post_hook(lambda o, a, k: steps.append(values(p)))
    for _ in range(3):
        opt.step()
    return steps


CASES = [order_of_global_and_own_hooks, hooks_see_the_arguments_of_step, a_pre_hook_replaces_the_arguments,
         removal_through_the_handle, hooks_run_at_every_step]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_step_hooks_match_pytorch(case):
    torch = pytest.importorskip("torch")
    assert case(Minigrad) == case(Torch(torch))


def test_step_hooks_order_and_removal_without_torch():
    before, after = [1.0, -2.0, 3.0], [0.8, -1.6, 2.4]
    assert order_of_global_and_own_hooks(Minigrad) == [
        ("global pre", before), ("pre", before), ("post", after), ("global post", after)]
    assert removal_through_the_handle(Minigrad)[0] == ["own", "global"]
    assert a_pre_hook_replaces_the_arguments(Minigrad)[0] == ["closure"]


def test_an_always_called_post_hook_runs_when_the_step_raises():
    p, opt = sgd_with_a_gradient(Minigrad)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append("always"), always_call=True)
    opt.register_step_post_hook(lambda o, a, k: calls.append("normal"))
    opt.param_groups[0]["lr"] = float("nan")
    with pytest.raises(ValueError, match="lr"):
        opt.step()
    assert calls == ["always"]


def test_a_bad_pre_hook_result_is_refused():
    p, opt = sgd_with_a_gradient(Minigrad)
    opt.register_step_pre_hook(lambda o, a, k: "nonsense")
    with pytest.raises(RuntimeError, match="new_args, new_kwargs"):
        opt.step()


def test_update_and_state_init_hooks_say_which_rule_ran_on_which_parameter():
    p = Minigrad.param([1.0, 2.0])
    (p * p).sum().backward()
    opt = moptim.Adam([p], lr=0.1)
    updates, states = [], []
    with update_kernels.register_update_hook(lambda name, param, arrays, hyper: updates.append(
            (name, param is p, len(arrays), hyper["step"]))), \
            mg_optimizer.register_state_init_hook(lambda o, param, array: states.append((o is opt, param is p,
                                                                                       array.shape))):
        opt.step()
        opt.step()
    opt.step()  # removed: nothing more
    assert updates == [("adam", True, 5, 1), ("adam", True, 5, 2)]
    assert states == [(True, True, (2,)), (True, True, (2,))]  # the two moments, made once
