"""Bad input gets an error that names the optimizer, the parameter and a fix."""

import math

import pytest

import minigrad.tensor as mt
from minigrad import optim


def p():
    return mt.tensor([1.0, 2.0], requires_grad=True)


@pytest.mark.parametrize("make, message", [
    (lambda: optim.SGD([p()], lr=-0.1), r"SGD: invalid lr=-0.1; it must be >= 0"),
    (lambda: optim.SGD([p()], lr=math.nan), r"SGD: invalid lr=nan; it must be a finite number"),
    (lambda: optim.SGD([p()], lr="0.1"), r"SGD: invalid lr='0.1'; it must be a finite number"),
    (lambda: optim.SGD([p()]), r"SGD: parameter group 0 does not set 'lr', which has no default; pass lr=\.\.\."),
    (lambda: optim.SGD([p()], lr=0.1, momentum=-0.9), r"SGD: invalid momentum=-0.9"),
    (lambda: optim.SGD([p()], lr=0.1, weight_decay=-1e-4), r"SGD: invalid weight_decay=-0.0001"),
    (lambda: optim.SGD([p()], lr=0.1, dampening=1.5), r"SGD: invalid dampening=1.5; it must be in \[0, 1\]"),
    (lambda: optim.SGD([p()], lr=0.1, nesterov=True), r"SGD: nesterov=True needs momentum > 0 and dampening = 0"),
    (lambda: optim.SGD([p()], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), r"SGD: nesterov=True needs"),
    (lambda: optim.Adam([p()], lr=-1e-3), r"Adam: invalid lr=-0.001"),
    (lambda: optim.Adam([p()], betas=(1.0, 0.999)), r"Adam: invalid betas\[0\]=1.0; it must be in \[0, 1\)"),
    (lambda: optim.Adam([p()], betas=(0.9, -0.1)), r"Adam: invalid betas\[1\]=-0.1; it must be in \[0, 1\)"),
    (lambda: optim.Adam([p()], betas=0.9), r"Adam: invalid betas=0.9; it must be a pair"),
    (lambda: optim.Adam([p()], eps=-1e-8), r"Adam: invalid eps=-1e-08"),
    (lambda: optim.Adam([p()], weight_decay=-0.1), r"Adam: invalid weight_decay=-0.1"),
    (lambda: optim.AdamW([p()], betas=(0.9, 1.0)), r"AdamW: invalid betas\[1\]=1.0"),
    (lambda: optim.AdamW([p()], lr=-1.0), r"AdamW: invalid lr=-1.0"),
    (lambda: optim.RMSprop([p()], alpha=1.5), r"RMSprop: invalid alpha=1.5; it must be in \[0, 1\]"),
    (lambda: optim.RMSprop([p()], eps=-1.0), r"RMSprop: invalid eps=-1.0"),
    (lambda: optim.RMSprop([p()], momentum=-0.5), r"RMSprop: invalid momentum=-0.5"),
    (lambda: optim.RMSprop([p()], lr=0.01, weight_decay=-2), r"RMSprop: invalid weight_decay=-2"),
    (lambda: optim.Adam([{"params": [p()], "lr": -5}]), r"Adam: invalid lr=-5"),
])
def test_invalid_hyperparameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop])
def test_empty_parameter_list(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: got an empty parameter list.*model.parameters\(\)"):
        cls([], lr=0.1)
    with pytest.raises(ValueError, match=rf"{cls.__name__}: got an empty parameter list"):
        cls(iter([]), lr=0.1)


def test_empty_group():
    with pytest.raises(ValueError, match=r"Adam: parameter group 1 has an empty 'params' list"):
        optim.Adam([{"params": [p()]}, {"params": []}])


@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop])
def test_parameter_that_does_not_require_grad(cls):
    frozen = mt.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=rf"{cls.__name__}: parameter 1 of parameter group 0 \(shape \(2,\), "
                                         r"float32\) does not require grad.*requires_grad=True"):
        cls([p(), frozen], lr=0.1)


def test_non_leaf_parameter():
    x = p()
    with pytest.raises(ValueError, match=r"SGD: parameter 0 of parameter group 0 .* is not a leaf: it was computed by"):
        optim.SGD([x * 2], lr=0.1)


def test_not_a_tensor():
    import numpy as np

    with pytest.raises(TypeError, match=r"Adam: can only optimize tensors, but parameter 0 of parameter group 0 is a ndarray"):
        optim.Adam([np.ones(3)])


def test_single_tensor_and_set_and_dict():
    with pytest.raises(TypeError, match=r"SGD: params must be an iterable.*got a single tensor.*wrap it in a list"):
        optim.SGD(p(), lr=0.1)
    with pytest.raises(TypeError, match=r"SGD: parameters must come in an ordered collection \(a list\), not a set"):
        optim.SGD({p()}, lr=0.1)
    with pytest.raises(TypeError, match=r"SGD: params must be an iterable of parameter-group dicts; wrap the dict"):
        optim.SGD({"params": [p()]}, lr=0.1)
    with pytest.raises(TypeError, match=r"SGD: params must be an iterable of tensors or of dicts.*got int"):
        optim.SGD(3, lr=0.1)


def test_duplicate_parameter():
    a = p()
    with pytest.raises(ValueError, match=r"SGD: parameter 1 of parameter group 0 .* is listed twice"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(ValueError, match=r"SGD: some parameters of parameter group 1 are already in parameter group 0"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)


def test_group_without_params_or_mixed():
    with pytest.raises(ValueError, match=r"SGD: parameter group 0 has no 'params' entry"):
        optim.SGD([{"lr": 0.1}], lr=0.1)
    with pytest.raises(TypeError, match=r"SGD: a parameter group must be a dict"):
        optim.SGD([{"params": [p()]}, p()], lr=0.1)


def test_base_class_without_update():
    opt = optim.Optimizer([p()], {"lr": 0.1})
    opt.param_groups[0]["params"][0].grad = mt.tensor([1.0, 1.0])
    with pytest.raises(NotImplementedError, match="Optimizer does not implement _update"):
        opt.step()


@pytest.mark.parametrize("lr", [-0.1, math.nan, math.inf, "0.1"])
@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop])
def test_lr_edited_in_param_groups_is_checked_at_step(cls, lr):
    q = p()
    opt = cls([q], lr=0.01)
    opt.param_groups[0]["lr"] = lr
    q.grad = mt.tensor([1.0, 1.0])
    with pytest.raises(ValueError, match=rf"{cls.__name__}.step: parameter group 0 has lr={lr!r}; a learning rate must"):
        opt.step()
    assert q.tolist() == [1.0, 2.0]  # nothing was updated


def test_lr_edits_that_stay_valid_are_fine():
    q = p()
    opt = optim.SGD([q], lr=0.01)
    q.grad = mt.tensor([1.0, 1.0])
    for lr in (0, 1, 0.5):
        opt.param_groups[0]["lr"] = lr
        opt.step()
    assert q.tolist() == [-0.5, 0.5]
