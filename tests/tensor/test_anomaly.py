"""detect_anomaly names the op or the parameter where NaN/Inf first appears."""

import numpy as np
import pytest

import minigrad.tensor as mt
from minigrad.tensor import AnomalyError, detect_anomaly

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns about the very NaNs we provoke


def test_forward_names_the_op_that_made_a_nan():
    x = mt.tensor([1.0, -1.0, 2.0], requires_grad=True)
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        x.sqrt().sum()
    text = str(info.value)
    assert "Sqrt" in text and "turned finite inputs ((3,))" in text and "1 NaN" in text and "index (1,)" in text


def test_backward_names_the_node_that_made_a_bad_gradient():
    x = mt.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()  # forward is finite (sqrt(0) = 0) but d sqrt/dx = inf at 0
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        y.sum().backward()
    assert "backward of SqrtBackward" in str(info.value) and "Inf" in str(info.value)


def test_a_bad_parameter_is_named():
    w = mt.tensor([1.0, float("nan")], requires_grad=True)
    with detect_anomaly(names={"layer.weight": w}), pytest.raises(AnomalyError, match="parameter 'layer.weight' already contains 1 NaN"):
        (w * 2).sum()


def test_off_by_default_and_restored_after_the_block():
    x = mt.tensor([-1.0], requires_grad=True)
    assert np.isnan(x.log().detach().cpu().numpy()).all()  # no check outside the block
    with detect_anomaly():
        pass
    assert np.isnan(x.log().detach().cpu().numpy()).all()


def test_finite_training_step_passes_unchanged():
    w = mt.randn(3, 2, requires_grad=True)
    with detect_anomaly():
        loss = (mt.randn(4, 3) @ w).relu().log_softmax(-1).sum()
        loss.backward()
    assert w.grad is not None and np.isfinite(w.grad.cpu().numpy()).all()


def _blow_up(x):
    return x.exp()  # the line the forward site names


def test_forward_names_the_line_that_ran_the_op_and_the_callers_line():
    x = mt.tensor([1.0, 200.0], dtype="float32", requires_grad=True)
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        _blow_up(x)
    text = str(info.value)
    assert "Exp turned finite inputs" in text and "1 Inf" in text
    assert "test_anomaly.py" in text and "in _blow_up: return x.exp()" in text
    assert "outgrew float32 (largest input magnitude 200)" in text


def test_backward_names_the_forward_site_of_its_node():
    x = mt.tensor([0.0, 1.0], requires_grad=True)
    with detect_anomaly(), pytest.raises(AnomalyError) as info:
        y = x.sqrt()  # recorded under detect_anomaly: the node keeps this line
        y.sum().backward()
    assert "backward of SqrtBackward" in str(info.value)
    assert "Its forward was called at" in str(info.value) and "y = x.sqrt()" in str(info.value)
    y = x.sqrt()  # recorded outside: the error says the site is unknown
    with detect_anomaly(), pytest.raises(AnomalyError, match="its forward ran outside detect_anomaly"):
        y.sum().backward()
