"""segment_bounds cuts a chain where PyTorch's checkpoint_sequential does (the truth exercise 10.3 is graded on)."""

import pytest

from minigrad.checkpoint.segments import segment_bounds


def _torch_segments(torch, n: int, segments: int) -> list[tuple[int, int]]:
    """The inclusive bounds PyTorch's checkpoint_sequential used (``use_reentrant=True``): in forward the
    checkpointed segments run under no_grad and the final one with grad; in backward the checkpointed ones run
    again, the last one first, each in order."""
    from torch.utils.checkpoint import checkpoint_sequential

    ran: list[tuple[int, bool]] = []  # (function index, grad mode) of each call

    class Step(torch.nn.Module):
        def __init__(self, index):
            super().__init__()
            self.index = index

        def forward(self, x):
            ran.append((self.index, torch.is_grad_enabled()))
            return x * 1.0

    y = checkpoint_sequential([Step(i) for i in range(n)], segments, torch.ones(1, requires_grad=True),
                              use_reentrant=True)
    final = [index for index, grad in ran if grad]
    ran.clear()
    y.sum().backward()
    bounds, run = [], []
    for index, _ in ran:
        if run and index != run[-1] + 1:  # a new segment starts
            bounds.append((run[0], run[-1]))
            run = []
        run.append(index)
    if run:
        bounds.append((run[0], run[-1]))
    return sorted(bounds) + [(final[0], final[-1])]


@pytest.mark.parametrize("n, segments", [(1, 1), (2, 1), (2, 2), (3, 2), (5, 2), (7, 3), (8, 4), (10, 3), (16, 4),
                                         (17, 4), (12, 5)])
def test_bounds_match_torch_checkpoint_sequential(n, segments):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    assert segment_bounds(n, segments) == _torch_segments(torch, n, segments)


@pytest.mark.parametrize("segments", [0, -1, 4])
def test_impossible_counts_raise(segments):
    with pytest.raises(ValueError, match="checkpoint_sequential"):
        segment_bounds(3, segments)
