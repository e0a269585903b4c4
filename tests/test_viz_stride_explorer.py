"""The stride explorer and the NCHW/NHWC picture: their numbers agree with NumPy, their SVG is deterministic."""

from __future__ import annotations

import base64
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.tensor as mt
from minigrad.viz import SVGFigure, StrideExplorer, draw_layouts, layout_positions, layout_strides, strided_view
from minigrad.viz.stride_explorer import (
    MAX_STORAGE, MAX_VIEW, VIEW_OPS, draw_strided_view, offset_map, offset_table, position_formula, touched_cells,
)

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> list[str]:
    return [element.text or "" for element in ET.fromstring(svg).iter(SVG + "text")]


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def numpy_view(shape, op, params):
    """(base, view, copy): the same op done by NumPy on arange(n); ``copy`` is reshape's result for reshape_copy."""
    base = np.arange(int(np.prod(shape)), dtype=np.int64)
    x = base.reshape(shape)
    ndim = len(shape)
    copy = None
    if op == "transpose":
        view = np.swapaxes(x, params.get("dim0", -2), params.get("dim1", -1))
    elif op == "reshape_copy":
        view = np.swapaxes(x, params.get("dim0", -2), params.get("dim1", -1))
        copy = view.reshape(params.get("new_shape", (-1,)))
    elif op == "permute":
        view = np.transpose(x, params.get("dims") or tuple(range(ndim - 1, -1, -1)))
    elif op == "slice":
        d = params.get("dim", -1) % ndim
        key = (slice(None),) * d + (slice(params.get("start", 1), params.get("stop"), params.get("step", 2)),)
        view = x[key]
    elif op == "select":
        d = params.get("dim", 0) % ndim
        view = x[(slice(None),) * d + (params.get("index", 1 if shape[d] > 1 else 0), Ellipsis)]
    elif op == "expand":
        sizes = params["sizes"]
        extra = len(sizes) - ndim
        view = np.broadcast_to(x, tuple(shape[i - extra] if s == -1 else s for i, s in enumerate(sizes)))
    elif op == "unsqueeze":
        view = np.expand_dims(x, params.get("dim", 0))
    elif op == "reshape":
        view = x.reshape(params["new_shape"])
    else:
        raise AssertionError(op)
    return base, view, copy


def assert_agrees_with_numpy(shape, op, params):
    info = strided_view(shape, op, **params)
    base, view, copy = numpy_view(shape, op, params)
    if op == "reshape_copy" and info.is_view:  # the swap did not get in the way: reshape made a view
        view = copy
    positions = [p for _, p in offset_map(info)]
    assert info.shape == view.shape
    assert positions == view.ravel().tolist(), f"{info.code}: positions differ from NumPy's view"
    assert info.offset == (address(view) - address(base)) // base.itemsize if view.size else True
    # strides of dimensions that are stepped along must match (a size-1 dimension may have any stride)
    for size, mine, numpys in zip(info.shape, info.strides, element_strides(view)):
        if size > 1:
            assert mine == numpys, f"{info.code}: strides {info.strides} vs NumPy {element_strides(view)}"
    if op == "reshape_copy":
        assert np.shares_memory(view, base)
        assert (info.copy_shape is not None) == (not np.shares_memory(copy, base))
        if info.copy_shape is not None:
            assert copy.shape == info.copy_shape and copy.ravel().tolist() == positions
    cells = touched_cells(info)
    assert sorted(cells) == sorted(set(positions))
    assert sorted(k for ks in cells.values() for k in ks) == list(range(info.numel))
    return info


# ---------------------------------------------------------------- the numbers


@pytest.mark.parametrize("op", list(VIEW_OPS))
@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 4), (4, 1, 3), (2, 2, 2, 3)])
def test_default_views_agree_with_numpy(shape, op):
    info = strided_view(shape, op)
    params = {"expand": {"sizes": info.shape}, "reshape": {"new_shape": info.shape}}.get(op, {})
    assert_agrees_with_numpy(shape, op, params)


@st.composite
def views(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    ndim = len(shape)
    op = draw(st.sampled_from(list(VIEW_OPS)))
    dim = draw(st.integers(-ndim, ndim - 1))
    if op in ("transpose", "reshape_copy"):
        if ndim < 2:
            shape, ndim = shape + (draw(st.integers(1, 4)),), ndim + 1
        params = {"dim0": draw(st.integers(-ndim, ndim - 1)), "dim1": draw(st.integers(-ndim, ndim - 1))}
    elif op == "permute":
        params = {"dims": tuple(draw(st.permutations(range(ndim))))}
    elif op == "slice":
        start = draw(st.integers(0, shape[dim] - 1))
        params = {"dim": dim, "start": start, "stop": draw(st.one_of(st.none(), st.integers(start, shape[dim]))),
                  "step": draw(st.integers(1, 3))}
    elif op == "select":
        params = {"dim": dim, "index": draw(st.integers(-shape[dim], shape[dim] - 1))}
    elif op == "expand":
        grown = tuple(draw(st.integers(1, 3)) if s == 1 else draw(st.sampled_from([s, -1])) for s in shape)
        params = {"sizes": tuple(draw(st.lists(st.integers(1, 2), max_size=1))) + grown}
    elif op == "unsqueeze":
        params = {"dim": draw(st.integers(-ndim - 1, ndim))}
    else:
        perm = draw(st.permutations(range(ndim)))
        params = {"new_shape": tuple(shape[i] for i in perm) + (1,) * draw(st.integers(0, 1))}
    return shape, op, params


def result_numel(shape, op, params) -> int:
    """Elements of the view: only expand grows it, every other op keeps or shrinks the input's count."""
    if op != "expand":
        return int(np.prod(shape))
    extra = len(params["sizes"]) - len(shape)
    return int(np.prod([shape[i - extra] if s == -1 else s for i, s in enumerate(params["sizes"])]))


def small(case) -> bool:
    """Both the storage and the view fit the explorer's limits (expand can grow a small input past MAX_VIEW)."""
    shape, op, params = case
    return int(np.prod(shape)) <= MAX_STORAGE and result_numel(shape, op, params) <= MAX_VIEW


def test_small_bounds_the_expanded_view_not_only_the_input():
    grown = ((3, 4, 4, 1), "expand", {"sizes": (3, 4, 4, 3)})  # 48 stored elements, a 144-element view
    assert result_numel(*grown) == 144 and not small(grown)
    assert small(((3, 4, 4, 1), "expand", {"sizes": (3, 4, 4, 2)}))
    with pytest.raises(ValueError, match="at most 128"):
        strided_view(*grown[:2], **grown[2])


@given(views().filter(small))
def test_random_views_agree_with_numpy(case):
    shape, op, params = case
    assert_agrees_with_numpy(shape, op, params)


@given(views().filter(small))
def test_offset_map_reads_the_same_elements_as_minigrad_tensors(case):
    shape, op, params = case
    info = strided_view(shape, op, **params)
    x = mt.arange(int(np.prod(shape))).view(*shape)
    if op == "transpose":
        t = x.transpose(params["dim0"], params["dim1"])
    elif op == "reshape_copy":
        t = x.transpose(params["dim0"], params["dim1"])
        if info.is_view:
            t = t.reshape(-1)
    elif op == "permute":
        t = x.permute(*params["dims"])
    elif op == "slice":
        d = params["dim"] % len(shape)
        t = x[(slice(None),) * d + (slice(params["start"], params["stop"], params["step"]),)]
    elif op == "select":
        t = x[(slice(None),) * (params["dim"] % len(shape)) + (params["index"],)]
    elif op == "expand":
        t = x.expand(*params["sizes"])
    elif op == "unsqueeze":
        t = x.unsqueeze(params["dim"])
    else:
        t = x.view(*params["new_shape"])
    assert t.shape == info.shape
    assert [p for _, p in offset_map(info)] == t.reshape(-1).tolist()
    if t.numel():  # an empty view reads no memory at all
        assert t.storage_offset() == info.offset
        assert mt.shares_memory(t, x)


def test_the_copy_case_is_the_one_view_refuses():
    info = strided_view((2, 3, 4), "reshape_copy")
    assert not info.is_view and info.copy_shape == (24,)
    x = mt.arange(24).view(2, 3, 4)
    with pytest.raises(mt.ShapeError, match="without copying"):
        x.transpose(-2, -1).view(-1)
    copied = x.transpose(-2, -1).reshape(-1)
    assert not mt.shares_memory(copied, x)
    assert copied.tolist() == [p for _, p in offset_map(info)]
    # when a swapped dimension has size 1, reshape can still make a view
    assert strided_view((2, 1, 4), "reshape_copy", dim0=0, dim1=1).is_view


def test_formula_table_and_summary():
    info = strided_view((2, 3, 4), "transpose")
    assert info.shape == (2, 4, 3) and info.strides == (12, 1, 4) and not info.is_contiguous
    assert position_formula(info, (1, 0, 2)) == "v[1, 0, 2] -> 0 + 12*1 + 1*0 + 4*2 = 20"
    table = offset_table(info).splitlines()
    assert len(table) == 25 and table[2].split() == ["1", "v[0,", "0,", "1]", "4"]
    assert offset_table(info, limit=3).splitlines()[-1] == "... 21 more"
    sliced = strided_view((2, 3, 4), "slice")
    assert sliced.code == "x[:, :, 1::2]" and sliced.offset == 1 and sliced.strides == (12, 4, 2)
    assert strided_view((2, 3, 4), "select").code == "x[1]"
    assert strided_view((3, 1), "broadcast", sizes=(3, 4)).strides == (1, 0)
    expanded = strided_view((3, 1), "expand", sizes=(3, 4))
    assert touched_cells(expanded) == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7], 2: [8, 9, 10, 11]}
    with pytest.raises(ValueError, match="not inside"):
        position_formula(info, (2, 0, 0))


@pytest.mark.parametrize(
    "shape, op, params, message",
    [
        ((2, 3), "spin", {}, "unknown op"),
        ((2, 3), "slice", {"axis": 0}, "unknown parameter"),
        ((5,), "transpose", {}, "at least 2 dimensions"),
        ((9, 9), "transpose", {}, "at most 64"),
        ((2, 0), "transpose", {}, "at least 1"),
        ((2, 3), "expand", {"sizes": (4, 3)}, "only size-1 dimensions grow"),
        ((2, 3), "slice", {"step": -1}, "positive"),
        ((2, 3), "select", {"index": 5}, "out of range"),
        ((2, 3), "permute", {"dims": (0, 0)}, "exactly once"),
        ((2, 3), "reshape", {"new_shape": (4, 2)}, "elements"),
        ((8, 8), "expand", {"sizes": (3, 8, 8)}, "at most 128"),
    ],
)
def test_bad_requests_say_what_is_wrong(shape, op, params, message):
    with pytest.raises(ValueError, match=message):
        strided_view(shape, op, **params)


# ---------------------------------------------------------------- the figure


@pytest.mark.parametrize("op", list(VIEW_OPS))
def test_figure_is_byte_deterministic_and_well_formed(op):
    one = StrideExplorer((2, 3, 4), op).figure()
    two = draw_strided_view(strided_view((2, 3, 4), op))
    assert isinstance(one, SVGFigure) and one.svg == two.svg
    ET.fromstring(one.svg)
    shown = texts(one.svg)
    info = strided_view((2, 3, 4), op)
    assert any(info.code in t for t in shown)
    assert any("storage of x" in t for t in shown)
    assert (not info.is_view) == any("new storage" in t for t in shown)


def test_figure_numbers_the_storage_cells_in_iteration_order():
    info = strided_view((2, 3), "transpose", dim0=0, dim1=1)  # v = x.T: positions 0, 3, 1, 4, 2, 5
    root = ET.fromstring(draw_strided_view(info).svg)
    groups = [g for g in root.iter(SVG + "g") if g.find(SVG + "title") is not None]
    storage = [g for g in groups if g.find(SVG + "title").text.startswith("position ")]
    assert [g.find(SVG + "text").text for g in storage] == ["0", "2", "4", "1", "3", "5"]
    view = [g for g in groups if g.find(SVG + "title").text.startswith("v[")]
    assert [g.find(SVG + "text").text for g in view] == ["0", "3", "1", "4", "2", "5"]


def test_figure_marks_cells_read_twice_and_cells_not_read():
    svg = draw_strided_view(strided_view((3, 1), "expand", sizes=(3, 4))).svg
    assert "×4" in texts(svg) and "#ffe4cc" in svg  # read 4 times, orange
    svg = draw_strided_view(strided_view((2, 4), "slice", step=2, start=0)).svg
    assert svg.count("not read by v") == 4


def test_highlighting_an_element():
    explorer = StrideExplorer((2, 3, 4), "transpose")
    plain = explorer.figure().svg
    assert "#fff4c2" not in plain
    lit = explorer.figure(element=5).svg
    assert "#fff4c2" in lit and "element 5: v[0, 1, 2] -> 0 + 12*0 + 1*1 + 4*2 = 9" in texts(lit)
    with pytest.raises(ValueError, match="from 0 to 23"):
        explorer.figure(element=24)


# ---------------------------------------------------------------- the widget


def test_widget_controls_change_the_view():
    explorer = StrideExplorer((2, 3, 4), "transpose")
    box = explorer.widget
    assert box is explorer.widget and len(box.children) == 3
    assert "x.transpose(-2, -1)" in explorer._picture.value and "v[0, 0, 1]" in explorer._text.value

    explorer._op_menu.value = "slice"
    assert explorer.op == "slice" and explorer.info.strides == (12, 4, 2)
    assert "x[:, :, 1::2]" in explorer._picture.value

    explorer._shape_box.value = "(4, 4)"
    assert explorer.shape == (4, 4) and explorer.info.shape == (4, 2)
    assert explorer._slider.max == 7

    explorer._highlight.value = True
    explorer._slider.value = 3
    assert explorer.element == 3 and "element 3: v[1, 1]" in explorer._picture.value

    explorer._shape_box.value = "two, three"  # bad input: an error message, the last good view stays
    assert "sizes separated by commas" in explorer._text.value and explorer.shape == (4, 4)
    explorer._shape_box.value = "9, 9"
    assert "at most 64" in explorer._text.value
    explorer._shape_box.value = "3"
    explorer._op_menu.value = "transpose"
    assert "at least 2 dimensions" in explorer._text.value
    explorer._shape_box.value = "3, 2"
    assert explorer.error is None and explorer.info.shape == (2, 3) and explorer.element is None
    assert not explorer._highlight.value and not explorer._slider.disabled


def test_the_element_slider_highlights_without_the_checkbox():
    explorer = StrideExplorer((2, 3, 4), "transpose")
    explorer.widget
    plain = explorer._picture.value
    assert not explorer._highlight.value and not explorer._slider.disabled
    explorer._slider.value = 5
    assert explorer.element == 5 and explorer._highlight.value
    assert explorer._picture.value != plain and "element 5: v[0, 1, 2]" in explorer._picture.value
    explorer._slider.value = 6
    assert explorer.element == 6 and "element 6: v[0, 2, 0]" in explorer._picture.value
    explorer._highlight.value = False  # unticking clears the highlight, the slider stays where it is
    assert explorer.element is None and explorer._picture.value == plain and explorer._slider.value == 6
    explorer._highlight.value = True
    assert explorer.element == 6
    explorer._op_menu.value = "slice"  # a new view starts without a highlight; the slider still works at once
    assert explorer.element is None and not explorer._slider.disabled
    explorer._slider.value = 1
    assert explorer.element == 1 and explorer._highlight.value


def test_methods_update_the_widget():
    explorer = StrideExplorer((2, 3), "permute")
    explorer.widget
    explorer.set_view((3, 1), "expand", sizes=(3, 5))
    assert explorer._shape_box.value == "3, 1" and explorer._op_menu.value == "expand" and explorer._slider.max == 14
    explorer.select(14)
    assert explorer._slider.value == 14 and explorer._highlight.value
    explorer.select(None)
    assert not explorer._highlight.value
    with pytest.raises(ValueError):
        explorer.select(15)
    assert "StrideExplorer(shape=(3, 1), op='expand'" in repr(explorer)


def test_ipython_display_sends_the_widget_with_a_static_fallback(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    StrideExplorer()._ipython_display_()
    bundle, kwargs = shown[0]
    assert kwargs["raw"] is True
    assert "application/vnd.jupyter.widget-view+json" in bundle
    figure = StrideExplorer().figure()
    assert "image/svg+xml" not in bundle  # JupyterLab would show it at full width; the PNG shrinks to fit
    assert base64.b64decode(bundle["image/png"]) == figure.png()  # what a notebook shown without a kernel shows
    assert kwargs["metadata"]["image/png"] == {"width": round(figure.width), "height": round(figure.height)}

    shown.clear()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails as if not installed
    StrideExplorer()._ipython_display_()
    assert isinstance(shown[0][0], SVGFigure)


# ---------------------------------------------------------------- NCHW / NHWC


@pytest.mark.parametrize("shape", [(1, 3, 2, 3), (2, 3, 2, 2), (2, 1, 3, 4), (1, 4, 3, 4)])
def test_layout_strides_and_positions_agree_with_numpy(shape):
    n, c, h, w = shape
    nchw = np.arange(n * c * h * w).reshape(shape)
    assert layout_strides(shape, "NCHW") == element_strides(nchw)
    nhwc = np.arange(n * h * w * c).reshape(n, h, w, c).transpose(0, 3, 1, 2)  # seen as (N, C, H, W)
    assert layout_strides(shape, "NHWC") == element_strides(nhwc)
    for layout, array in (("NCHW", nchw), ("NHWC", nhwc)):
        positions = layout_positions(shape, layout)
        assert sorted(positions.values()) == list(range(nchw.size))
        assert all(array[index] == p for index, p in positions.items())
    t = mt.arange(n * h * w * c).view(n, h, w, c).permute(0, 3, 1, 2)
    assert t.strides == layout_strides(shape, "NHWC") and t.is_contiguous() == (c == 1)
    if c > 1:  # (with one channel both layouts are the same, up to the stride of the size-1 dimension)
        assert t.contiguous().strides == layout_strides(shape, "NCHW")


def test_layout_picture_is_deterministic_and_shows_both_layouts():
    one, two = draw_layouts(), draw_layouts((1, 3, 2, 3), (0, 0, 1))
    assert one.svg == two.svg
    shown = texts(one.svg)
    assert any(t.startswith("NCHW") and "(18, 6, 3, 1)" in t for t in shown)
    assert any(t.startswith("NHWC") and "(18, 1, 9, 3)" in t for t in shown)
    assert any("positions 1, 7, 13" in t for t in shown) and any("positions 3, 4, 5" in t for t in shown)
    assert draw_layouts((2, 3, 2, 2), (1, 1, 0)).svg != one.svg
    with pytest.raises(ValueError, match="four positive ints"):
        draw_layouts((3, 2, 3))
    with pytest.raises(ValueError, match="at most 48"):
        draw_layouts((2, 3, 4, 4))
    with pytest.raises(ValueError, match="pixel"):
        draw_layouts((1, 3, 2, 3), (0, 2, 0))
    with pytest.raises(ValueError, match="layout"):
        layout_strides((1, 3, 2, 3), "CHWN")
