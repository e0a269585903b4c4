"""Chapter-06 pictures: the im2col SVG, learned filters and feature maps."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import minigrad.nn as nn
import minigrad.tensor as mt
from minigrad.nn.functional.conv import conv_output_size
from minigrad.viz import draw_im2col, feature_maps, im2col_indices, plot_feature_maps, plot_filters
from minigrad.viz.conv_pictures import WINDOW_COLOURS, conv_geometry

GEOMETRIES = [
    # input, kernel, stride, padding, dilation
    (4, 3, 1, 0, 1),
    (5, 3, 2, 1, 1),
    (5, 2, 1, 0, 2),
    ((4, 6), (2, 3), (1, 2), (1, 0), 1),
    (7, 3, 2, 1, 1),
]


def _loop_indices(input_size, kernel, stride, padding, dilation) -> np.ndarray:
    g = conv_geometry(input_size, kernel, stride, padding, dilation)
    (H, W), (kh, kw), (sh, sw), (ph, pw), (dh, dw), (Ho, Wo) = (
        g["input"], g["kernel"], g["stride"], g["padding"], g["dilation"], g["output"])
    rows = []
    for oh, ow in itertools.product(range(Ho), range(Wo)):
        row = []
        for i, j in itertools.product(range(kh), range(kw)):
            h, w = oh * sh + i * dh - ph, ow * sw + j * dw - pw
            row.append(h * W + w if 0 <= h < H and 0 <= w < W else -1)
        rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("args", GEOMETRIES)
def test_im2col_indices_match_the_loop_and_the_output_size(args):
    input_size, kernel, stride, padding, dilation = args
    got = im2col_indices(*args)
    g = conv_geometry(*args)
    Ho = conv_output_size(g["input"][0], g["kernel"][0], g["stride"][0], g["padding"][0], g["dilation"][0])
    Wo = conv_output_size(g["input"][1], g["kernel"][1], g["stride"][1], g["padding"][1], g["dilation"][1])
    assert g["output"] == (Ho, Wo)
    assert got.shape == (Ho * Wo, g["kernel"][0] * g["kernel"][1])
    np.testing.assert_array_equal(got, _loop_indices(*args))


@pytest.mark.parametrize("args", GEOMETRIES)
def test_draw_im2col_is_deterministic_valid_svg(args):
    first, second = draw_im2col(*args).svg, draw_im2col(*args).svg
    assert first == second
    root = ET.fromstring(first)
    assert root.tag.endswith("svg")
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0


def test_draw_im2col_colours_each_row_like_its_window():
    svg = draw_im2col(4, 3).svg
    # 2x2 outputs: four window colours, each used for its 9 cells in the panels and its 9 cells in the matrix
    for fill, _ in WINDOW_COLOURS[:4]:
        assert svg.count(f'fill="{fill}"') >= 9 + 9 + 2  # panel window, matrix row, output cell and grid cell
    assert WINDOW_COLOURS[4][0] not in svg
    assert "out[1,1]" in svg and "(4 x 9)" in svg


def test_draw_im2col_marks_padding_and_its_labels_follow_the_input():
    svg = draw_im2col(3, 3, padding=1).svg
    assert 'stroke-dasharray="3 2"' in svg  # padding cells are dashed
    assert ">8</text>" in svg and ">9</text>" not in svg  # a 3x3 input has cells 0..8


@pytest.mark.parametrize("kwargs, message", [
    (dict(input_size=2, kernel_size=3), "does not fit"),
    (dict(input_size=12, kernel_size=3), "too large"),
    (dict(input_size=4, kernel_size=3, stride=0), ">= 1"),
    (dict(input_size=(4, 4, 4), kernel_size=3), "pair"),
])
def test_draw_im2col_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        draw_im2col(**kwargs)


def test_plot_filters_draws_one_image_per_kernel():
    conv = nn.Conv2d(1, 10, 5, generator=0)
    fig = plot_filters(conv.weight, ncols=4)
    assert isinstance(fig, Figure)
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 10
    assert images[0].get_array().shape == (5, 5)
    np.testing.assert_allclose(images[3].get_array(), conv.weight.detach().numpy()[3, 0])
    low, high = images[0].get_clim()
    assert low == -high  # one symmetric colour scale


def test_plot_filters_takes_arrays_and_rejects_bad_shapes():
    assert isinstance(plot_filters(np.ones((3, 2, 3, 3)), channel=1), Figure)
    with pytest.raises(ValueError, match="expected a weight"):
        plot_filters(np.ones((3, 3)))
    with pytest.raises(ValueError, match="channel"):
        plot_filters(np.ones((3, 2, 3, 3)), channel=2)


def _cnn():
    mt.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3), nn.ReLU(),
        nn.Flatten(), nn.Linear(6 * 3 * 3, 10),
    )


def test_feature_maps_shapes_and_mode_restored():
    model = _cnn()
    image = np.random.default_rng(0).random((1, 1, 12, 12)).astype(np.float32)
    maps = feature_maps(model, image)
    shapes = [m.shape for _, m in maps]
    assert shapes == [(4, 10, 10), (4, 10, 10), (4, 5, 5), (6, 3, 3), (6, 3, 3)]  # Flatten and Linear are not images
    assert maps[0][0].startswith("0: Conv2d")
    assert model.training  # put back in training mode
    x = mt.tensor(image)
    with mt.no_grad():
        np.testing.assert_allclose(maps[2][1], model[:3](x).numpy()[0], rtol=1e-6)
    assert [name for name, _ in feature_maps(model, image[0, 0], layers=[0, 4])] == ["0: Conv2d(1, 4, kernel_size=3)", "4: ReLU"]


def test_plot_feature_maps_one_row_per_layer():
    model = _cnn()
    image = np.random.default_rng(1).random((12, 12))
    fig = plot_feature_maps(model, image, layers=[1, 4], max_maps=3)
    assert isinstance(fig, Figure)
    rows = 3  # the input, then two layers
    assert len(fig.axes) == rows * 3
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 1 + 3 + 3
    with pytest.raises(ValueError, match="one image"):
        feature_maps(model, np.ones((2, 1, 12, 12)))
