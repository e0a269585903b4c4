"""Peak against micro-batch size at one effective batch: read from two estimates, equal to real accumulated steps."""

import pytest

import minigrad.memory as mm
import minigrad.tensor as mt
from minigrad.memory.accumulation import (
    accumulation_estimates, estimate_at, fewest_steps_that_fit, measure_accumulated_peak, peak_by_micro_batch,
)
from minigrad.memory.estimate import estimate
from minigrad.memory.profiles import get_profile
from minigrad.training.recipes import mnist_cnn, mnist_mlp

SHAPE = (1, 28, 28)


@pytest.mark.parametrize("build, micro, steps, optimizer", [
    (mnist_cnn, 64, 4, "adam"),
    (mnist_mlp, 32, 8, "sgd-momentum"),
    (mnist_mlp, 128, 1, "adam"),
])
def test_the_peak_equals_real_steps_through_the_gradient_accumulator(build, micro, steps, optimizer):
    points = peak_by_micro_batch(build(), SHAPE, micro * steps, optimizer=optimizer, micro_batches=[micro])
    assert points[0].peak == measure_accumulated_peak(build, SHAPE, micro, steps, optimizer)


def test_two_estimates_stand_for_any_number_of_steps():
    pair = accumulation_estimates(mnist_cnn(), SHAPE, "sgd")
    for micro, steps in [(48, 3), (16, 8)]:
        direct = estimate(mnist_cnn(), SHAPE, micro, optimizer="sgd", accumulation_steps=steps)
        read = estimate_at(pair, micro, steps)
        assert read.peak == direct.peak and read.peak_by_category == direct.peak_by_category
        assert read.accumulation_steps == steps


def test_every_divisor_largest_micro_batch_first_and_the_peak_falls():
    points = peak_by_micro_batch(mnist_cnn(), SHAPE, 4096)
    assert [p.micro_batch for p in points] == [2**k for k in range(12, -1, -1)]
    assert all(p.effective_batch == 4096 for p in points)
    assert all(a.peak > b.peak for a, b in zip(points, points[1:]))
    assert points[0].steps == 1 and points[0].peak == estimate(mnist_cnn(), SHAPE, 4096).peak
    assert "micro-batches 2+" in points[1].peak_phase  # the gradients exist while the later backward runs


def test_fewest_steps_that_fit_the_card():
    points = peak_by_micro_batch(mnist_cnn(), SHAPE, 16384, micro_batches=[16384, 8192, 4096, 2048])
    best = fewest_steps_that_fit(points, "gtx1050")
    budget = get_profile("gtx1050").usable_bytes
    assert (best.micro_batch, best.steps) == (4096, 4) and best.peak <= budget
    assert all(p.peak > budget for p in points if p.steps < best.steps)
    assert fewest_steps_that_fit(points[:1], "gtx1050") is None


def test_bad_micro_batches_are_refused_with_the_divisors():
    with pytest.raises(ValueError, match=r"\[3\] do not divide the effective batch 64; .*\[1, 2, 4, 8, 16, 32, 64\]"):
        peak_by_micro_batch(mnist_mlp(), SHAPE, 64, micro_batches=[3, 8])
    with pytest.raises(ValueError, match="effective_batch must be a whole number >= 1"):
        peak_by_micro_batch(mnist_mlp(), SHAPE, 0)


def test_measuring_leaves_the_random_state_alone():
    mt.manual_seed(3)
    expected = mt.randn(3).numpy()
    mt.manual_seed(3)
    measure_accumulated_peak(mnist_mlp, SHAPE, 8, 2, "sgd")
    assert (mt.randn(3).numpy() == expected).all()


def test_the_figure_renders_a_bar_per_micro_batch_and_the_capacity_line():
    from minigrad.viz.accumulation_plot import plot_peak_by_micro_batch
    from minigrad.viz.figure_display import figure_png

    points = peak_by_micro_batch(mnist_cnn(), SHAPE, 8192, micro_batches=[8192, 4096, 2048, 1024])
    figure = plot_peak_by_micro_batch(points, "gtx1050")
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["8192", "4096", "2048", "1024"]
    tops, outlines = {}, {}
    for patch in ax.patches:  # stacked bars: the top of each column is its peak; the outline, what is reserved
        x = round(patch.get_x() + patch.get_width() / 2)
        into = tops if patch.get_fill() else outlines
        into[x] = max(into.get(x, 0.0), patch.get_y() + patch.get_height())
    assert [tops[x] for x in range(4)] == pytest.approx([p.peak / 2**20 for p in points])
    assert [outlines[x] for x in range(4)] == pytest.approx([p.reserved / 2**20 for p in points])
    assert all(p.reserved > p.peak for p in points)
    line = ax.get_lines()[0]
    assert line.get_ydata()[0] == pytest.approx(get_profile("gtx1050").usable_bytes / 2**20)
    assert [t.get_text() for t in ax.texts] == ["x1", "x2", "x4", "x8"]
    assert figure_png(figure)[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no points"):
        plot_peak_by_micro_batch([])


def test_buffers_alive_before_the_measurement_are_no_part_of_it():
    expected = peak_by_micro_batch(mnist_mlp(), SHAPE, 64, optimizer="sgd", micro_batches=[32])[0].peak
    with mm.add_allocation_observer(lambda event: None):
        held = mt.randn(1000, 1000)  # reported, and alive throughout
        assert measure_accumulated_peak(mnist_mlp, SHAPE, 32, 2, "sgd") == expected
        del held
