"""The segment map: bars and blocks to scale, coloured by tag, free blocks marked; the widget replays a trace."""

import sys
import xml.etree.ElementTree as ET

import pytest

from minigrad.memory import CachingAllocator, record_training_step, replay, replay_states
from minigrad.memory.allocator.sizes import MiB
from minigrad.viz.graph_svg import SVGFigure, _num
from minigrad.viz.segment_map import (
    BAR_WIDTH, CATEGORY_COLOURS, FREE_COLOUR, HIGHLIGHT, LEFT, SPLIT_OUTLINE, SegmentMap, draw_replay_timeline,
    draw_segment_map, segment_figures,
)

SVG = "{http://www.w3.org/2000/svg}"
# holes of 1 MiB and 512 KiB; then 512 KiB and 1 MiB requests: first fit cuts the 1 MiB hole and needs a new segment
POLICY_TRACE = [("alloc", "hole1", MiB, "activation"), ("alloc", "x", 256 * 1024, "parameter"),
                ("alloc", "hole2", 512 * 1024, "activation"), ("alloc", "y", 256 * 1024, "parameter"),
                ("free", "hole1"), ("free", "hole2"), ("alloc", "p", 512 * 1024, "gradient"),
                ("alloc", "q", MiB, "optimizer_state")]


def block_rects(figure: SVGFigure) -> list[dict]:
    """Every block rectangle (those with a tooltip) as its attributes plus the tooltip text."""
    root = ET.fromstring(figure.svg)
    rects = []
    for rect in root.iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title")
        if title is not None:
            rects.append({**rect.attrib, "tip": title.text})
    return rects


def mixed_allocator() -> CachingAllocator:
    """A large segment split into a parameter, an activation, a free hole and a free tail; a small segment too."""
    allocator = CachingAllocator()
    allocator.malloc(3 * MiB, tag="parameter")
    hole = allocator.malloc(4 * MiB, tag="activation")
    allocator.malloc(5 * MiB, tag="activation")
    allocator.free(hole)
    allocator.malloc(1000, tag="mystery")  # a tag without a colour of its own
    whole = allocator.malloc(30 * MiB, tag="gradient")  # its own segment, then wholly free
    allocator.free(whole)
    return allocator


@pytest.fixture(scope="module")
def cnn_trace():
    return record_training_step("mnist-cnn", batch_size=64)


def test_the_figure_is_deterministic_and_valid_svg():
    a = draw_segment_map(mixed_allocator(), "state").svg
    assert a == draw_segment_map(mixed_allocator(), "state").svg
    assert a == draw_segment_map(mixed_allocator().snapshot(), "state").svg  # an allocator or its snapshot
    ET.fromstring(a)
    assert ">large pool: " in a and ">small pool: " in a and ">state<" in a


def test_block_rectangles_are_proportional_to_bytes_on_one_scale():
    allocator = mixed_allocator()
    snapshot = allocator.snapshot()
    figure = draw_segment_map(snapshot)
    scale = BAR_WIDTH / max(s["total_size"] for s in snapshot)  # the 30 MiB segment fills the bar
    in_drawing_order = sorted(snapshot, key=lambda s: s["segment_type"] != "large")  # large pool first
    blocks = [b for s in in_drawing_order for b in s["blocks"]]
    rects = block_rects(figure)
    assert len(rects) == len(blocks)
    for block, rect in zip(blocks, rects):
        assert float(rect["width"]) == pytest.approx(block["size"] * scale, abs=0.051)
    large = in_drawing_order[0]
    xs = [float(r["x"]) for r in rects[: len(large["blocks"])]]
    offsets = [(b["address"] - large["address"]) * scale for b in large["blocks"]]
    assert xs == pytest.approx([150 + o for o in offsets], abs=0.051)
    wider = draw_segment_map(snapshot, full_width_bytes=60 * MiB)  # a fixed scale: everything half as long
    assert float(block_rects(wider)[0]["width"]) == pytest.approx(float(rects[0]["width"]) / 2, abs=0.051)


def test_the_small_pool_can_be_zoomed_to_its_own_stated_scale():
    snapshot = mixed_allocator().snapshot()
    small = [s for s in snapshot if s["segment_type"] == "small"]
    zoomed = draw_segment_map(snapshot, zoom_small_pool=True)
    assert "1 segment, drawn 15x larger<" in zoomed.svg  # the 30 MiB segment sets the large pool's scale
    widths = {r["tip"]: float(r["width"]) for r in block_rects(zoomed)}
    for block in small[0]["blocks"]:
        tip = next(t for t in widths if f"at {block['address']:#x}" in t)
        assert widths[tip] == pytest.approx(block["size"] * BAR_WIDTH / (2 * MiB), abs=0.051)
    plain = {r["tip"]: float(r["width"]) for r in block_rects(draw_segment_map(snapshot))}
    large_tips = [t for t in plain if t.startswith(("parameter", "activation"))]
    assert all(plain[t] == widths[t] for t in large_tips)  # the large pool keeps its scale
    assert "larger<" not in draw_segment_map(snapshot).svg


def test_blocks_are_coloured_by_tag_and_free_blocks_are_hatched_and_marked():
    rects = block_rects(draw_segment_map(mixed_allocator()))
    by_tip = {r["tip"].split(":")[0]: r for r in rects}
    assert by_tip["parameter"]["fill"] == CATEGORY_COLOURS["parameter"]
    assert by_tip["activation"]["fill"] == CATEGORY_COLOURS["activation"]
    assert by_tip["other"]["fill"] == CATEGORY_COLOURS["other"]  # the unknown tag
    free = [r for r in rects if r["tip"].startswith("free")]
    assert free and all(r["fill"] == "url(#segment-map-free)" for r in free)
    split = [r for r in free if "inactive split" in r["tip"]]
    whole = [r for r in free if "whole segment" in r["tip"]]
    assert len(whole) == 1 and whole[0]["stroke"] == FREE_COLOUR and "stroke-dasharray" not in whole[0]
    assert len(split) >= 2 and all(r["stroke"] == SPLIT_OUTLINE and r["stroke-dasharray"] for r in split)
    legend = draw_segment_map(mixed_allocator()).svg
    assert ">parameter<" in legend and ">activation<" in legend and ">other<" in legend and ">gradient<" not in legend
    assert ">free, inactive split<" in legend


def test_figures_agree_with_the_allocator_along_a_real_trace(cnn_trace):
    for index, _, allocator in replay_states(cnn_trace, "first_fit"):
        figures = segment_figures(allocator.snapshot())
        stats = allocator.memory_stats()
        assert figures["reserved"] == allocator.reserved_bytes and figures["allocated"] == allocator.allocated_bytes
        assert figures["fragmentation"] == pytest.approx(allocator.fragmentation())
        assert figures["inactive_split"] == stats["inactive_split_bytes.all.current"]
        assert figures["largest_free_block"] == allocator.largest_free_block()
    svg = draw_segment_map(allocator).svg
    assert f"fragmentation {allocator.fragmentation():.3f} = 1 - largest free block" in svg
    assert f"reserved {allocator.reserved_bytes / MiB:.1f} MiB" in svg


def test_an_empty_allocator_and_bad_arguments():
    assert ">no segment reserved<" in draw_segment_map(CachingAllocator()).svg
    with pytest.raises(TypeError, match="expected a CachingAllocator or its snapshot"):
        draw_segment_map({"segments": []})
    with pytest.raises(ValueError, match="smaller than the largest segment"):
        draw_segment_map(mixed_allocator(), full_width_bytes=MiB)
    with pytest.raises(ValueError, match=r"the trace \(0 events\) allocates nothing"):
        SegmentMap([])
    with pytest.raises(ValueError, match=r"event must be an int from 0 to 7 .* got 8"):
        SegmentMap(POLICY_TRACE, event=8)
    with pytest.raises(ValueError, match=r"policy must be one of \['best_fit', 'first_fit'\], got 'worst_fit'"):
        SegmentMap(POLICY_TRACE).set(policy="worst_fit")


def test_the_map_shows_the_replayed_state_under_each_policy():
    explorer = SegmentMap(POLICY_TRACE)
    assert explorer.event == 0 and explorer.policy == "best_fit"
    for policy in ("best_fit", "first_fit"):
        explorer.set(event=7, policy=policy)
        expected = replay(POLICY_TRACE, policy, snapshot_at=[7]).snapshots[7]
        assert explorer.state() == expected
        assert explorer.map_figure().svg == draw_segment_map(
            expected, explorer.figure_title(), explorer.full_width_bytes, explorer.categories,
            highlight=explorer.touched_address()).svg
    assert explorer.figures()["reserved"] == 4 * MiB and explorer.figures()["peak_reserved"] == 4 * MiB
    explorer.set(policy="best_fit")
    assert explorer.figures()["reserved"] == 2 * MiB
    assert "after event 7/7: alloc 1.0 MiB (optimizer_state) as buffer 5" in explorer.figure().svg
    explorer.set(event=4)
    assert "free buffer 0: 1.0 MiB (activation)" in explorer.readout()


def outlines(figure: SVGFigure) -> list[dict]:
    return [r.attrib for r in ET.fromstring(figure.svg).iter(f"{SVG}rect")
            if r.get("stroke") == HIGHLIGHT and r.get("fill") == "none"]


def test_the_block_an_event_touched_is_outlined():
    explorer = SegmentMap(POLICY_TRACE, event=6, policy="first_fit")  # p (512 KiB) cut from hole1's 1 MiB at the start
    snapshot = explorer.state()
    p_block = [b for b in snapshot[0]["blocks"] if b["tag"] == "gradient"]
    assert len(p_block) == 1 and explorer.touched_address() == p_block[0]["address"]
    [outline] = outlines(explorer.map_figure())
    scale = BAR_WIDTH / explorer.full_width_bytes
    offset = (p_block[0]["address"] - snapshot[0]["address"]) * scale
    assert float(outline["x"]) == pytest.approx(LEFT + offset - 2, abs=0.051)
    assert float(outline["width"]) == pytest.approx(512 * 1024 * scale + 4, abs=0.051)
    explorer.set(event=4)  # hole1 freed: the free block that now holds its address
    [outline] = outlines(explorer.map_figure())
    assert float(outline["x"]) == LEFT - 2 and "of this event" in explorer.map_figure().svg
    assert not outlines(draw_segment_map(explorer.state()))  # nothing outlined unless asked


def test_the_timeline_marks_the_event_under_the_map():
    explorer = SegmentMap(POLICY_TRACE)
    result = explorer.result()
    for event in (0, 5):
        explorer.set(event=event)
        strip = draw_replay_timeline(result.reserved, result.allocated, result.fragmentation, event)
        assert strip.body in explorer.figure().svg and explorer.map_figure().body in explorer.figure().svg
        marker = [line for line in ET.fromstring(strip.svg).iter(f"{SVG}line") if line.get("stroke") == HIGHLIGHT]
        assert marker[0].get("x1") == _num(LEFT + event * BAR_WIDTH / (len(POLICY_TRACE) - 1))
    with pytest.raises(ValueError, match="event inside them"):
        draw_replay_timeline([1, 2], [1, 2], [0.0, 0.0], 2)


def test_it_opens_at_the_first_event_so_a_learner_steps_forward():
    explorer = SegmentMap(POLICY_TRACE)
    assert explorer.event == 0 and "after event 0/7: alloc" in explorer.figure().svg
    assert explorer.readout().startswith("event 0/7: alloc")
    pytest.importorskip("ipywidgets")
    explorer.widget
    assert explorer._slider.value == 0 and explorer._play.value == 0 and "event 0/7" in explorer._readout.value
    explorer._slider.value = 1
    assert explorer.event == 1 and "event 1/7" in explorer._readout.value
    assert SegmentMap(POLICY_TRACE, event=7).event == 7  # an event asked for is where it opens


def test_the_widget_slider_changes_the_picture_and_the_policy_switch_replays():
    pytest.importorskip("ipywidgets")
    explorer = SegmentMap(POLICY_TRACE)
    explorer.widget
    last = explorer._picture.value
    explorer._slider.value = 2
    assert explorer.event == 2 and explorer._picture.value != last and "event 2/7" in explorer._readout.value
    explorer._slider.value = 7
    best = explorer._picture.value
    explorer._policy.value = "first_fit"
    assert explorer.policy == "first_fit" and explorer.event == 7
    assert explorer._picture.value != best and "reserved 4.0 MiB" in explorer._readout.value
    explorer.set(event=3, policy="best_fit")  # the controls follow set
    assert explorer._slider.value == 3 and explorer._policy.value == "best_fit" and explorer.policy == "best_fit"
    with_a_large_block = SegmentMap(POLICY_TRACE + [("alloc", "big", 3 * MiB, "activation")])
    with_a_large_block.widget
    assert "larger<" not in with_a_large_block._picture.value
    with_a_large_block._zoom.value = True
    assert with_a_large_block.zoom_small_pool and "drawn 10x larger<" in with_a_large_block._picture.value


def test_ipython_display_sends_the_widget_with_a_static_fallback(monkeypatch):
    pytest.importorskip("ipywidgets")
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    SegmentMap(POLICY_TRACE)._ipython_display_()
    bundle, kwargs = shown[0]
    assert kwargs["raw"] is True and "application/vnd.jupyter.widget-view+json" in bundle
    assert ("image/png" in bundle and bundle["text/plain"].startswith("<figure")) or "image/svg+xml" in bundle

    shown.clear()
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import fails as if not installed
    explorer = SegmentMap(POLICY_TRACE, event=5)
    explorer._ipython_display_()
    assert isinstance(shown[0][0], SVGFigure) and shown[0][0].svg == explorer.figure().svg
    assert "after event 5/7" in shown[0][0].svg


def test_the_picture_does_not_depend_on_the_trace_ids():
    renamed = {"hole1": 90, "x": 17, "hole2": 3, "y": 12, "p": 5, "q": 1}
    other = [(e[0], renamed[e[1]], *e[2:]) for e in POLICY_TRACE]
    for event in (3, 5, 7):
        assert SegmentMap(POLICY_TRACE, event=event).figure().svg == SegmentMap(other, event=event).figure().svg


def test_every_frame_of_a_cnn_step_draws_on_one_scale(cnn_trace):
    explorer = SegmentMap(cnn_trace, title="CNN step")
    assert explorer.full_width_bytes == max(s["total_size"] for s in replay(cnn_trace, snapshot_at=[len(cnn_trace) - 1])
                                            .snapshots[len(cnn_trace) - 1])
    widths = set()
    for event in range(0, len(cnn_trace), 7):
        explorer.set(event=event)
        figure = explorer.figure()
        ET.fromstring(figure.svg)
        widths.add(figure.width)
    assert len(widths) == 1  # the frames line up
