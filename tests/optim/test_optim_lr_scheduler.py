"""Learning-rate schedulers: the same values as torch.optim.lr_scheduler over 50 steps, state, errors."""

import copy
import math
import types
import warnings

import pytest

import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.optim import lr_scheduler, lr_scheduler_extras

# minigrad's schedules in one namespace, as torch.optim.lr_scheduler holds them all
mls = types.SimpleNamespace(**{name: getattr(module, name)
                               for module in (lr_scheduler, lr_scheduler_extras) for name in module.__all__})

STEPS = 50
LRS = (0.1, 0.03)


def mg_optimizer(cls=optim.SGD):
    a, b = mt.tensor([1.0], requires_grad=True), mt.tensor([1.0], requires_grad=True)
    return cls([{"params": [a], "lr": LRS[0]}, {"params": [b], "lr": LRS[1]}], lr=LRS[0])


def torch_optimizer(torch):
    a, b = torch.tensor([1.0], requires_grad=True), torch.tensor([1.0], requires_grad=True)
    return torch.optim.SGD([{"params": [a], "lr": LRS[0]}, {"params": [b], "lr": LRS[1]}], lr=LRS[0])


# Each case builds a scheduler from a module (minigrad's or torch's) and an optimizer.
CASES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "StepLR-step1": lambda m, o: m.StepLR(o, step_size=1, gamma=0.9),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 30], gamma=0.3),
    "MultiStepLR-repeated": lambda m, o: m.MultiStepLR(o, milestones=[10, 10, 25], gamma=0.5),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=50),
    "CosineAnnealingLR-restart": lambda m, o: m.CosineAnnealingLR(o, T_max=20, eta_min=0.001),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, total_iters=10),
    "LinearLR-decay": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.2, total_iters=30),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda step: 1 / (1 + 0.1 * step)),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, [lambda s: 0.9**s, lambda s: 1 + (s % 5)]),
    "SequentialLR-warmup-cosine": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=45, eta_min=1e-4)],
        milestones=[5]),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o, [m.ExponentialLR(o, gamma=0.9), m.StepLR(o, step_size=4, gamma=0.5), m.LinearLR(o, 0.5, 1.0, 8)],
        milestones=[10, 25]),
    "SequentialLR-constant-then-linear": lambda m, o: m.SequentialLR(
        o, [m.LambdaLR(o, lambda s: 1.0), m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=20)],
        milestones=[15]),
}


def lr_history(scheduler, optimizer, steps=STEPS):
    values = [scheduler.get_last_lr()]
    assert [g["lr"] for g in optimizer.param_groups] == values[0]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        values.append(scheduler.get_last_lr())
        assert [g["lr"] for g in optimizer.param_groups] == values[-1]
    return values


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_over_50_steps(name):
    torch = pytest.importorskip("torch")
    import torch.optim.lr_scheduler as tls

    opt = mg_optimizer()
    mine = lr_history(CASES[name](mls, opt), opt)
    topt = torch_optimizer(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = lr_history(CASES[name](tls, topt), topt)
    for step, (a, b) in enumerate(zip(mine, theirs)):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-15), f"step {step}"


def test_formulas_by_hand():
    opt = mg_optimizer()
    s = mls.StepLR(opt, step_size=3, gamma=0.5)
    values = [s.get_last_lr()[0]] + [(s.step(), s.get_last_lr()[0])[1] for _ in range(7)]
    assert values == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])

    opt = mg_optimizer()
    s = mls.CosineAnnealingLR(opt, T_max=4, eta_min=0.02)
    got = [s.get_last_lr()[0]] + [(s.step(), s.get_last_lr()[0])[1] for _ in range(4)]
    want = [0.02 + 0.08 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert got == pytest.approx(want)

    opt = mg_optimizer()
    s = mls.LinearLR(opt, start_factor=0.25, total_iters=3)
    got = [s.get_last_lr()[1]] + [(s.step(), s.get_last_lr()[1])[1] for _ in range(4)]
    assert got == pytest.approx([0.03 * f for f in (0.25, 0.5, 0.75, 1.0, 1.0)])


def test_warmup_cosine_formula():
    opt = mg_optimizer()
    W, T, lo = 5, 30, 1e-3
    s = mls.warmup_cosine(opt, warmup_steps=W, total_steps=T, min_lr=lo)
    assert isinstance(s, mls.LambdaLR)
    history = lr_history(s, opt, 40)
    for t, (lr0, lr1) in enumerate(history):
        for base, lr in ((LRS[0], lr0), (LRS[1], lr1)):
            if t < W:
                want = base * (t + 1) / W
            elif t <= T:
                want = lo + (base - lo) * (1 + math.cos(math.pi * (t - W) / (T - W))) / 2
            else:
                want = lo
            assert lr == pytest.approx(want, rel=1e-12), f"step {t}"
    assert history[W - 1][0] == pytest.approx(LRS[0]) and history[T][0] == pytest.approx(lo)
    # increasing during warmup, then non-increasing
    first = [h[0] for h in history]
    assert all(x < y for x, y in zip(first[:W - 1], first[1:W]))
    assert all(x >= y - 1e-15 for x, y in zip(first[W - 1:], first[W:]))


def test_warmup_cosine_without_warmup_is_cosine_annealing():
    torch = pytest.importorskip("torch")
    opt = mg_optimizer()
    mine = lr_history(mls.warmup_cosine(opt, 0, 30, min_lr=0.001), opt, 30)
    topt = torch_optimizer(torch)
    theirs = lr_history(torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=30, eta_min=0.001), topt, 30)
    for a, b in zip(mine, theirs):
        assert a == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "CosineAnnealingLR-restart", "LinearLR",
                                  "SequentialLR-warmup-cosine", "SequentialLR-three"])
def test_state_dict_round_trip_continues_identically(name):
    opt = mg_optimizer()
    sched = CASES[name](mls, opt)
    reference = lr_history(sched, opt, 40)

    opt1 = mg_optimizer()
    sched1 = CASES[name](mls, opt1)
    lr_history(sched1, opt1, 17)
    saved_opt, saved_sched = copy.deepcopy(opt1.state_dict()), copy.deepcopy(sched1.state_dict())
    assert "optimizer" not in saved_sched

    opt2 = mg_optimizer()
    sched2 = CASES[name](mls, opt2)  # create the scheduler first, then load both (as in PyTorch)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    assert sched2.get_last_lr() == reference[17]
    rest = lr_history(sched2, opt2, 23)
    assert rest == reference[17:]


def test_warmup_cosine_state_dict_keeps_its_factors():
    opt = mg_optimizer()
    sched = mls.warmup_cosine(opt, 3, 20)
    for _ in range(5):
        sched.step()
    sd = sched.state_dict()
    assert sd["lr_lambdas"][0]["warmup_steps"] == 3 and sd["last_epoch"] == 5


def test_lambda_functions_are_not_saved():
    opt = mg_optimizer()
    sd = mls.LambdaLR(opt, lambda s: 0.5).state_dict()
    assert sd["lr_lambdas"] == [None, None]


def test_resume_with_last_epoch():
    opt = mg_optimizer()
    s = mls.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        s.step()
    s2 = mls.ExponentialLR(opt, gamma=0.5, last_epoch=3)
    assert s2.last_epoch == 4 and s2.get_last_lr() == pytest.approx([0.1 * 0.5**4, 0.03 * 0.5**4])
    with pytest.raises(KeyError, match="no 'initial_lr'"):
        mls.StepLR(mg_optimizer(), step_size=2, last_epoch=5)


def test_works_with_every_optimizer():
    for cls in (optim.Adam, optim.AdamW, optim.RMSprop):
        opt = mg_optimizer(cls)
        s = mls.StepLR(opt, 2)
        s.step()
        s.step()
        assert s.get_last_lr() == pytest.approx([0.01, 0.003])


@pytest.mark.parametrize("make, message", [
    (lambda o: mls.StepLR(o, step_size=0), r"StepLR: invalid step_size=0"),
    (lambda o: mls.StepLR(o, step_size=2.5), r"StepLR: invalid step_size=2.5"),
    (lambda o: mls.MultiStepLR(o, milestones=[5, 3]), r"MultiStepLR: milestones must be increasing"),
    (lambda o: mls.ExponentialLR(o, gamma=-0.1), r"ExponentialLR: invalid gamma=-0.1"),
    (lambda o: mls.CosineAnnealingLR(o, T_max=0), r"CosineAnnealingLR: invalid T_max=0"),
    (lambda o: mls.LinearLR(o, start_factor=0.0), r"LinearLR: invalid start_factor=0.0; it must be a number in \(0, 1\]"),
    (lambda o: mls.LinearLR(o, end_factor=1.5), r"LinearLR: invalid end_factor=1.5"),
    (lambda o: mls.LambdaLR(o, [lambda s: 1.0]), r"LambdaLR: got 1 lr_lambdas for an optimizer with 2 parameter groups"),
    (lambda o: mls.SequentialLR(o, [mls.StepLR(o, 2), mls.StepLR(o, 3)], milestones=[]),
     r"SequentialLR: 2 schedulers need 1 milestone"),
    (lambda o: mls.SequentialLR(o, [mls.StepLR(mg_optimizer(), 2)], milestones=[]),
     r"SequentialLR: schedulers\[0\] \(StepLR\) belongs to a different optimizer"),
    (lambda o: mls.SequentialLR(o, [], milestones=[]), r"SequentialLR: needs at least one scheduler"),
    (lambda o: mls.warmup_cosine(o, 10, 10), r"warmup_cosine: total_steps=10 must be larger than warmup_steps=10"),
    (lambda o: mls.warmup_cosine(o, 2, 10, min_lr=0.05), r"min_lr=0.05 is larger than the learning rate 0.03 of parameter group 1"),
])
def test_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make(mg_optimizer())


def test_not_an_optimizer():
    with pytest.raises(TypeError, match="StepLR: expected an optimizer"):
        mls.StepLR([mt.tensor([1.0], requires_grad=True)], 2)


def test_param_group_added_after_the_scheduler():
    opt = mg_optimizer()
    s = mls.StepLR(opt, 2)
    opt.add_param_group({"params": [mt.tensor([1.0], requires_grad=True)]})
    with pytest.raises(ValueError, match="the optimizer has 3 parameter groups but the scheduler was made for 2"):
        s.step()


@pytest.mark.parametrize("factor", [-0.5, math.nan, math.inf])
def test_a_schedule_giving_a_bad_lr_raises_at_step_and_changes_nothing(factor):
    q = mt.tensor([1.0], requires_grad=True)
    opt = optim.SGD([q], lr=0.1)
    scheduler = mls.LambdaLR(opt, lambda step: factor if step == 2 else 1.0)
    scheduler.step()
    with pytest.raises(ValueError, match=rf"LambdaLR: at step \(last_epoch\) 2 the schedule gives lr={0.1 * factor!r} "
                                         r"for parameter group 0 \(base lr 0.1\); a learning rate must be a finite"):
        scheduler.step()
    assert opt.param_groups[0]["lr"] == 0.1 and scheduler.last_epoch == 1  # nothing changed
    q.grad = mt.tensor([1.0])
    opt.step()
    assert q.tolist() == [pytest.approx(0.9)]  # the parameters never saw the bad lr


def test_a_bad_lr_at_the_first_step_raises_at_construction():
    opt = optim.SGD([mt.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match=r"LambdaLR: at step \(last_epoch\) 0 the schedule gives lr=nan"):
        mls.LambdaLR(opt, lambda step: math.nan)


def test_sequential_lr_reports_the_scheduler_that_gave_the_bad_lr():
    opt = optim.SGD([mt.tensor([1.0], requires_grad=True)], lr=0.1)
    warmup = mls.LinearLR(opt, start_factor=0.5, total_iters=2)
    broken = mls.LambdaLR(opt, lambda step: -1.0 if step >= 1 else 1.0)
    scheduler = mls.SequentialLR(opt, [warmup, broken], milestones=[2])
    scheduler.step()
    scheduler.step()  # the milestone: broken starts at its step 0 (factor 1)
    with pytest.raises(ValueError, match=r"LambdaLR: at step \(last_epoch\) 1 the schedule gives lr=-0.1"):
        scheduler.step()
    assert scheduler.last_epoch == 2 and opt.param_groups[0]["lr"] == 0.1


def test_the_compatibility_schedules_are_exported_by_optim_from_their_own_module():
    assert lr_scheduler_extras.__all__ == ["MultiStepLR", "ExponentialLR", "LinearLR", "SequentialLR"]
    for name in lr_scheduler_extras.__all__:
        assert getattr(optim, name) is getattr(lr_scheduler_extras, name)
        assert name in optim.__all__
        assert not hasattr(lr_scheduler, name)  # the chapter's module knows nothing of them


@pytest.mark.parametrize("make, steps", [
    (lambda opt: optim.ExponentialLR(opt, gamma=2.0), 1100),
    (lambda opt: optim.lr_scheduler.StepLR(opt, step_size=1, gamma=10.0), 400),
])
def test_a_schedule_that_overflows_a_float_is_refused_with_the_lr_message(make, steps):
    model = nn.Linear(2, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    scheduler = make(opt)
    with pytest.raises(ValueError, match="too large to represent.*nothing was changed"):
        for _ in range(steps):
            opt.step()
            scheduler.step()
    last = scheduler.last_epoch
    assert opt.param_groups[0]["lr"] == scheduler.get_last_lr()[0] < float("inf")
    with pytest.raises(ValueError):
        scheduler.step()
    assert scheduler.last_epoch == last
