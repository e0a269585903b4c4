"""Stage 1 networks: structure, determinism, gradients, and that training actually learns."""

import random

import pytest

from minigrad.scalar import MLP, Layer, Neuron, Value, gradcheck, hinge_loss, l2_penalty, make_moons, make_spirals, mse_loss, numerical_gradient, sgd_step


def test_mlp_shape_and_parameter_count():
    model = MLP(2, [16, 16, 1])
    assert len(model.parameters()) == 2 * 16 + 16 + 16 * 16 + 16 + 16 + 1
    assert isinstance(model([0.5, -0.5]), Value)
    assert len(MLP(3, [4, 2])([1.0, 2.0, 3.0])) == 2
    assert "Layer(2, 16, activation='relu')" in repr(model)


def test_same_seed_same_network():
    a, b, c = MLP(2, [4, 1], seed=7), MLP(2, [4, 1], seed=7), MLP(2, [4, 1], seed=8)
    assert [p.data for p in a.parameters()] == [p.data for p in b.parameters()]
    assert [p.data for p in a.parameters()] != [p.data for p in c.parameters()]


def test_mlp_gradients_match_finite_differences():
    model = MLP(3, [4, 1], activation="tanh", seed=1)
    params = model.parameters()
    start = [p.data for p in params]

    def loss_of(*values):
        for p, v in zip(params, values):
            p.data = v.data if isinstance(v, Value) else v
        return model([0.3, -0.7, 0.2]) ** 2

    loss = loss_of(*start)
    model.zero_grad()
    loss.backward()
    analytic = [p.grad for p in params]
    numeric = numerical_gradient(lambda *v: loss_of(*v).data, start)
    assert analytic == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_losses_and_their_gradients():
    assert gradcheck(lambda a, b: hinge_loss([a, b], [1.0, -1.0]), [0.3, 0.4]).ok
    assert gradcheck(lambda a, b: mse_loss([a, b], [1.0, -1.0]), [0.3, 0.4]).ok
    assert gradcheck(lambda a, b: l2_penalty([a, b], 0.1), [0.3, -0.4]).ok
    assert hinge_loss([Value(3.0)], [1.0]).data == 0.0


def test_zero_grad_resets_parameters():
    model = MLP(2, [3, 1])
    model([1.0, 2.0]).backward()
    assert any(p.grad != 0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad == 0 for p in model.parameters())


def test_training_separates_the_moons():
    points, labels = make_moons(60, noise=0.05, seed=3)
    model = MLP(2, [12, 12, 1], seed=0)
    first = None
    for step in range(60):
        loss = hinge_loss([model(x) for x in points], labels) + l2_penalty(model.parameters(), 1e-4)
        model.zero_grad()
        loss.backward()
        sgd_step(model.parameters(), 0.5 - 0.4 * step / 60)
        first = first if first is not None else loss.data
    accuracy = sum((model(x).data > 0) == (y > 0) for x, y in zip(points, labels)) / len(points)
    assert loss.data < 0.5 * first
    assert accuracy >= 0.9


def test_datasets_are_deterministic_and_balanced():
    for make in (make_moons, make_spirals):
        p1, l1 = make(50, seed=1)
        p2, l2 = make(50, seed=1)
        assert p1 == p2 and l1 == l2 and len(p1) == 50
        assert sorted(set(l1)) == [-1.0, 1.0] and l1.count(1.0) == 25
    with pytest.raises(ValueError, match="n must be an int >= 2"):
        make_moons(1)


@pytest.mark.parametrize(
    "make, text",
    [
        (lambda: Neuron(0), "nin must be a positive int"),
        (lambda: Neuron(2, "swish"), "activation must be one of"),
        (lambda: Neuron(2)([1.0]), "expected 2 inputs, got 1"),
        (lambda: hinge_loss([Value(1.0)], [1.0, -1.0]), "1 scores but 2 labels"),
        (lambda: sgd_step([], -1.0), "lr must be positive"),
    ],
)
def test_nn_errors_are_clear(make, text):
    with pytest.raises(ValueError) as info:
        make()
    assert text in str(info.value)


def test_layer_uses_the_given_rng():
    rng = random.Random(5)
    layer = Layer(3, 2, rng=rng)
    assert len(layer.parameters()) == 8
