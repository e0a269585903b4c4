"""A training step's memory by category, worked out from shapes alone, for a Linear + ReLU MLP.

For ``sizes = [n0, n1, ..., nL]`` the network is ``Linear(n0, n1), ReLU,
Linear(n1, n2), ReLU, ..., Linear(n(L-1), nL)`` (no ReLU after the last
layer), run on a batch of ``batch`` rows with elements of ``itemsize`` bytes:

- ``parameter``: every Linear's weight and bias;
- ``gradient``: one gradient per parameter, the same shape;
- ``optimizer_state``: per parameter, as many copies as the optimizer keeps
  (:data:`STATE_COPIES`: plain SGD none, SGD with momentum one buffer, Adam
  two moments - so parameters, gradients and Adam's state are 4x the model);
- ``input``: the batch (``batch x n0``), which the first Linear keeps for
  its weight's gradient;
- ``activation``: the other buffers the forward pass keeps for backward.
  Each ReLU keeps its output (``batch x n_out``) to know where it let the
  gradient through, and the next Linear keeps *the same buffer* as its
  input: one buffer, counted once. The Linear's own output is not kept
  (the ReLU needs only what it produced).

The numbers are exact element counts times ``itemsize``; ``track()``
measures the same categories on a real step (chapter 08 puts them side by side).
"""

from __future__ import annotations

STATE_COPIES = {"sgd": 0, "sgd-momentum": 1, "adam": 2}


def mlp_step_bytes(sizes, batch: int, optimizer: str = "adam", itemsize: int = 4) -> dict[str, int]:
    """Bytes of ``parameter``, ``gradient``, ``optimizer_state``, ``input`` and ``activation`` in one training step.

    ``sizes``: the layer widths, input first (at least two); ``optimizer``: a key of :data:`STATE_COPIES`.
    """
    if len(sizes) < 2:
        raise ValueError(f"mlp_step_bytes: sizes needs at least an input and an output width, got {list(sizes)}")
    if optimizer not in STATE_COPIES:
        raise ValueError(f"mlp_step_bytes: unknown optimizer {optimizer!r}; choose one of {sorted(STATE_COPIES)}")
    ### BEGIN SOLUTION 8.2 | count the elements of the weights and biases; then the distinct buffers the forward pass keeps for backward; times the bytes per element
    parameters = 0
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        parameters += n_in * n_out + n_out
    hidden = sum(sizes[1:-1])
    return {
        "parameter": parameters * itemsize,
        "gradient": parameters * itemsize,
        "optimizer_state": STATE_COPIES[optimizer] * parameters * itemsize,
        "input": batch * sizes[0] * itemsize,
        "activation": batch * hidden * itemsize,
    }
    ### END SOLUTION
