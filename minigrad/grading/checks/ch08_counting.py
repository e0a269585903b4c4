"""Graded checks for chapter 08, exercise 8.5 (the tracker's engine): ``exercises/08_counting.py``.

Streams of allocation events are made here, in the grader: the events
``track()`` saw during real training steps of a small MLP drawn here (its
widths, batch, optimizer; the first step, and a later one after
``zero_grad()``), and random streams with the awkward cases (frees and
relabellings of buffers alive before counting began, a relabelling within
one category, a second peak of the same height). The learner's
``count_events`` counts each stream in the child, from a fresh ``Counts``
(with the buffers already alive), and everything it keeps is compared
here: with the tracker's own figures for the recorded steps, and with the
library's ``count_events`` on every stream.
"""

from __future__ import annotations

from minigrad.grading.checks._kernels import np_generator
from minigrad.grading.probing import exercise, probe

FIELDS = ("current", "peak", "by_category", "peak_by_category", "peak_at", "uncounted", "previous")
WHAT = {
    "current": "bytes alive after the last event", "peak": "the peak",
    "by_category": "bytes alive by category after the last event", "peak_by_category": "the split at the peak",
    "peak_at": "the index of the event that first reached the peak",
    "uncounted": "the indices of the events that changed nothing",
    "previous": "the category each moving relabelling took its bytes from (index -> category)",
}


def _plain(counts) -> dict:
    return {"current": counts.current, "peak": counts.peak, "by_category": dict(counts.by_category),
            "peak_by_category": dict(counts.peak_by_category), "peak_at": counts.peak_at,
            "uncounted": sorted(counts.uncounted), "previous": sorted(counts.previous.items())}


def _count(module, known, events, cuts) -> dict:
    """Count ``events`` as the tracker does: in runs, each call over the list as it had grown by then."""
    counts = module.Counts({int(b): (int(n), str(c)) for b, n, c in known})
    events = [tuple(e) for e in events]
    starts = [0, *cuts]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(events)
        module.count_events(counts, events[:end], start)
    return _plain(counts)


@probe
def count_stream(submission, state, known, events, chunks):
    """The learner's ``Counts`` after ``count_events`` over ``events`` (called once per run of ``chunks``)."""
    return _count(submission, known, events, chunks)


def _compare(learner, known, events, what: str, gen, tracker=None) -> None:
    from minigrad.memory import counting as reference  # here, in the grader

    cuts = sorted({int(c) for c in gen.integers(1, max(2, len(events)), size=int(gen.integers(0, 4)))})
    got = learner.probe("count_stream", known, events, cuts)
    expected = _count(reference, known, events, cuts)
    if tracker is not None:  # the library's tracker counted the same events as they came
        for name in ("current", "peak", "by_category", "peak_by_category"):
            assert expected[name] == tracker[name], (name, expected[name], tracker[name])
    shown = _show(events)
    for name in FIELDS:
        assert got[name] == expected[name], (
            f"{what}: {WHAT[name]} is {got[name]}, expected {expected[name]} "
            f"(buffers alive before the first event: {known or 'none'}; {len(events)} events, counted in "
            f"{len(cuts) + 1} call(s) of count_events{' starting at ' + str(cuts) if cuts else ''}: {shown})")


def _show(events, limit: int = 14) -> str:
    rows = [f"{i}: {e[0]} {e[1]} B #{e[2]} {e[3]!r}" for i, e in enumerate(events)]
    return "; ".join(rows if len(rows) <= limit else rows[:limit] + [f"... {len(rows) - limit} more"])


# ---------------------------------------------------------------------------- recorded training steps


def _recorded_step(gen, steps: int):
    """(known, events, the tracker's figures) of ``steps`` training steps of a small MLP, the last one tracked."""
    import gc

    import numpy as np

    import minigrad.tensor as mt
    from minigrad import nn, optim
    from minigrad.memory import track
    from minigrad.memory.buffers import live_buffers
    from minigrad.memory.categories import category_of

    mt.manual_seed(int(gen.integers(2**31)))
    widths = [int(gen.integers(3, 40)) for _ in range(int(gen.integers(2, 5)))]
    layers = []
    for n_in, n_out in zip(widths, widths[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    optimizer = [optim.SGD(model.parameters(), lr=0.1, momentum=0.9), optim.Adam(model.parameters(), lr=1e-3)][
        int(gen.integers(2))]
    batch = int(gen.integers(1, 64))
    x = mt.from_numpy(gen.standard_normal((batch, widths[0])).astype(np.float32))
    y = mt.from_numpy(gen.integers(0, widths[-1], batch))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(steps - 1):
        step()
    gc.collect()
    mem = track(model, optimizer)
    known = [(b, n, category_of(tag)) for b, (n, tag, _device) in live_buffers().items()]  # what it starts from
    with mem:
        step()
    counts = mem._counts
    events = [(e[0], e[1], e[2], e[3]) for e in mem._raw]
    figures = {"current": counts.current, "peak": counts.peak, "by_category": dict(counts.by_category),
               "peak_by_category": dict(counts.peak_by_category)}
    return known, events, figures, (f"one training step of an MLP {widths} at batch {batch} "
                                    f"({type(optimizer).__name__}, step {steps} of the model), recorded by track()")


@exercise("8.5")
def test_a_first_training_step_recorded_by_track(learner, rng):
    gen = np_generator(rng)
    known, events, figures, what = _recorded_step(gen, steps=1)
    _compare(learner, known, events, what, gen, figures)


@exercise("8.5")
def test_a_later_training_step_after_zero_grad(learner, rng):
    gen = np_generator(rng)
    known, events, figures, what = _recorded_step(gen, steps=int(gen.integers(2, 4)))
    _compare(learner, known, events, what, gen, figures)


# ---------------------------------------------------------------------------- random streams

TAGS = ("parameter", "gradient", "optimizer_state", "activation", "output", "temporary", "tensor", "input",
        "buffer", "scratch")


def _random_stream(gen, n: int, known_count: int):
    from minigrad.memory.categories import CATEGORIES

    known = [(-1 - k, 4 * int(gen.integers(1, 5000)), str(gen.choice(CATEGORIES))) for k in range(known_count)]
    alive = {b: None for b, _, _ in known}
    sizes = {b: n for b, n, _ in known}
    tags = {b: c for b, _, c in known}
    events, next_id = [], 1
    for _ in range(n):
        r = gen.random()
        if r < 0.5 or not alive:
            size = 4 * int(gen.integers(1, 5000))
            tag = str(gen.choice(TAGS))
            events.append(("alloc", size, next_id, tag))
            alive[next_id], sizes[next_id], tags[next_id] = None, size, tag
            next_id += 1
        elif r < 0.8:
            buffer = list(alive)[int(gen.integers(len(alive)))]
            del alive[buffer]
            events.append(("free", sizes[buffer], buffer, tags[buffer]))
        else:
            buffer = list(alive)[int(gen.integers(len(alive)))]
            tag = str(gen.choice(TAGS))
            tags[buffer] = tag
            events.append(("retag", sizes[buffer], buffer, tag))
    return known, events


@exercise("8.5")
def test_random_streams_of_allocations_frees_and_relabellings(learner, rng):
    gen = np_generator(rng)
    for _ in range(3):
        known, events = _random_stream(gen, int(gen.integers(20, 60)), 0)
        _compare(learner, known, events, "a random stream of events", gen)


@exercise("8.5")
def test_buffers_alive_before_counting_began(learner, rng):
    gen = np_generator(rng)
    # counted from the start; their free and relabelling count. A free of a buffer it never saw changes nothing.
    known, events = _random_stream(gen, int(gen.integers(20, 40)), int(gen.integers(1, 4)))
    events.insert(int(gen.integers(len(events) + 1)), ("free", 4096, 10**6, "gradient"))
    events.insert(int(gen.integers(len(events) + 1)), ("retag", 512, 10**6 + 1, "activation"))
    _compare(learner, known, events, "buffers alive before the first event, and events about buffers never seen",
             gen)


@exercise("8.5")
def test_relabellings_and_a_second_peak_of_the_same_height(learner, rng):
    gen = np_generator(rng)
    a, b = 4 * int(gen.integers(100, 1000)), 4 * int(gen.integers(1, 100))
    events = [("alloc", a, 1, "output"), ("alloc", b, 2, "temporary"),
              ("retag", a, 1, "activation"),  # the bytes move: temporary -> activation
              ("retag", b, 2, "output"),  # within one category: nothing moves
              ("free", b, 2, "output"), ("free", a, 1, "activation"),
              ("alloc", a, 3, "gradient"), ("alloc", b, 4, "parameter"),  # the same height again, another split
              ("retag", a, 3, "optimizer_state"), ("free", b, 4, "parameter"), ("free", a, 3, "optimizer_state")]
    _compare(learner, [], events, "relabellings, then a second peak as high as the first", gen)
