"""Stage 1 networks: structure, determinism, gradients, and that training actually learns."""

import random

import pytest

from minigrad.scalar import MLP, Layer, Neuron, Value, gradcheck, hinge_loss, l2_penalty, make_moons, make_spirals, mse_loss, numerical_gradient, sgd_step, train


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
    losses = train(model, points, labels, steps=60, lr=0.5, lr_end=0.1, alpha=1e-4)
    accuracy = sum((model(x).data > 0) == (y > 0) for x, y in zip(points, labels)) / len(points)
    assert len(losses) == 60 and losses[-1] < 0.5 * losses[0]
    assert accuracy >= 0.9


def test_train_is_the_five_step_recipe():
    """Each recorded loss is the loss before that step; the step uses that loss's gradient and the scheduled lr."""
    points, labels = make_moons(20, seed=1)
    model, by_hand = MLP(2, [4, 1], seed=2), MLP(2, [4, 1], seed=2)
    seen = []
    losses = train(model, points, labels, steps=5, lr=0.4, lr_end=0.2, alpha=1e-3,
                   on_step=lambda step, lr, loss, scores: seen.append((step, lr, loss.data, len(scores))))
    for step in range(5):
        loss = hinge_loss([by_hand(x) for x in points], labels) + l2_penalty(by_hand.parameters(), 1e-3)
        by_hand.zero_grad()
        loss.backward()
        sgd_step(by_hand.parameters(), 0.4 - 0.2 * step / 5)
        assert losses[step] == pytest.approx(loss.data, rel=1e-12)
        assert seen[step][:2] == (step, pytest.approx(0.4 - 0.2 * step / 5)) and seen[step][3] == 20
    assert [p.data for p in model.parameters()] == pytest.approx([p.data for p in by_hand.parameters()], rel=1e-12)


def test_train_ignores_gradients_left_over_from_before():
    points, labels = make_moons(10, seed=4)
    clean, dirty = MLP(2, [3, 1], seed=5), MLP(2, [3, 1], seed=5)
    for p in dirty.parameters():
        p.grad = 100.0
    assert train(clean, points, labels, 3, 0.1) == train(dirty, points, labels, 3, 0.1)
    assert [p.data for p in clean.parameters()] == [p.data for p in dirty.parameters()]
    assert train(clean, points, labels, 0, 0.1) == []


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
        (lambda: train(MLP(2, [1]), [[0.0, 0.0]], [1.0], -1, 0.1), "steps must be an int >= 0"),
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
