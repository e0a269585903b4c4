"""Neural networks made of scalar ``Value``s: Neuron, Layer, MLP, the hinge loss and the training loop.

The names follow PyTorch (``Module``, ``parameters()``, ``zero_grad()``) so
that what is learned here carries over to ``minigrad.nn`` and to PyTorch.
Initialisation is seeded: the same ``seed`` always gives the same network.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from minigrad.scalar.engine import Value
from minigrad.scalar.fused import dot, vsum

__all__ = ["Module", "Neuron", "Layer", "MLP", "hinge_loss", "mse_loss", "l2_penalty", "sgd_step", "train"]

ACTIVATIONS = ("relu", "tanh", "sigmoid", "linear")


class Module:
    """Base class: something with parameters whose gradients can be reset."""

    def parameters(self) -> list[Value]:
        return []

    def zero_grad(self) -> None:
        """Reset the gradient of every parameter to 0 (gradients accumulate otherwise)."""
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """``activation(w · x + b)`` for one output.

    Weights start uniform in [-1/sqrt(nin), 1/sqrt(nin)] so that ``w · x`` keeps
    roughly the scale of one input however many inputs there are; the bias starts at 0.
    """

    def __init__(self, nin: int, activation: str = "relu", rng: random.Random | None = None):
        if not isinstance(nin, int) or nin < 1:
            raise ValueError(f"Neuron: nin must be a positive int, got {nin!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"Neuron: activation must be one of {ACTIVATIONS}, got {activation!r}")
        rng = rng or random.Random(0)
        bound = 1.0 / math.sqrt(nin)
        self.w = [Value(rng.uniform(-bound, bound), label="w") for _ in range(nin)]
        self.b = Value(0.0, label="b")
        self.activation = activation

    def __call__(self, x: Sequence) -> Value:
        if len(x) != len(self.w):
            raise ValueError(
                f"Neuron: expected {len(self.w)} inputs, got {len(x)}; "
                f"the input size must match the nin the neuron was built with"
            )
        ### BEGIN SOLUTION 2.1 | the weighted vote of the inputs plus the bias, bent by self.activation ("linear": not bent) (section 1)
        z = dot(self.w, x) + self.b
        if self.activation == "linear":
            return z
        return getattr(z, self.activation)()
        ### END SOLUTION

    def parameters(self) -> list[Value]:
        ### BEGIN SOLUTION 2.1 | the neuron's own Values that training adjusts, weights first (section 3)
        return self.w + [self.b]
        ### END SOLUTION

    def __repr__(self) -> str:
        return f"Neuron({len(self.w)}, activation={self.activation!r})"


class Layer(Module):
    """``nout`` independent neurons that all see the same input."""

    def __init__(self, nin: int, nout: int, activation: str = "relu", rng: random.Random | None = None):
        rng = rng or random.Random(0)
        self.neurons = [Neuron(nin, activation, rng) for _ in range(nout)]

    def __call__(self, x: Sequence) -> list[Value]:
        return [n(x) for n in self.neurons]

    def parameters(self) -> list[Value]:
        ### BEGIN SOLUTION 2.1 | every neuron's parameters, in order, in one flat list (section 3)
        return [p for n in self.neurons for p in n.parameters()]
        ### END SOLUTION

    def __repr__(self) -> str:
        n = self.neurons[0]
        return f"Layer({len(n.w)}, {len(self.neurons)}, activation={n.activation!r})"


class MLP(Module):
    """A multi-layer perceptron: ``MLP(2, [16, 16, 1])`` maps 2 inputs to 1 output.

    Hidden layers use ``activation``; the last layer is linear, so its output
    is a raw score (a logit) that a loss function interprets.
    A single output is returned as a Value, several as a list.
    """

    def __init__(self, nin: int, nouts: Sequence[int], activation: str = "relu", seed: int = 0):
        rng = random.Random(seed)
        sizes = [nin, *nouts]
        self.layers = [
            Layer(sizes[i], sizes[i + 1], activation if i < len(nouts) - 1 else "linear", rng)
            for i in range(len(nouts))
        ]

    def __call__(self, x: Sequence):
        ### BEGIN SOLUTION 2.1 | the layers in a chain, each reading what the previous one produced (section 3)
        for layer in self.layers:
            x = layer(x)
        return x[0] if len(x) == 1 else x
        ### END SOLUTION

    def parameters(self) -> list[Value]:
        ### BEGIN SOLUTION 2.1 | every layer's parameters, in order, in one flat list (section 3)
        return [p for layer in self.layers for p in layer.parameters()]
        ### END SOLUTION

    def __repr__(self) -> str:
        return f"MLP([{', '.join(map(repr, self.layers))}])"


def hinge_loss(scores: Sequence[Value], labels: Sequence[float]) -> Value:
    """The batch mean of the hinge (max-margin) loss of each score, labels y in {-1, +1}.

    Zero for a point classified correctly with margin at least 1; grows
    linearly with how wrong it is otherwise (the SVM "max-margin" loss).
    """
    if len(scores) != len(labels):
        raise ValueError(f"hinge_loss: {len(scores)} scores but {len(labels)} labels")
    if not scores:
        raise ValueError("hinge_loss: empty batch")
    ### BEGIN SOLUTION 2.2 | each point's loss from its margin y * score, built from Value ops so it has a gradient, then the batch mean (section 6)
    losses = [(1.0 - y * s).relu() for s, y in zip(scores, labels)]
    return vsum(losses) * (1.0 / len(losses))
    ### END SOLUTION


def mse_loss(predictions: Sequence[Value], targets: Sequence[float]) -> Value:
    """Mean of ``(prediction - target) ** 2``."""
    if len(predictions) != len(targets):
        raise ValueError(f"mse_loss: {len(predictions)} predictions but {len(targets)} targets")
    if not predictions:
        raise ValueError("mse_loss: empty batch")
    return vsum((p - t) ** 2 for p, t in zip(predictions, targets)) * (1.0 / len(predictions))


def l2_penalty(parameters: Sequence[Value], alpha: float) -> Value:
    """``alpha * sum(p ** 2)``: weight decay written as a loss term."""
    return alpha * dot(parameters, parameters) if parameters else Value(0.0)


def sgd_step(parameters: Sequence[Value], lr: float) -> None:
    """Plain gradient descent: move every parameter a step ``lr`` against its gradient."""
    if lr <= 0:
        raise ValueError(f"sgd_step: lr must be positive, got {lr}")
    ### BEGIN SOLUTION 2.3 | change each parameter's number (not the Value object) so the loss goes down (section 7)
    for p in parameters:
        p.data -= lr * p.grad
    ### END SOLUTION


def train(model: Module, points: Sequence, labels: Sequence[float], steps: int, lr: float,
          lr_end: float | None = None, alpha: float = 0.0, on_step: Callable | None = None) -> list[float]:
    """Full-batch gradient descent on ``hinge_loss + l2_penalty(alpha)``; returns the loss of every step.

    Each step scores every point with the current parameters and moves them
    with ``sgd_step``, using the gradient of this step's loss alone (gradients
    left over from before the call or from earlier steps must not leak in).
    The learning rate falls linearly from ``lr`` at step 0 towards ``lr_end``
    (constant when None). ``on_step(step, lr, loss, scores)`` is called after each step.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"train: steps must be an int >= 0, got {steps!r}")
    lr_end = lr if lr_end is None else lr_end
    losses = []
    for step in range(steps):
        step_lr = lr + (lr_end - lr) * step / steps
        ### BEGIN SOLUTION 2.3 | one step of section 7's recipe on the whole batch; keep `loss` and `scores` for on_step and record the loss
        scores = [model(x) for x in points]
        loss = hinge_loss(scores, labels) + l2_penalty(model.parameters(), alpha)
        model.zero_grad()
        loss.backward()
        sgd_step(model.parameters(), step_lr)
        losses.append(loss.data)
        ### END SOLUTION
        if on_step is not None:
            on_step(step, step_lr, loss, scores)
    return losses
