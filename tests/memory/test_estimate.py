"""``estimate``: checked against the peak really measured by an allocation observer during full-size steps.

The real runs below are a hand-written training loop (zero_grad, forward,
loss, backward, step; twice, so that the second step has Adam's state) and
:func:`minigrad.training.fit` itself, with the garbage collector on, measured
by a ledger of the allocation observer's events from the moment the model exists.
"""

import time

import numpy as np
import pytest

import minigrad.memory as mm
import minigrad.tensor as mt
from minigrad import nn, optim
from minigrad.data import DataLoader, TensorDataset
from minigrad.memory.estimate import CATEGORIES, EstimateError, estimate, format_bytes
from minigrad.memory.profiles import PROFILES
from minigrad.testing import strict_backend
from minigrad.training.fit import fit
from minigrad.training.recipes import mnist_cnn, mnist_mlp

GiB = 1024**3


class PeakLedger:
    """Running total of the buffers seen allocated since it started, and its peak."""

    def __init__(self):
        self.sizes: dict[int, int] = {}
        self.total = self.peak = 0

    def __call__(self, event):
        if event.event == "alloc":
            self.sizes[event.buffer_id] = event.nbytes
            self.total += event.nbytes
            self.peak = max(self.peak, self.total)
        elif event.event == "free" and event.buffer_id in self.sizes:
            self.total -= self.sizes.pop(event.buffer_id)


def measured_peak(build, batch, make_optimizer, steps=2):
    """Peak bytes of ``steps`` real training steps at ``batch`` (model and optimizer included)."""
    ledger = PeakLedger()
    with mm.add_allocation_observer(ledger):
        mt.manual_seed(0)
        model = build()
        ledger.peak = ledger.total  # what building the model allocated and dropped is no part of a step
        optimizer = make_optimizer(model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        x = y = None
        for _ in range(steps):
            x, y = mt.randn(batch, 1, 28, 28), mt.randint(0, 10, (batch,))  # the next batch, as a loader gives it
            optimizer.zero_grad()
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
            del logits, loss
    return ledger.peak


def parameter_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


CASES = {
    "mlp-128-adam": (mnist_mlp, 128, "adam", lambda p: optim.Adam(p)),
    "mlp-128-sgd": (mnist_mlp, 128, "sgd", lambda p: optim.SGD(p, lr=0.01)),
    "cnn-64-adam": (mnist_cnn, 64, "adam", lambda p: optim.Adam(p)),
    "cnn-1024-adam": (mnist_cnn, 1024, "adam", lambda p: optim.Adam(p)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_estimate_matches_the_measured_peak(case):
    build, batch, name, make_optimizer = CASES[case]
    predicted = estimate(build(), (1, 28, 28), batch, optimizer=name)
    real = measured_peak(build, batch, make_optimizer)
    assert abs(predicted.peak - real) <= 0.05 * real, (predicted.peak, real)
    assert predicted.peak == real  # the extrapolation is exact, not only close
    assert sum(predicted.peak_by_category.values()) == predicted.peak


def batchnorm_dropout_cnn():
    """The chapter-06 CNN with batch norm after the convs and dropout before the classifier."""
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, kernel_size=3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(16 * 5 * 5, 10),
    )


def fit_peak(build, batch, make_optimizer, accumulation_steps=1, batches=3):
    """Peak bytes of one epoch of ``fit`` over ``batches`` random MNIST-shaped batches (model and optimizer included)."""
    rng = np.random.default_rng(0)
    data = TensorDataset(rng.standard_normal((batch * batches, 1, 28, 28), dtype=np.float32),
                         rng.integers(0, 10, batch * batches))
    loader = DataLoader(data, batch_size=batch, prefetch=0)  # no thread making batches ahead
    ledger = PeakLedger()
    with mm.add_allocation_observer(ledger):
        model = build()
        optimizer = make_optimizer(model.parameters())
        ledger.peak = ledger.total
        fit(model, optimizer, loader, nn.CrossEntropyLoss(), 1, accumulation_steps=accumulation_steps,
            progress=False, print_epochs=False)
    return ledger.peak


FIT_CASES = {
    "mlp-128-adam": (mnist_mlp, 128, "adam", lambda p: optim.Adam(p), 1),
    "cnn-64-adam": (mnist_cnn, 64, "adam", lambda p: optim.Adam(p), 1),
    "cnn-256x4-adam": (mnist_cnn, 256, "adam", lambda p: optim.Adam(p), 4),
    "mlp-128x2-sgd": (mnist_mlp, 128, "sgd", lambda p: optim.SGD(p, lr=0.01), 2),
    "bn-dropout-cnn-96-momentum": (batchnorm_dropout_cnn, 96, "sgd-momentum",
                                   lambda p: optim.SGD(p, lr=0.01, momentum=0.9), 1),
}


@pytest.mark.parametrize("case", list(FIT_CASES))
def test_estimate_matches_the_peak_of_fit(case):
    build, batch, name, make_optimizer, accumulation_steps = FIT_CASES[case]
    predicted = estimate(build(), (1, 28, 28), batch, optimizer=name, accumulation_steps=accumulation_steps)
    real = fit_peak(build, batch, make_optimizer, accumulation_steps, batches=max(3, 2 * accumulation_steps))
    assert predicted.peak == real, (predicted.peak, real)


def test_accumulation_lowers_the_peak_at_the_same_effective_batch():
    whole = estimate(mnist_cnn(), (1, 28, 28), 2048)
    accumulated = estimate(mnist_cnn(), (1, 28, 28), 512, accumulation_steps=4)
    assert accumulated.peak < whole.peak / 3
    assert "backward" in accumulated.peak_phase and "x 4 accumulated micro-batches" in str(accumulated)
    with pytest.raises(ValueError, match="accumulation_steps must be a whole number >= 1"):
        estimate(mnist_cnn(), (1, 28, 28), 8, accumulation_steps=0)


def test_a_scaled_loss_backward_can_be_observed():
    """The gradient of ``loss * 0.25`` flows as a NumPy scalar: not a buffer, and no error under an observer."""
    seen = []
    x = mt.randn(4, 3, requires_grad=True)
    with mm.add_allocation_observer(seen.append):
        ((x * x).sum() * 0.25).backward()
    assert x.grad is not None and any(e.tag == "gradient" for e in seen)


@pytest.mark.parametrize("name, state_per_parameter", [("adam", 2), ("sgd", 0), ("sgd-momentum", 1)])
def test_parameters_gradients_and_optimizer_state(name, state_per_parameter):
    model = mnist_mlp()
    result = estimate(model, (1, 28, 28), 128, optimizer=name)
    size = parameter_bytes(model)
    assert result.parameters == result.gradients == size
    assert result.optimizer_state == state_per_parameter * size
    assert result.inputs == 128 * 28 * 28 * 4 + 128 * 8  # float32 images, int64 targets


def test_activations_by_layer_name_what_each_layer_saves():
    result = estimate(mnist_mlp(), (1, 28, 28), 128)
    saved = result.activations_by_layer
    # each ReLU keeps its (batch, width) output, which the next Linear keeps too (counted once); the first
    # Linear keeps the input batch (an input); the loss keeps its softmax
    assert saved == {"2 (ReLU)": 128 * 256 * 4, "4 (ReLU)": 128 * 128 * 4, "(loss)": 128 * 10 * 4}
    assert sum(saved.values()) <= result.activations


@pytest.mark.parametrize("build, shape, batch", [(mnist_cnn, (1, 28, 28), 8192)])
def test_a_gigabyte_configuration_takes_seconds(build, shape, batch):
    started = time.perf_counter()
    result = estimate(build(), shape, batch)
    elapsed = time.perf_counter() - started
    assert result.peak > GiB
    assert elapsed < 10, elapsed
    assert not result.fits("gtx1050") and result.fits("t4")


def vgg_style(width=4, classes=10):
    """VGG's pattern on 224x224 images: blocks of two 3x3 convs and a 2x2 pool, channels doubling, then linear."""
    layers, channels = [], 3
    for out in (width, 2 * width, 4 * width, 8 * width, 8 * width):
        layers += [nn.Conv2d(channels, out, 3, padding=1), nn.ReLU(), nn.Conv2d(out, out, 3, padding=1), nn.ReLU(),
                   nn.MaxPool2d(2)]
        channels = out
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * 7 * 7, classes))


def test_a_vgg_style_network_on_224_images_costs_eighteen_examples():
    """The estimate at batch 128 (3.2 GB) runs the network on 2 + 2 + 3 + 4 examples, whatever the batch size,
    and checks the affine law on the largest prime batch whose step costs at most 256 MiB (7 here).

    Its cost is counted rather than timed: on this shared machine the same
    estimate takes 3 to 6 s of CPU and 7 to 15 s of wall clock from one run to
    the next (the timed gigabyte configuration is the test above).
    """
    examples = []

    def forward(model, x):
        examples.append(x.shape[0])
        return model(x)

    result = estimate(vgg_style(), (3, 224, 224), 128, optimizer="sgd-momentum", checkpoint=forward)
    assert examples == [2, 2, 3, 4, 7]  # a warm-up step, the three measured ones, the check
    assert result.measured_batches == (2, 3, 4, 7)
    assert result.peak > 3 * GiB
    first_conv = result.activations_by_layer["0 (Conv2d)"]
    assert first_conv >= 128 * 224 * 224 * 27 * 4  # its im2col matrix
    assert not result.fits("gtx1050") and result.fits("rtx3060")


def test_the_model_and_the_random_state_are_left_alone():
    model = mnist_cnn()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    state = mt.get_rng_state()
    estimate(model, (1, 28, 28), 32)
    assert all(np.array_equal(b, p.detach().numpy()) and p.grad is None for b, p in zip(before, model.parameters()))
    assert np.array_equal(mt.get_rng_state(), state)


def test_float16_halves_what_is_stored_in_floats_and_stays_quiet(recwarn):
    single = estimate(mnist_cnn(), (1, 28, 28), 256)
    half = estimate(mnist_cnn(), (1, 28, 28), 256, dtype="float16")  # Adam's eps underflows: NaNs, never a warning
    assert half.parameters * 2 == single.parameters and half.optimizer_state * 2 == single.optimizer_state
    assert half.inputs == 256 * 28 * 28 * 2 + 256 * 8  # float16 images, int64 targets
    assert 0.45 < half.activations / single.activations < 0.55
    # below half: a float16 convolution's backward adds its im2col gradient into the input's one tap at a time
    assert 0.3 < half.peak / single.peak < 0.55
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_an_estimate_made_while_another_observer_listens_is_the_same():
    alone = estimate(mnist_cnn(), (1, 28, 28), 128)
    events = []
    with mm.add_allocation_observer(events.append):
        model = mnist_cnn()
        observed = estimate(model, (1, 28, 28), 128)
    assert observed.peak == alone.peak and observed.parameters == alone.parameters == parameter_bytes(model)
    assert events  # the other observer saw the measurement too


def test_a_batch_of_one_is_overestimated_by_at_most_a_few_percent():
    """NumPy reshapes some arrays of a batch of one without a copy; the extrapolation counts the copy."""
    for build in (mnist_cnn, mnist_mlp):
        predicted = estimate(build(), (1, 28, 28), 1).peak
        real = fit_peak(build, 1, lambda p: optim.Adam(p))
        assert real <= predicted <= 1.05 * real, (build.__name__, predicted, real)


def test_a_model_that_refuses_a_batch_of_one_is_measured():
    """BatchNorm1d in training mode needs two examples or more: the estimate never runs it on one."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10))
    result = estimate(model, (1, 28, 28), 100)
    assert result.other == 2 * 64 * 4 + 8  # running mean and variance, and the batch counter
    assert result.peak == fit_peak(lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(784, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10)), 100,
        lambda p: optim.Adam(p))


def test_a_model_on_another_device_is_measured_there_with_the_same_figures():
    """The strict test device's arrays refuse to become NumPy, as CuPy's do: the estimate never needs the host."""
    device = strict_backend.register()
    on_device = estimate(mnist_cnn().to(device), (1, 28, 28), 64)
    assert on_device.peak == estimate(mnist_cnn(), (1, 28, 28), 64).peak


def test_to_dict_holds_every_figure():
    result = estimate(mnist_mlp(), (1, 28, 28), 32)
    figures = result.to_dict()
    assert figures["peak"] == result.peak and figures["batch_size"] == 32
    assert sum(figures["peak_by_category"].values()) == figures["peak"]
    assert figures["activations_by_layer"] == result.activations_by_layer


def test_dtype_changes_every_floating_point_figure():
    single = estimate(mnist_mlp(), (1, 28, 28), 64)
    double = estimate(mnist_mlp(), (1, 28, 28), 64, dtype="float64")
    assert double.parameters == 2 * single.parameters
    assert double.optimizer_state == 2 * single.optimizer_state
    assert double.dtype == "float64"


def test_checkpoint_runs_the_forward_pass():
    calls = []

    def run(model, x):
        calls.append(x.shape[0])
        return model(x)

    plain = estimate(mnist_mlp(), (1, 28, 28), 64)
    through = estimate(mnist_mlp(), (1, 28, 28), 64, checkpoint=run)
    assert through.peak == plain.peak and {2, 3, 4, 67} <= set(calls)


def test_at_and_max_batch_size_agree_with_the_budget():
    result = estimate(mnist_cnn(), (1, 28, 28), 64)
    gtx1050 = PROFILES["gtx1050"]
    largest = result.max_batch_size(gtx1050)
    assert result.at(largest).fits(gtx1050) and not result.at(largest + 1).fits(gtx1050)
    # the card decides in reserved bytes: below the largest batch whose tensors alone fit
    by_allocated = result.max_batch_size_by_allocated(gtx1050)
    assert largest < by_allocated
    assert result.at(by_allocated).peak <= gtx1050.usable_bytes < result.at(by_allocated + 1).peak
    assert result.at(largest).replay(gtx1050).peak_reserved <= gtx1050.usable_bytes
    assert result.at(64).peak == result.peak and result.at(128).batch_size == 128


def test_the_table_reads_well():
    text = str(estimate(mnist_cnn(), (1, 28, 28), 64))
    for line in ("batch 64", "parameters", "gradients", "optimizer state", "activations", "0 (Conv2d)", "peak of the step",
                 "reserved by the caching allocator", "train mode", "measured at batches 2, 3, 4, 67"):
        assert line in text, line
    assert "fits" in estimate(mnist_cnn(), (1, 28, 28), 64).fit_report("gtx1050")
    assert format_bytes(1536) == "1.50 KiB" and format_bytes(3 * GiB) == "3.00 GiB" and format_bytes(12) == "12 B"
    assert CATEGORIES == ("parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "other")


class PairwiseScores(nn.Module):
    """Compares every example with every other: a (batch, batch) matrix, quadratic in the batch size."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        h = self.linear(x)
        return (h @ h.T).sum(dim=1, keepdim=True) * h


def test_memory_that_is_not_affine_in_the_batch_is_refused():
    with pytest.raises(EstimateError, match="not affine in the batch size"):
        estimate(PairwiseScores(), (4,), 1000)


class CopiesLargeBatches(nn.Module):
    """Makes one more buffer from batch 3 on: the sequence of allocations depends on the batch size."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x * 1.0 if x.shape[0] > 2 else x)


def test_a_step_that_changes_with_the_batch_size_is_refused():
    with pytest.raises(EstimateError, match=r"different sequence of buffers at batches \(2, 3, 4, 67\).*forward phase"):
        estimate(CopiesLargeBatches(), (4,), 1000)


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="unknown optimizer 'adamax'.*adam, "):
        estimate(mnist_mlp(), (1, 28, 28), 8, optimizer="adamax")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        estimate(mnist_mlp(), (1, 28, 28), 0)
    with pytest.raises(TypeError, match="checkpoint must be None or a callable"):
        estimate(mnist_mlp(), (1, 28, 28), 8, checkpoint="yes")


class PadsTheBatchTo64(nn.Module):
    """Pads its batch with zero rows to a multiple of 64 (as bucketing code does): constant at batches 2, 3 and 4."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(784, 2000)
        self.head = nn.Linear(2000, 10)

    def forward(self, x):
        rows = -(-x.shape[0] // 64) * 64
        padded = mt.cat([x, mt.zeros(rows - x.shape[0], x.shape[1])]) if rows > x.shape[0] else x
        return self.head(self.linear(padded).relu())[: x.shape[0]]


def test_a_module_that_pads_its_batch_is_caught_by_the_check_batch():
    with pytest.raises(EstimateError, match=r"(?s)the input bytes of the step are not affine.*batches \(2, 3, 4, 67\)"):
        estimate(PadsTheBatchTo64(), (784,), 256)
    checked = estimate(mnist_mlp(), (1, 28, 28), 256)
    assert checked.measured_batches == (2, 3, 4, 67) and "measured at batches 2, 3, 4, 67" in str(checked)


def test_the_step_is_measured_in_training_mode_whatever_the_models_mode():
    model = batchnorm_dropout_cnn()
    trained = estimate(model, (1, 28, 28), 96)
    model.eval()
    again = estimate(model, (1, 28, 28), 96)
    assert not model.training and all(not m.training for m in model.modules())  # the caller's mode is kept
    assert again.peak == trained.peak and again.mode == "train" and "train mode" in repr(again)
    evaluating = estimate(model, (1, 28, 28), 96, mode="eval")
    assert evaluating.mode == "eval" and "eval mode" in str(evaluating)
    assert "9 (Dropout)" in trained.activations_by_layer and "9 (Dropout)" not in evaluating.activations_by_layer
    with pytest.raises(ValueError, match="mode must be 'train' or 'eval'"):
        estimate(model, (1, 28, 28), 96, mode="training")


def test_nothing_of_an_estimate_outlives_it():
    """No phantom parameters on the next card or tracker, and no garbage collection needed for it."""
    from minigrad.memory import buffers, simulated_gpu, track

    import gc

    model = mnist_cnn()
    before = set(buffers.live_buffers())
    gc.disable()  # no collection may happen to tidy up after the estimate while this test looks
    try:
        estimate(model, (1, 28, 28), 64)
        assert set(buffers.live_buffers()) == before
        assert not any("forward" in vars(m) for m in model.modules())
        with simulated_gpu("gtx1050") as gpu:
            assert gpu.current == 0
        with track(tracemalloc=False) as mem:
            pass
        assert mem.current == 0
    finally:
        gc.enable()
