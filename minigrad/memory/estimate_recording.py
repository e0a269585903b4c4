"""Recording training steps for :func:`minigrad.memory.estimate`: every buffer event, its phase and category.

A copy of the model trains under an allocation observer (:mod:`minigrad.memory.buffers`)
that notes, for each event, the categories it moves bytes between, its size,
the phase of the step (data, forward, backward, optimizer step, zero_grad,
release), which earlier event allocated the buffer a free or relabel is
about and, for buffers kept for backward, the module whose forward kept them.
Each recorded step also notes the buffers a simulated card registers when the
model and optimizer are put on it (:func:`card_state`), so that the step's
allocations can be replayed through the card's allocator (:mod:`.fit`).

Nothing of a recording outlives it: the modules of the copy get their own
``forward`` back, and the copy and its optimizer are let go before
:func:`record_steps` returns.
"""

from __future__ import annotations

import copy

import numpy as np

import minigrad.tensor as mt
from minigrad.memory import buffers, listeners
from minigrad.memory.categories import CATEGORIES, category_of
from minigrad.memory.owned import module_tensors, optimizer_tensors

__all__ = ["CATEGORIES", "INPUT_TAG", "category_of", "Recorder", "BatchMaker", "card_state", "training_step",
           "private_copy", "record_steps"]

INPUT_TAG = "input"
_INDEX = {name: i for i, name in enumerate(CATEGORIES)}


class Recorder:
    """An allocation observer that keeps, per event, its phase, the categories it moves bytes between and its size.

    Only buffers it saw allocated (or adopted at the start) count; frees and
    relabels of older buffers are ignored. ``buffer_of[i]`` is the buffer
    event ``i`` is about, so a free can be paired with its allocation. Also
    remembers which module's forward made each buffer a saved activation. The
    recorded steps are *segments* of the event list, one per measured batch size.
    """

    def __init__(self):
        self.phase = "setup"
        self.module_stack: list[str] = []
        self.sizes: dict[int, int] = {}
        self.tags: dict[int, str] = {}
        self.owner: dict[int, str] = {}
        self.signature: list[tuple] = []  # (kind, phase, from category, to category) per event
        self.nbytes: list[int] = []
        self.buffer_of: list[int] = []  # the buffer id of each event
        self.segments: list[dict] = []  # per recorded step: start, end, marks {phase: end}, saved, card state

    def __call__(self, event):
        bid = event.buffer_id
        if event.event == "alloc":
            self.sizes[bid] = event.nbytes
            self._note(bid, event.tag)
            self._add("alloc", None, category_of(event.tag), event.nbytes, bid)
        elif bid not in self.sizes:
            return
        elif event.event == "free":
            self._add("free", category_of(self.tags.pop(bid)), None, self.sizes.pop(bid), bid)
            self.owner.pop(bid, None)
        else:  # retag
            before = self.tags[bid]
            self._note(bid, event.tag)
            self._add("retag", category_of(before), category_of(event.tag), self.sizes[bid], bid)

    def adopt(self, bid: int, nbytes: int, tag: str) -> None:
        """Count a buffer that was already reported before this recorder started."""
        self.sizes[bid] = nbytes
        self.tags[bid] = tag
        self._add("alloc", None, category_of(tag), nbytes, bid)

    def _note(self, bid: int, tag: str) -> None:
        self.tags[bid] = tag
        if tag == buffers.ACTIVATION and bid not in self.owner:
            self.owner[bid] = self.module_stack[-1] if self.module_stack else "(outside any module)"

    def _add(self, kind, source, target, nbytes, bid) -> None:
        self.signature.append((kind, self.phase, source, target))
        self.nbytes.append(nbytes)
        self.buffer_of.append(bid)

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

    def pairing(self, segment: dict) -> list:
        """For each event of ``segment``: None (an allocation), the index in the segment of the allocation a
        free or relabel is about, ``("card", k)`` for the ``k``-th buffer of the card's state, or
        ``("unseen",)`` for an older buffer the card would not know."""
        start, end = segment["start"], segment["end"]
        card = {bid: k for k, (bid, _) in enumerate(segment["card"])}
        allocated_at: dict[int, int] = {}
        out = []
        for i in range(start, end):
            bid = self.buffer_of[i]
            if self.signature[i][0] == "alloc":
                allocated_at[bid] = i - start
                out.append(None)
            elif bid in allocated_at:
                out.append(allocated_at[bid])
            else:
                out.append(("card", card[bid]) if bid in card else ("unseen",))
        return out


def instrument(model, recorder: Recorder) -> None:
    """Make each module of ``model`` (a private copy) push its name while its forward runs (see :func:`restore`)."""
    for name, module in model.named_modules():
        label = f"{name} ({type(module).__name__})" if name else f"(model: {type(module).__name__})"

        def forward(*args, _run=module.forward, _name=label, **kwargs):
            recorder.module_stack.append(_name)
            try:
                return _run(*args, **kwargs)
            finally:
                recorder.module_stack.pop()
        object.__setattr__(module, "forward", forward)


def restore(model) -> None:
    """Give every module its class's ``forward`` back (the instrumented one holds the module: a cycle)."""
    for module in model.modules():
        if "forward" in vars(module):
            object.__delattr__(module, "forward")


def adopt(recorder: Recorder, tensor, tag: str) -> None:
    buffers.set_buffer_tag(tensor, tag)
    bid = buffers.buffer_id(tensor)
    if bid is not None and bid not in recorder.sizes:
        nbytes, known_tag, _ = buffers.live_buffers()[bid]
        recorder.adopt(bid, nbytes, known_tag)


def card_state(model, optimizer) -> list[tuple[int, int]]:
    """``(buffer id, bytes)`` of what ``simulated_gpu(card, model=, optimizer=)`` registers, in its order.

    Parameters, their gradients and the model's buffers, then the optimizer's
    state (:mod:`minigrad.memory.owned`), each buffer once. Every tensor must
    be known to the registry (an observer is listening).
    """
    live = buffers.live_buffers()
    seen, out = set(), []
    for tensor, _tag in (*module_tensors(model), *optimizer_tensors(optimizer)):
        bid = None if tensor is None else buffers.buffer_id(tensor)
        if bid is not None and bid not in seen:
            seen.add(bid)
            out.append((bid, live[bid][0]))
    return out


class BatchMaker:
    """Random batches of ``input_shape`` examples (tagged ``input``), with class targets once ``classes`` is known."""

    def __init__(self, input_shape, dtype, device, classes=None):
        self.input_shape, self.dtype, self.device, self.classes = tuple(input_shape), dtype, device, classes

    def __call__(self, batch: int):
        x = mt.randn(batch, *self.input_shape, dtype=self.dtype, device=self.device)
        buffers.set_buffer_tag(x, INPUT_TAG)
        if self.classes is None:
            return x, None
        y = mt.randint(0, self.classes, (batch,), device=self.device)
        buffers.set_buffer_tag(y, INPUT_TAG)
        return x, y


def _check_output(output, loss_fn, default_loss) -> None:
    if isinstance(output, mt.Tensor) or loss_fn is not default_loss:
        return
    kind = type(output).__name__
    raise TypeError(
        f"estimate: the model returned a {kind}, not a Tensor, and the default loss needs the logits; pass "
        f"checkpoint=lambda model, x: model(x)[0] to pick the output the loss uses, or a loss_fn(output, target) "
        f"that takes the {kind}")


def _check_loss(loss) -> None:
    if isinstance(loss, mt.Tensor) and loss.requires_grad:
        return
    what = (f"a {type(loss).__name__}" if not isinstance(loss, mt.Tensor) else "a Tensor with no graph")
    raise TypeError(
        f"estimate: loss_fn returned {what}; it must return the loss as a minigrad Tensor that backward() can "
        f"differentiate: compute it with minigrad ops (e.g. nn.functional.cross_entropy(output, target)) and "
        f"do not call .item() or float() on it")


def training_step(work, optimizer, make_batch, batch: int, loss_fn, forward, accumulation_steps: int,
                  set_to_none: bool, begin=None, end=None, after_forward=None, after_loss=None,
                  default_loss=None) -> None:
    """One step of the loop of :func:`minigrad.training.fit`, the step :func:`estimate` measures.

    For each micro-batch the next batch is made while the previous one is
    still held, forward, loss, backward; after the last one the optimizer
    step and ``zero_grad``; the logits, the loss and the batch are let go at
    the end of each micro-batch. ``accumulation_steps`` micro-batches (the
    recorder runs two: the second stands for every later one). ``begin(phase)``,
    ``end()`` mark the phases; ``after_forward(micro, output, targets)`` runs
    after each forward pass and returns the targets to use, ``after_loss(micro)``
    once the loss is computed.
    """
    begin = begin or (lambda phase: None)
    end = end or (lambda: None)
    for micro in range(accumulation_steps):
        suffix = "" if micro == 0 else " of micro-batches 2+"
        begin("data" + suffix)
        previous = make_batch(batch)  # the previous batch, still held by the loop
        x, y = make_batch(batch)
        del previous
        end()
        begin("forward" + suffix)
        output = forward(work, x)
        _check_output(output, loss_fn, default_loss)
        if after_forward is not None:
            y = after_forward(micro, output, y)
        loss = loss_fn(output, y)
        _check_loss(loss)
        if after_loss is not None:
            after_loss(micro)
        end()
        begin("backward" + suffix)
        (loss * (1.0 / accumulation_steps) if accumulation_steps > 1 else loss).backward()
        end()
        if micro == accumulation_steps - 1:
            begin("optimizer step")
            optimizer.step()
            end()
            begin("zero_grad")
            optimizer.zero_grad(set_to_none=set_to_none)
            end()
        begin("release" + suffix)
        del output, loss, x, y
        end()


def private_copy(model, dtype, mode: str):
    """A copy of ``model`` to train (``dtype``, ``mode`` "train" or "eval"), without gradients."""
    work = copy.deepcopy(model)
    if dtype is not None:
        work.to(dtype)
    work.train(mode == "train")
    for p in work.parameters():
        p.grad = None
    return work


def record_steps(model, input_shape, batches, make_optimizer, loss_fn, forward, dtype, device, set_to_none,
                 accumulation_steps, mode: str = "train", default_loss=None, choose_check=None):
    """Train a copy of ``model`` for one warm-up step, then one recorded step at each of ``batches``.

    The warm-up step (at the smallest batch: batch norm refuses one example)
    allocates the optimizer's state, so every recorded step is a steady-state
    step (:func:`training_step`). ``choose_check(recorder)``, called after
    them, may name one more batch to record (``recorder.check_batch``). With accumulation, micro-batches 2, 3, ...
    all see the same memory (the gradients exist before their backward), so
    two micro-batches stand for any number.
    """
    work = private_copy(model, dtype, mode)
    x_dtype = dtype or next((p.dtype for p in work.parameters() if mt.is_floating_point(p.dtype)), None)
    recorder = Recorder()
    recorder.check_batch = None

    def all_batches():
        yield from (batches[0], *batches)  # a warm-up step, then the recorded ones
        extra = choose_check(recorder) if choose_check is not None else None
        if extra is not None:
            recorder.check_batch = extra
            yield extra

    make_batch = BatchMaker(input_shape, x_dtype, device)
    micro_batches = 1 if accumulation_steps == 1 else 2
    optimizer = None
    handle = listeners.add_allocation_observer(recorder)
    try:
        instrument(work, recorder)
        for p in work.parameters():
            adopt(recorder, p, "parameter")
        for b in work.buffers():
            adopt(recorder, b, "buffer")
        optimizer = make_optimizer(list(work.parameters()))
        optimizer.zero_grad(set_to_none=set_to_none)
        for index, batch in enumerate(all_batches()):

            def after_forward(micro, output, y, index=index):
                if index == 0 and make_batch.classes is None and isinstance(output, mt.Tensor) and output.ndim == 2:
                    make_batch.classes = int(output.shape[1])
                    y = make_batch(output.shape[0])[1]
                recorder.module_stack.append("(loss)")  # what the loss saves is the loss's
                return y

            def after_loss(micro, index=index):
                recorder.module_stack.pop()
                if index and not micro:
                    recorder.segments[-1]["saved"] = recorder.saved_by_module()

            if index:
                recorder.segments.append({"start": len(recorder.nbytes), "end": None, "marks": {}, "saved": None,
                                          "card": card_state(work, optimizer)})
            training_step(work, optimizer, make_batch, batch, loss_fn, forward, micro_batches, set_to_none,
                          begin=recorder.begin, end=recorder.end, after_forward=after_forward, after_loss=after_loss,
                          default_loss=default_loss)
            if index:
                recorder.segments[-1]["end"] = len(recorder.nbytes)
    finally:
        handle.remove()
        restore(work)
        recorder.module_stack.clear()
        del work, optimizer
    return recorder
