"""fit, evaluate and predict work on a device whose arrays refuse implicit conversion to NumPy (the strict test device)."""

import minigrad.nn as nn
import minigrad.optim as optim
import minigrad.tensor as mt
from minigrad.testing.strict_backend import StrictArray, register
from minigrad.training import evaluate, fit, predict


def test_fit_evaluate_and_predict_on_the_strict_device():
    dev = register()
    mt.manual_seed(0)
    x = mt.randn(32, 4, device=dev)
    y = (x[:, 0] > 0).long()
    batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8)]
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(dev)
    fit(model, optim.SGD(model.parameters(), lr=0.5), batches, nn.functional.cross_entropy, 3, progress=False)
    loss, accuracy = evaluate(model, batches, nn.functional.cross_entropy)
    assert 0.0 <= accuracy <= 1.0 and loss == loss
    assert all(type(p._data) is StrictArray for p in model.parameters())
    assert predict(model, batches).tolist() == model(x).argmax(dim=-1).tolist()
