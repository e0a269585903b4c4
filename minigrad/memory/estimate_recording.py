"""Recording training steps for :func:`minigrad.memory.estimate`: every buffer event, its phase and category.

A copy of the model trains under an allocation observer (:mod:`minigrad.memory.buffers`)
that notes, for each event, the categories it moves bytes between, its size,
the phase of the step (data, forward, backward, optimizer step, zero_grad,
release) and, for buffers kept for backward, the module whose forward kept them.
"""

from __future__ import annotations

import copy

import numpy as np

import minigrad.tensor as mt
from minigrad.memory import buffers, listeners
from minigrad.memory.categories import CATEGORIES, category_of

__all__ = ["CATEGORIES", "INPUT_TAG", "category_of", "Recorder", "record_steps"]

INPUT_TAG = "input"
_INDEX = {name: i for i, name in enumerate(CATEGORIES)}


class Recorder:
    """An allocation observer that keeps, per event, its phase, the categories it moves bytes between and its size.

    Only buffers it saw allocated (or adopted at the start) count; frees and
    relabels of older buffers are ignored. Also remembers which module's
    forward made each buffer a saved activation. The recorded steps are
    *segments* of the event list, one per measured batch size.
    """

    def __init__(self):
        self.phase = "setup"
        self.module_stack: list[str] = []
        self.sizes: dict[int, int] = {}
        self.tags: dict[int, str] = {}
        self.owner: dict[int, str] = {}
        self.signature: list[tuple] = []  # (kind, phase, from category, to category) per event
        self.nbytes: list[int] = []
        self.segments: list[dict] = []  # per recorded step: start, end, marks {phase: end}, saved {layer: bytes}

    def __call__(self, event):
        bid = event.buffer_id
        if event.event == "alloc":
            self.sizes[bid] = event.nbytes
            self._note(bid, event.tag)
            self._add("alloc", None, category_of(event.tag), event.nbytes)
        elif bid not in self.sizes:
            return
        elif event.event == "free":
            self._add("free", category_of(self.tags.pop(bid)), None, self.sizes.pop(bid))
            self.owner.pop(bid, None)
        else:  # retag
            before = self.tags[bid]
            self._note(bid, event.tag)
            self._add("retag", category_of(before), category_of(event.tag), self.sizes[bid])

    def adopt(self, bid: int, nbytes: int, tag: str) -> None:
        """Count a buffer that was already reported before this recorder started."""
        self.sizes[bid] = nbytes
        self.tags[bid] = tag
        self._add("alloc", None, category_of(tag), nbytes)

    def _note(self, bid: int, tag: str) -> None:
        self.tags[bid] = tag
        if tag == buffers.ACTIVATION and bid not in self.owner:
            self.owner[bid] = self.module_stack[-1] if self.module_stack else "(outside any module)"

    def _add(self, kind, source, target, nbytes) -> None:
        self.signature.append((kind, self.phase, source, target))
        self.nbytes.append(nbytes)

    def begin(self, phase: str) -> None:
        self.phase = phase

    def end(self) -> None:
        """Close the current phase (of the current segment, if one is open)."""
        if self.segments and self.segments[-1]["end"] is None:
            segment = self.segments[-1]
            segment["marks"][self.phase] = len(self.nbytes) - segment["start"]

    def saved_by_module(self) -> dict[str, int]:
        """Bytes of the live buffers kept for backward, by the module whose forward kept them."""
        out: dict[str, int] = {}
        for bid, name in self.owner.items():
            if self.tags.get(bid) == buffers.ACTIVATION:
                out[name] = out.get(name, 0) + self.sizes[bid]
        return out

    def totals(self) -> np.ndarray:
        """(events, categories) array: each category's live bytes after each event."""
        deltas = np.zeros((len(self.nbytes), len(CATEGORIES)), dtype=np.int64)
        for i, ((_, _, source, target), n) in enumerate(zip(self.signature, self.nbytes)):
            if source is not None:
                deltas[i, _INDEX[source]] -= n
            if target is not None:
                deltas[i, _INDEX[target]] += n
        return np.cumsum(deltas, axis=0)


def instrument(model, recorder: _Recorder) -> None:
    """Make each module of ``model`` (a private copy) push its name while its forward runs."""
    for name, module in model.named_modules():
        label = f"{name} ({type(module).__name__})" if name else f"(model: {type(module).__name__})"

        def forward(*args, _run=module.forward, _name=label, **kwargs):
            recorder.module_stack.append(_name)
            try:
                return _run(*args, **kwargs)
            finally:
                recorder.module_stack.pop()
        object.__setattr__(module, "forward", forward)


def adopt(recorder: _Recorder, tensor, tag: str) -> None:
    buffers.set_buffer_tag(tensor, tag)
    bid = buffers.buffer_id(tensor)
    if bid is not None and bid not in recorder.sizes:
        nbytes, known_tag, _ = buffers.live_buffers()[bid]
        recorder.adopt(bid, nbytes, known_tag)


def record_steps(model, input_shape, batches, make_optimizer, loss_fn, forward, dtype, device, set_to_none,
                 accumulation_steps):
    """Train a copy of ``model`` for one warm-up step, then one recorded step at each of ``batches``.

    The warm-up step (at the smallest batch: batch norm refuses one example)
    allocates the optimizer's state, so every recorded step is a steady-state step. A step is the loop of
    :func:`minigrad.training.fit`: for each micro-batch the next batch is made
    while the previous one is still held, forward, loss, backward; after the
    last one the optimizer step and ``zero_grad``; the logits, the loss and
    the batch are let go at the end of each micro-batch. With accumulation,
    micro-batches 2, 3, ... all see the same memory (the gradients exist
    before their backward), so two micro-batches stand for any number.
    """
    work = copy.deepcopy(model)
    if dtype is not None:
        work.to(dtype)
    for p in work.parameters():
        p.grad = None
    x_dtype = dtype or next((p.dtype for p in work.parameters() if mt.is_floating_point(p.dtype)), None)
    recorder = Recorder()
    instrument(work, recorder)
    classes = None
    micro_batches = [""] if accumulation_steps == 1 else ["", " of micro-batches 2+"]

    def make_batch(batch):
        x = mt.randn(batch, *input_shape, dtype=x_dtype, device=device)
        buffers.set_buffer_tag(x, INPUT_TAG)
        if classes is None:
            return x, None
        y = mt.randint(0, classes, (batch,), device=device)
        buffers.set_buffer_tag(y, INPUT_TAG)
        return x, y

    handle = listeners.add_allocation_observer(recorder)
    try:
        for p in work.parameters():
            adopt(recorder, p, "parameter")
        for b in work.buffers():
            adopt(recorder, b, "buffer")
        optimizer = make_optimizer(list(work.parameters()))
        optimizer.zero_grad(set_to_none=set_to_none)
        for index, batch in enumerate((batches[0], *batches)):  # a warm-up step, then the recorded ones
            if index:
                recorder.segments.append({"start": len(recorder.nbytes), "end": None, "marks": {}, "saved": None})
            for micro, suffix in enumerate(micro_batches):
                recorder.begin("data" + suffix)
                previous = make_batch(batch)  # the previous batch, still held by the loop
                x, y = make_batch(batch)
                del previous
                recorder.end()
                recorder.begin("forward" + suffix)
                output = forward(work, x)
                if index == 0 and classes is None and output.ndim == 2:
                    classes = int(output.shape[1])
                    y = make_batch(batch)[1]
                recorder.module_stack.append("(loss)")
                loss = loss_fn(output, y)
                recorder.module_stack.pop()
                recorder.end()
                if index and not micro:
                    recorder.segments[-1]["saved"] = recorder.saved_by_module()
                recorder.begin("backward" + suffix)
                (loss * (1.0 / accumulation_steps) if accumulation_steps > 1 else loss).backward()
                recorder.end()
                if micro == len(micro_batches) - 1:
                    recorder.begin("optimizer step")
                    optimizer.step()
                    recorder.end()
                    recorder.begin("zero_grad")
                    optimizer.zero_grad(set_to_none=set_to_none)
                    recorder.end()
                recorder.begin("release" + suffix)
                del output, loss, x, y
                recorder.end()
            if index:
                recorder.segments[-1]["end"] = len(recorder.nbytes)
    finally:
        handle.remove()
    return recorder
