"""state_dict / load_state_dict: PyTorch's layout, round trips that continue identically, clear errors."""

import copy

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad import optim

CONFIGS = [
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (optim.Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    (optim.AdamW, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
]
IDS = [c[0].__name__ for c in CONFIGS]


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    return [mt.tensor(rng.normal(size=s), requires_grad=True) for s in [(4, 3), (3,), (2,)]]


def grads_for(step, params):
    rng = np.random.default_rng(100 + step)
    for p in params:
        p.grad = mt.tensor(rng.normal(size=p.shape))


def groups(params, cls):
    extra = {"lr": 0.02} if cls is not optim.AdamW else {"lr": 0.02, "weight_decay": 0.5}
    return [{"params": params[:2]}, {"params": params[2:], **extra}]


def train(opt, params, steps, start=0):
    for s in range(start, start + steps):
        grads_for(s, params)
        opt.step()


@pytest.mark.parametrize("cls, kwargs", CONFIGS, ids=IDS)
def test_round_trip_continues_identically(cls, kwargs):
    # an uninterrupted run: 10 steps
    ref_params = make_params()
    ref = cls(groups(ref_params, cls), **kwargs)
    train(ref, ref_params, 10)
    # interrupted after 4 steps: save, rebuild everything from scratch, load, go on
    params = make_params()
    opt = cls(groups(params, cls), **kwargs)
    train(opt, params, 4)
    saved_params = [p.detach().numpy().copy() for p in params]
    saved = copy.deepcopy(opt.state_dict())
    train(opt, params, 3, start=4)  # training on does not change the saved copy

    params2 = [mt.tensor(x, requires_grad=True) for x in saved_params]
    opt2 = cls(groups(params2, cls), **kwargs)
    opt2.load_state_dict(saved)
    train(opt2, params2, 6, start=4)
    for a, b in zip(params2, ref_params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_layout_is_pytorchs():
    params = make_params()
    opt = optim.Adam(groups(params, optim.Adam), lr=0.1)
    params[0].grad = mt.ones(4, 3, dtype=mt.float64)  # only the first parameter has state
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.02 and sd["param_groups"][0]["lr"] == 0.1
    assert list(sd["state"]) == [0]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"} and sd["state"][0]["step"] == 1
    # as in PyTorch, the state tensors are the optimizer's own
    assert sd["state"][0]["exp_avg"] is opt.state[params[0]]["exp_avg"]


def test_state_dict_layout_matches_torch():
    torch = pytest.importorskip("torch")
    params = make_params()
    tparams = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    opt = optim.SGD(groups(params, optim.SGD), lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(groups(tparams, optim.SGD), lr=0.1, momentum=0.9)
    for p, q in zip(params, tparams):
        p.grad = mt.ones(*p.shape, dtype=mt.float64)
        q.grad = torch.ones(*q.shape, dtype=torch.float64)
    opt.step()
    topt.step()
    mine, theirs = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in mine["param_groups"]] == [g["params"] for g in theirs["param_groups"]]
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for k in mine["state"]:
        np.testing.assert_array_equal(mine["state"][k]["momentum_buffer"].numpy(),
                                      theirs["state"][k]["momentum_buffer"].numpy())
    shared = set(mine["param_groups"][0]) & set(theirs["param_groups"][0])
    assert {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "params"} <= shared


def test_load_copies_state_and_restores_hyperparameters():
    params = make_params()
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    train(opt, params, 2)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 0.5
    params2 = make_params()
    opt2 = optim.SGD(params2, lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.5
    assert opt2.param_groups[0]["params"][0] is params2[0]
    buf2 = opt2.state[params2[0]]["momentum_buffer"]
    buf = opt.state[params[0]]["momentum_buffer"]
    np.testing.assert_array_equal(buf2.numpy(), buf.numpy())
    assert not mt.shares_memory(buf2, buf)  # the two optimizers do not share state


def test_load_accepts_string_indices_numpy_arrays_and_casts_to_param_dtype():
    """What a JSON/npz checkpoint gives back: "0" keys, arrays, another dtype."""
    p = mt.zeros(3, requires_grad=True)  # float32
    opt = optim.Adam([p], lr=0.1)
    sd = {
        "state": {"0": {"step": np.int64(7), "exp_avg": np.ones(3), "exp_avg_sq": mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64)}},
        "param_groups": [{"lr": 0.1, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
                          "maximize": False, "params": ["0"]}],
    }
    opt.load_state_dict(sd)
    state = opt.state[p]
    assert state["step"] == 7 and type(state["step"]) is int
    assert state["exp_avg"].dtype == np.float32 and state["exp_avg_sq"].dtype == np.float32
    p.grad = mt.ones(3)
    opt.step()
    assert opt.state[p]["step"] == 8


def test_load_scalar_parameter_state():
    p = mt.tensor(1.0, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = mt.tensor(1.0)
    opt.step()
    p2 = mt.tensor(p.item(), requires_grad=True)
    opt2 = optim.Adam([p2], lr=0.1)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    p.grad, p2.grad = mt.tensor(0.5), mt.tensor(0.5)
    opt.step()
    opt2.step()
    assert p2.item() == p.item()


def test_wrong_number_of_groups():
    params = make_params()
    sd = optim.SGD(groups(params, optim.SGD), lr=0.1).state_dict()
    opt = optim.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match=r"SGD.load_state_dict: the saved state has 2 parameter group\(s\) but this optimizer has 1"):
        opt.load_state_dict(sd)


def test_wrong_group_size():
    params = make_params()
    sd = optim.SGD(params, lr=0.1).state_dict()
    opt = optim.SGD(params[:2], lr=0.1)
    with pytest.raises(ValueError, match=r"parameter group 0 has 3 parameter\(s\) in the saved state but 2 in this optimizer"):
        opt.load_state_dict(sd)


def test_wrong_shape_leaves_the_optimizer_unchanged():
    params = make_params()
    opt = optim.Adam(params, lr=0.1)
    train(opt, params, 1)
    sd = copy.deepcopy(opt.state_dict())
    other = [mt.zeros(5, requires_grad=True, dtype=mt.float64), *params[1:]]
    opt2 = optim.Adam(other, lr=0.3)
    with pytest.raises(ValueError, match=r"state 'exp_avg' of parameter 0 has shape \(4, 3\) but the parameter has shape \(5,\)"):
        opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.3 and not opt2.state


def test_state_from_another_kind_of_optimizer():
    params = make_params()
    sd = optim.SGD(params, lr=0.1).state_dict()
    with pytest.raises(ValueError, match=r"has no 'betas'.*different kind of optimizer \(this one is Adam\)"):
        optim.Adam(params).load_state_dict(sd)


def test_not_a_state_dict():
    opt = optim.SGD(make_params(), lr=0.1)
    with pytest.raises(ValueError, match="expected a dict with 'state' and 'param_groups'"):
        opt.load_state_dict({"lr": 0.1})


def test_state_for_unknown_index():
    params = make_params()
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    train(opt, params, 1)
    sd = opt.state_dict()
    sd["state"][7] = sd["state"][0]
    with pytest.raises(ValueError, match="entry for parameter 7, which is in none of the saved parameter groups"):
        optim.SGD(params, lr=0.1, momentum=0.9).load_state_dict(sd)


def test_invalid_saved_hyperparameter_is_rejected():
    params = make_params()
    sd = optim.Adam(params).state_dict()
    sd["param_groups"][0]["betas"] = (1.5, 0.999)
    with pytest.raises(ValueError, match=r"Adam: invalid betas\[0\]=1.5"):
        optim.Adam(params).load_state_dict(sd)
