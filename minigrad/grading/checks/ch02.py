"""Graded checks for chapter 02 (exercises 2.1-2.3), on fresh random inputs each run.

The learner's ``Neuron``, ``Layer``, ``MLP``, ``hinge_loss``, ``sgd_step`` and
``train`` run in the sandboxed child, on the library's ``Value`` (chapter 01's
engine), with weights, inputs and gradients chosen here. The probes send back
plain numbers; the expected values, the finite differences and the reference
training runs are computed here. The training loop (2.3) is run on a small
network written here and with the grader's hinge loss, so it does not depend
on 2.1 or 2.2.
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


# ------------------------------------------- 2.1 Neuron, Layer, MLP: forward

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
    for i, (got, x) in enumerate(zip(out["w"], xs)):
        assert _approx(got, dz * x, rel=1e-9), f"the gradient of weight #{i} after backward is {got!r}, expected {dz * x:.8g}"
    assert _approx(out["b"], dz, rel=1e-9), f"the gradient of the bias after backward is {out['b']!r}, expected {dz:.8g}"
    numeric = numerical_gradient(lambda *a: math.tanh(sum(w * x for w, x in zip(weights, a)) + bias), xs)
    for i, (got, expected) in enumerate(zip(out["x"], numeric)):
        assert _approx(got, expected, rel=1e-4, abs=1e-5), (
            f"gradient of input #{i} (= {xs[i]:.6g}): backward gives {got!r}, finite differences give {expected:.8g}"
        )


@probe
def mlp_forward(submission, state, nin, sizes, activation, values, x):
    """The learner's MLP with the grader's parameter values (layer by layer, neuron by neuron, weights then bias)."""
    from minigrad.scalar.engine import Value

    mlp = submission.MLP(nin, sizes, activation)
    canonical = [p for layer in mlp.layers for n in layer.neurons for p in [*n.w, n.b]]
    if len(canonical) != len(values):
        raise ValueError(f"MLP({nin}, {sizes}) has {len(canonical)} weights and biases, expected {len(values)}")
    for p, value in zip(canonical, values):
        p.data = value
    out = mlp(x)
    if isinstance(out, Value):
        return {"one_value": True, "data": [out.data]}
    return {"one_value": False, "data": [o.data if isinstance(o, Value) else o for o in sequence(out, "MLP output")]}


def _mlp_reference(nin, sizes, activation, values, x):
    """The MLP's outputs, in plain floats: hidden layers use ``activation``, the last layer is linear."""
    values = iter(values)
    for i, nout in enumerate(sizes):
        f = ACTIVATIONS[activation if i < len(sizes) - 1 else "linear"]
        x = [f(sum(next(values) * xi for xi in x) + next(values)) for _ in range(nout)]
    return x


@exercise("2.1")
def test_mlp_forward_chains_the_layers(learner, rng):
    for outputs in (1, rng.randint(2, 3)):
        nin, activation = rng.randint(1, 4), rng.choice(["relu", "tanh"])
        sizes = [rng.randint(1, 5) for _ in range(rng.randint(1, 2))] + [outputs]
        dims = [nin, *sizes]
        values = [rng.uniform(-1, 1) for _ in range(sum((dims[i] + 1) * dims[i + 1] for i in range(len(sizes))))]
        x = [rng.uniform(-2, 2) for _ in range(nin)]
        answer = learner.probe("mlp_forward", nin, sizes, activation, values, x)
        expected = _mlp_reference(nin, sizes, activation, values, x)
        what = f"MLP({nin}, {sizes}, activation={activation!r})"
        assert answer["one_value"] is (outputs == 1), (
            f"{what} must return " + ("one Value" if outputs == 1 else f"a list of {outputs} Values")
        )
        assert len(answer["data"]) == outputs, f"{what} gave {len(answer['data'])} outputs, expected {outputs}"
        for i, (got, want) in enumerate(zip(answer["data"], expected)):
            assert _approx(got, want, rel=1e-9), f"{what}: output #{i} at a random input is {got!r}, expected {want:.8g}"


# -------------------------------------- 2.1 Neuron, Layer, MLP: parameters

def _indices(params, canonical):
    """Each parameter as its index among ``canonical`` (-1: not one of the model's own Values)."""
    index = {id(p): i for i, p in enumerate(canonical)}
    return [index.get(id(p), -1) for p in sequence(params, "parameters()")]


@probe
def neuron_parameters(submission, state, nin, seed):
    neuron = submission.Neuron(nin, "relu", random.Random(seed))
    return {"indices": _indices(neuron.parameters(), [*neuron.w, neuron.b])}


@exercise("2.1")
def test_neuron_parameters(learner, rng):
    nin = rng.randint(1, 6)
    indices = learner.probe("neuron_parameters", nin, rng.randrange(2**31))["indices"]
    assert len(indices) == nin + 1, f"Neuron({nin}) has {nin + 1} parameters ({nin} weights and a bias), got {len(indices)}"
    assert indices == list(range(nin + 1)), "return the neuron's own Value objects, the weights in order, then the bias"


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


@exercise("2.1")
def test_layer_parameters(learner, rng):
    nin, nout = rng.randint(1, 5), rng.randint(1, 5)
    answer = learner.probe("layer_parameters", nin, nout, rng.randrange(2**31))
    count = nout * (nin + 1)
    assert len(answer["indices"]) == count, f"Layer({nin}, {nout}) has {count} parameters, got {len(answer['indices'])}"
    assert answer["indices"] == list(range(count)), "return the neurons' own Value objects, in order"


@exercise("2.1")
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


# --------------------------------------------------------------- 2.2 hinge

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


@exercise("2.2")
def test_hinge_loss_value(learner, rng):
    n = rng.randint(1, 20)
    scores = [rng.uniform(-3, 3) for _ in range(n)]
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    got = learner.probe("hinge", scores, labels)["data"]
    assert _approx(got, _hinge(scores, labels), rel=1e-9), f"hinge loss {got!r}, expected {_hinge(scores, labels)}"
    confident = learner.probe("hinge", [2.0, -3.0], [1.0, -1.0])["data"]
    assert confident == 0.0, "points beyond the margin cost nothing"


@exercise("2.2")
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




# ------------------------------------------------------ 2.3 the training loop

class TinyNet:
    """A 2-input, ``hidden``-unit tanh network written here, so grading 2.3 does not use the learner's MLP."""

    def __init__(self, Value, values, hidden):
        self.params = [Value(v) for v in values]
        self.hidden = hidden

    def __call__(self, x):
        p, h = self.params, self.hidden
        units = [(p[3 * j] * x[0] + p[3 * j + 1] * x[1] + p[3 * j + 2]).tanh() for j in range(h)]
        out = p[-1]
        for j, unit in enumerate(units):
            out = out + p[3 * h + j] * unit
        return out

    def parameters(self):
        return list(self.params)

    def zero_grad(self):
        for p in self.params:
            p.grad = 0.0


def grader_hinge(scores, labels):
    """The hinge loss, built here from library ops, in place of the learner's (2.2)."""
    total = 0.0
    for s, y in zip(scores, labels):
        total = total + (1.0 - y * s).relu()
    return total * (1.0 / len(scores))


def _n_params(hidden):
    return 4 * hidden + 1


@probe
def run_training(submission, state, values, hidden, points, labels, steps, lr, lr_end, alpha, stale_grads=None):
    """The learner's ``train`` on the grader's network and hinge loss; what it recorded and left behind."""
    from minigrad.scalar.engine import Value

    net = TinyNet(Value, values, hidden)
    if stale_grads is not None:
        for p, g in zip(net.params, stale_grads):
            p.grad = g
    reported = []
    submission.hinge_loss = grader_hinge
    losses = submission.train(
        net, points, labels, steps, lr, lr_end=lr_end, alpha=alpha,
        on_step=lambda step, step_lr, loss, scores: reported.append([step, step_lr, loss.data, len(scores)]),
    )
    return {
        "losses": [_number(x, "each recorded loss") for x in sequence(losses, "train's result")],
        "reported": reported,
        "params": [p.data for p in net.params],
    }


def _reference_run(values, hidden, points, labels, steps, lr, lr_end, alpha):
    from minigrad.scalar.engine import Value
    from minigrad.scalar.nn import train

    net = TinyNet(Value, values, hidden)
    losses = train(net, points, labels, steps, lr, lr_end=lr_end, alpha=alpha)
    return losses, [p.data for p in net.params]


def _problem(rng, n_points, hidden, scale=1.0):
    points = [[rng.uniform(-scale, scale), rng.uniform(-scale, scale)] for _ in range(n_points)]
    labels = [rng.choice([-1.0, 1.0]) for _ in range(n_points)]
    values = [rng.uniform(-1, 1) for _ in range(_n_params(hidden))]
    return values, points, labels


def _compare_runs(answer, expected_losses, expected_params, what):
    losses = answer["losses"]
    assert len(losses) == len(expected_losses), (
        f"{what}: train returned {len(losses)} losses for {len(expected_losses)} steps (one per step, in order)"
    )
    for step, (got, want) in enumerate(zip(losses, expected_losses)):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (
            f"{what}: the loss recorded at step {step} is {got:.10g}, the reference run records {want:.10g}"
        )
    for i, (got, want) in enumerate(zip(answer["params"], expected_params)):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (
            f"{what}: after training, parameter #{i} is {got:.10g}, in the reference run {want:.10g}"
        )


@exercise("2.3")
def test_training_loop_matches_the_reference_run(learner, rng):
    for run in range(2):  # the second run adds an L2 penalty and a decaying learning rate
        hidden, steps = rng.randint(2, 4), rng.randint(4, 8)
        values, points, labels = _problem(rng, rng.randint(6, 14), hidden, scale=2.0)
        lr = rng.uniform(0.05, 0.5)
        alpha = rng.uniform(1e-3, 1e-1) if run else 0.0
        lr_end = lr * rng.uniform(0.1, 0.9) if run else None
        args = (values, hidden, points, labels, steps, lr, lr_end, alpha)
        answer = learner.probe("run_training", *args)
        schedule = f"lr {lr:.3g} falling towards {lr_end:.3g}" if run else f"constant lr {lr:.3g}"
        what = f"{steps} steps on {len(points)} random points ({schedule}, alpha {alpha:.3g})"
        _compare_runs(answer, *_reference_run(*args), what)
        expected_lrs = [lr + ((lr if lr_end is None else lr_end) - lr) * k / steps for k in range(steps)]
        assert [r[0] for r in answer["reported"]] == list(range(steps)), "on_step is called once per step, in order"
        for (_, step_lr, loss, n_scores), want_lr, want_loss in zip(answer["reported"], expected_lrs, answer["losses"]):
            assert math.isclose(step_lr, want_lr) and loss == want_loss and n_scores == len(points), (
                "on_step receives the step's learning rate, its loss and one score per point"
            )


@exercise("2.3")
def test_training_ignores_gradients_left_over_from_before(learner, rng):
    hidden = rng.randint(2, 3)
    values, points, labels = _problem(rng, rng.randint(4, 10), hidden)
    steps, lr = rng.randint(1, 2), rng.uniform(0.05, 0.3)
    stale = [rng.choice([-1.0, 1.0]) * rng.uniform(5, 50) for _ in values]
    args = (values, hidden, points, labels, steps, lr, None, 0.0)
    answer = learner.probe("run_training", *args, stale)
    _compare_runs(answer, *_reference_run(*args), f"with stale values in .grad before train ({steps} steps)")


@exercise("2.3")
def test_every_step_lowers_the_loss_with_a_small_learning_rate(learner, rng):
    hidden = rng.randint(2, 3)
    # small inputs and a small lr: every margin stays inside 1, where the loss is smooth
    values, points, labels = _problem(rng, rng.randint(4, 10), hidden, scale=0.3)
    values = [v * 0.3 for v in values]
    answer = learner.probe("run_training", values, hidden, points, labels, 10, 0.02, None, 0.0)
    losses = answer["losses"]
    assert len(losses) == 10, f"train returned {len(losses)} losses for 10 steps"
    for step in range(1, 10):
        assert losses[step] < losses[step - 1], (
            f"step {step - 1} did not lower the loss ({losses[step - 1]:.10g} -> {losses[step]:.10g}) "
            f"with a small learning rate on a smooth problem: each step must go downhill"
        )


@probe
def sgd_once(submission, state, data, grads, lr):
    from minigrad.scalar.engine import Value

    params = [Value(d) for d in data]
    for p, g in zip(params, grads):
        p.grad = g
    submission.sgd_step(params, lr)
    return {"data": [p.data for p in params], "grads": [p.grad for p in params]}


@exercise("2.3")
def test_sgd_step_moves_each_parameter_against_its_gradient(learner, rng):
    data = [rng.uniform(-1, 1) for _ in range(10)]
    grads = [rng.uniform(-1, 1) for _ in range(10)]
    lr = rng.uniform(0.01, 0.5)
    after = learner.probe("sgd_once", data, grads, lr)
    for i, (d, g, new, new_grad) in enumerate(zip(data, grads, after["data"], after["grads"])):
        assert _approx(new, d - lr * g, rel=1e-12, abs=1e-15), (
            f"sgd_step with lr {lr:.4g}: parameter #{i} (data {d:.6g}, grad {g:.6g}) became {new!r}, expected {d - lr * g:.10g}"
        )
        assert new_grad == g, "the step changes each parameter's data, not its gradient"
