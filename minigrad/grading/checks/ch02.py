"""Graded checks for chapter 02 (exercises 2.1-2.4), on fresh random inputs each run."""

import math

import pytest

from minigrad.grading.checks._support import check_gradients
from minigrad.scalar.engine import Value

ACTIVATIONS = {
    "linear": lambda z: z,
    "relu": lambda z: max(z, 0.0),
    "tanh": math.tanh,
    "sigmoid": lambda z: 1 / (1 + math.exp(-z)),
}


# ------------------------------------------------------------- 2.1 Neuron

@pytest.mark.exercise("2.1")
def test_neuron_forward_all_activations(submission, rng):
    for activation, f in ACTIVATIONS.items():
        nin = rng.randint(1, 8)
        neuron = submission.Neuron(nin, activation, rng)
        neuron.b.data = rng.uniform(-1, 1)
        x = [rng.uniform(-2, 2) for _ in range(nin)]
        expected = f(sum(w.data * xi for w, xi in zip(neuron.w, x)) + neuron.b.data)
        out = neuron(x)
        assert isinstance(out, Value), "a neuron returns one Value"
        assert out.data == pytest.approx(expected, rel=1e-9, abs=1e-12), f"activation {activation!r}"


@pytest.mark.exercise("2.1")
def test_neuron_gradients_reach_weights_bias_and_inputs(submission, rng):
    nin = rng.randint(2, 6)
    neuron = submission.Neuron(nin, "tanh", rng)
    neuron.b.data = rng.uniform(-0.5, 0.5)
    xs = [rng.uniform(-1, 1) for _ in range(nin)]
    out = neuron([Value(x) for x in xs])
    out.backward()
    z = sum(w.data * x for w, x in zip(neuron.w, xs)) + neuron.b.data
    dz = 1 - math.tanh(z) ** 2
    for w, x in zip(neuron.w, xs):
        assert w.grad == pytest.approx(dz * x, rel=1e-9, abs=1e-12), "d out / d w_i = tanh'(z) * x_i"
    assert neuron.b.grad == pytest.approx(dz, rel=1e-9), "d out / d b = tanh'(z)"
    check_gradients(Value, lambda *x: neuron(list(x)), xs, backward=lambda out: out.backward())


# --------------------------------------------------------- 2.2 parameters

@pytest.mark.exercise("2.2")
def test_layer_parameters(submission, rng):
    nin, nout = rng.randint(1, 5), rng.randint(1, 5)
    layer = submission.Layer(nin, nout, "relu", rng)
    params = layer.parameters()
    expected = [p for n in layer.neurons for p in n.parameters()]
    assert len(params) == nout * (nin + 1), f"Layer({nin}, {nout}) has {nout * (nin + 1)} parameters"
    assert all(p is q for p, q in zip(params, expected)), "return the neurons' own Value objects, in order"


@pytest.mark.exercise("2.2")
def test_mlp_parameters(submission, rng):
    sizes = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))] + [1]
    nin = rng.randint(1, 4)
    mlp = submission.MLP(nin, sizes, seed=rng.randrange(1000))
    dims = [nin, *sizes]
    count = sum((dims[i] + 1) * dims[i + 1] for i in range(len(sizes)))
    params = mlp.parameters()
    assert len(params) == count, f"MLP({nin}, {sizes}) has {count} parameters, got {len(params)}"
    assert len({id(p) for p in params}) == count, "each parameter must appear once"
    assert all(isinstance(p, Value) for p in params)
    assert len(submission.MLP(2, [16, 16, 1]).parameters()) == 337


# --------------------------------------------------------------- 2.3 hinge

@pytest.mark.exercise("2.3")
def test_hinge_loss_value(submission, rng):
    n = rng.randint(1, 20)
    scores = [rng.uniform(-3, 3) for _ in range(n)]
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    loss = submission.hinge_loss([Value(s) for s in scores], labels)
    expected = sum(max(0.0, 1 - y * s) for s, y in zip(scores, labels)) / n
    assert loss.data == pytest.approx(expected, rel=1e-9, abs=1e-12)
    confident = submission.hinge_loss([Value(2.0), Value(-3.0)], [1.0, -1.0])
    assert confident.data == 0.0, "points beyond the margin cost nothing"


@pytest.mark.exercise("2.3")
def test_hinge_loss_gradient(submission, rng):
    n = rng.randint(2, 8)
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    # keep scores away from the kink at y*s = 1 so finite differences are valid
    scores = [y * rng.choice([rng.uniform(-2, 0.8), rng.uniform(1.2, 3)]) for y in labels]
    check_gradients(Value, lambda *s: submission.hinge_loss(list(s), labels), scores, backward=lambda out: out.backward())


# ----------------------------------------------------------------- 2.4 SGD

@pytest.mark.exercise("2.4")
def test_sgd_step_moves_against_gradient(submission, rng):
    params = [Value(rng.uniform(-1, 1)) for _ in range(10)]
    for p in params:
        p.grad = rng.uniform(-1, 1)
    before = [(p, p.data, p.grad) for p in params]
    lr = rng.uniform(0.01, 0.5)
    submission.sgd_step(params, lr)
    for p, data, grad in before:
        assert p.data == pytest.approx(data - lr * grad, rel=1e-12, abs=1e-15)
        assert p.grad == grad, "the step changes data, not gradients"


@pytest.mark.exercise("2.4")
def test_sgd_step_reduces_a_loss(submission, rng):
    target = rng.uniform(-2, 2)
    w = Value(rng.uniform(-2, 2))
    losses = []
    for _ in range(50):
        w.grad = 0.0
        loss = (w - target) ** 2
        loss.backward()
        submission.sgd_step([w], 0.1)
        losses.append(loss.data)
    assert w.data == pytest.approx(target, abs=1e-3), "50 steps of lr 0.1 on (w - t)^2 converge to t"
