"""Graded checks for chapter 02 (exercises 2.1-2.4), on fresh random inputs each run.

The learner's ``Neuron``, ``Layer``, ``MLP``, ``hinge_loss`` and ``sgd_step``
run in the sandboxed child, on the library's ``Value`` (chapter 01's engine),
with weights, inputs and gradients chosen here. The probes send back plain
numbers; the expected values and the finite differences are computed here.
"""

import math
import random

from minigrad.grading.probing import exercise, probe, sequence

ACTIVATIONS = {
    "linear": lambda z: z,
    "relu": lambda z: max(z, 0.0),
    "tanh": math.tanh,
    "sigmoid": lambda z: 1 / (1 + math.exp(-z)),
}


def _number(x, what: str) -> float:
    assert type(x) in (int, float), f"{what} must be a number (a float), got {x!r}"
    return float(x)


def _approx(got, expected, rel=1e-6, abs=1e-12) -> bool:
    return type(got) in (int, float) and math.isclose(got, expected, rel_tol=rel, abs_tol=abs)


# ------------------------------------------------------------- 2.1 Neuron

@probe
def neuron_forward(submission, state, nin, activation, seed, weights, bias, x, backward=False):
    """The learner's neuron with the grader's weights and bias, on inputs ``x`` (Values if ``backward``)."""
    from minigrad.scalar.engine import Value

    neuron = submission.Neuron(nin, activation, random.Random(seed))
    if len(neuron.w) != len(weights):
        raise ValueError(f"Neuron({nin}) has {len(neuron.w)} weights")
    for w, value in zip(neuron.w, weights):
        w.data = value
    neuron.b.data = bias
    inputs = [Value(v) for v in x] if backward else list(x)
    out = neuron(inputs)
    answer = {"is_value": isinstance(out, Value), "data": out.data}
    if backward:
        out.backward()
        answer.update(w=[w.grad for w in neuron.w], b=neuron.b.grad, x=[v.grad for v in inputs])
    return answer


def _weights(rng, nin):
    bound = 1 / math.sqrt(nin)
    return [rng.uniform(-bound, bound) for _ in range(nin)]


@exercise("2.1")
def test_neuron_forward_all_activations(learner, rng):
    for activation, f in ACTIVATIONS.items():
        nin = rng.randint(1, 8)
        weights, bias = _weights(rng, nin), rng.uniform(-1, 1)
        x = [rng.uniform(-2, 2) for _ in range(nin)]
        expected = f(sum(w * xi for w, xi in zip(weights, x)) + bias)
        out = learner.probe("neuron_forward", nin, activation, rng.randrange(2**31), weights, bias, x)
        assert out["is_value"] is True, "a neuron returns one Value"
        assert _approx(out["data"], expected, rel=1e-9), f"activation {activation!r}: got {out['data']!r}, expected {expected}"


@exercise("2.1")
def test_neuron_gradients_reach_weights_bias_and_inputs(learner, rng):
    from minigrad.scalar.gradcheck import numerical_gradient

    nin = rng.randint(2, 6)
    weights, bias = _weights(rng, nin), rng.uniform(-0.5, 0.5)
    xs = [rng.uniform(-1, 1) for _ in range(nin)]
    out = learner.probe("neuron_forward", nin, "tanh", rng.randrange(2**31), weights, bias, xs, True)
    z = sum(w * x for w, x in zip(weights, xs)) + bias
    dz = 1 - math.tanh(z) ** 2
    for got, x in zip(out["w"], xs):
        assert _approx(got, dz * x, rel=1e-9), "d out / d w_i = tanh'(z) * x_i"
    assert _approx(out["b"], dz, rel=1e-9), "d out / d b = tanh'(z)"
    numeric = numerical_gradient(lambda *a: math.tanh(sum(w * x for w, x in zip(weights, a)) + bias), xs)
    for i, (got, expected) in enumerate(zip(out["x"], numeric)):
        assert _approx(got, expected, rel=1e-4, abs=1e-5), (
            f"gradient of input #{i} (= {xs[i]:.6g}): backward gives {got!r}, finite differences give {expected:.8g}"
        )


# --------------------------------------------------------- 2.2 parameters

def _indices(params, canonical):
    """Each parameter as its index among ``canonical`` (-1: not one of the model's own Values)."""
    index = {id(p): i for i, p in enumerate(canonical)}
    return [index.get(id(p), -1) for p in sequence(params, "parameters()")]


@probe
def layer_parameters(submission, state, nin, nout, seed):
    from minigrad.scalar.engine import Value

    layer = submission.Layer(nin, nout, "relu", random.Random(seed))
    canonical = [p for n in layer.neurons for p in [*n.w, n.b]]
    params = layer.parameters()
    return {"indices": _indices(params, canonical), "all_values": all(isinstance(p, Value) for p in params)}


@probe
def mlp_parameters(submission, state, nin, sizes, seed):
    from minigrad.scalar.engine import Value

    mlp = submission.MLP(nin, sizes, seed=seed)
    canonical = [p for layer in mlp.layers for n in layer.neurons for p in [*n.w, n.b]]
    params = mlp.parameters()
    return {
        "indices": _indices(params, canonical),
        "all_values": all(isinstance(p, Value) for p in params),
        "count_2_16_16_1": len(sequence(submission.MLP(2, [16, 16, 1]).parameters(), "parameters()")),
    }


@exercise("2.2")
def test_layer_parameters(learner, rng):
    nin, nout = rng.randint(1, 5), rng.randint(1, 5)
    answer = learner.probe("layer_parameters", nin, nout, rng.randrange(2**31))
    count = nout * (nin + 1)
    assert len(answer["indices"]) == count, f"Layer({nin}, {nout}) has {count} parameters, got {len(answer['indices'])}"
    assert answer["indices"] == list(range(count)), "return the neurons' own Value objects, in order"


@exercise("2.2")
def test_mlp_parameters(learner, rng):
    sizes = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))] + [1]
    nin = rng.randint(1, 4)
    answer = learner.probe("mlp_parameters", nin, sizes, rng.randrange(1000))
    dims = [nin, *sizes]
    count = sum((dims[i] + 1) * dims[i + 1] for i in range(len(sizes)))
    indices = answer["indices"]
    assert len(indices) == count, f"MLP({nin}, {sizes}) has {count} parameters, got {len(indices)}"
    assert -1 not in indices, "return the layers' own Value objects"
    assert len(set(indices)) == count, "each parameter must appear once"
    assert answer["all_values"] is True
    assert answer["count_2_16_16_1"] == 337, f"MLP(2, [16, 16, 1]) has 337 parameters, got {answer['count_2_16_16_1']!r}"


# --------------------------------------------------------------- 2.3 hinge

@probe
def hinge(submission, state, scores, labels, backward=False):
    from minigrad.scalar.engine import Value

    values = [Value(s) for s in scores]
    loss = submission.hinge_loss(values, labels)
    answer = {"data": loss.data}
    if backward:
        loss.backward()
        answer["grads"] = [v.grad for v in values]
    return answer


def _hinge(scores, labels) -> float:
    return sum(max(0.0, 1 - y * s) for s, y in zip(scores, labels)) / len(scores)


@exercise("2.3")
def test_hinge_loss_value(learner, rng):
    n = rng.randint(1, 20)
    scores = [rng.uniform(-3, 3) for _ in range(n)]
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    got = learner.probe("hinge", scores, labels)["data"]
    assert _approx(got, _hinge(scores, labels), rel=1e-9), f"hinge loss {got!r}, expected {_hinge(scores, labels)}"
    confident = learner.probe("hinge", [2.0, -3.0], [1.0, -1.0])["data"]
    assert confident == 0.0, "points beyond the margin cost nothing"


@exercise("2.3")
def test_hinge_loss_gradient(learner, rng):
    from minigrad.scalar.gradcheck import numerical_gradient

    n = rng.randint(2, 8)
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    # keep scores away from the kink at y*s = 1 so finite differences are valid
    scores = [y * rng.choice([rng.uniform(-2, 0.8), rng.uniform(1.2, 3)]) for y in labels]
    grads = learner.probe("hinge", scores, labels, True)["grads"]
    numeric = numerical_gradient(lambda *s: _hinge(s, labels), scores)
    for i, (got, expected) in enumerate(zip(grads, numeric)):
        assert _approx(got, expected, rel=1e-4, abs=1e-5), (
            f"gradient of score #{i} (= {scores[i]:.6g}): backward gives {got!r}, finite differences give {expected:.8g}"
        )


# ----------------------------------------------------------------- 2.4 SGD

@probe
def sgd_once(submission, state, data, grads, lr):
    from minigrad.scalar.engine import Value

    params = [Value(d) for d in data]
    for p, g in zip(params, grads):
        p.grad = g
    submission.sgd_step(params, lr)
    return {"data": [p.data for p in params], "grads": [p.grad for p in params]}


@probe
def sgd_descent(submission, state, start, target, steps):
    from minigrad.scalar.engine import Value

    w = Value(start)
    trajectory = []
    for _ in range(steps):
        w.grad = 0.0
        loss = (w - target) ** 2
        loss.backward()
        submission.sgd_step([w], 0.1)
        trajectory.append(w.data)
    return trajectory


@exercise("2.4")
def test_sgd_step_moves_against_gradient(learner, rng):
    data = [rng.uniform(-1, 1) for _ in range(10)]
    grads = [rng.uniform(-1, 1) for _ in range(10)]
    lr = rng.uniform(0.01, 0.5)
    after = learner.probe("sgd_once", data, grads, lr)
    for d, g, new, new_grad in zip(data, grads, after["data"], after["grads"]):
        assert _approx(new, d - lr * g, rel=1e-12, abs=1e-15), f"p.data = {d} - {lr} * {g} should be {d - lr * g}, got {new!r}"
        assert new_grad == g, "the step changes data, not gradients"


@exercise("2.4")
def test_sgd_step_reduces_a_loss(learner, rng):
    target, start = rng.uniform(-2, 2), rng.uniform(-2, 2)
    trajectory = learner.probe("sgd_descent", start, target, 50)
    assert len(trajectory) == 50 and all(type(w) in (int, float) for w in trajectory)
    w = start
    for step, got in enumerate(trajectory):
        w = w - 0.1 * 2 * (w - target)
        assert math.isclose(got, w, rel_tol=1e-9, abs_tol=1e-12), f"step {step + 1}: w should be {w}, got {got}"
    assert abs(trajectory[-1] - target) <= 1e-3, "50 steps of lr 0.1 on (w - t)^2 converge to t"
