"""What the tests of minigrad's own SVG figures share: the box of every text, and the checks that they are legible and apart.

A text's box comes from its anchor, its font size and the monospace font's
advance (0.6 em a character, as ``graph_svg._text_width``), from 0.8 em above
the baseline to 0.2 em below it. A figure no wider than 900 px is shown at its
natural size in a 900 px output area, so its font sizes are its pixel sizes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
OUTPUT_WIDTH, SMALLEST_TEXT = 900, 11


def _translation(element_stack) -> tuple[float, float]:
    dx = dy = 0.0
    for element in element_stack:
        transform = element.get("transform", "")
        if transform.startswith("translate("):
            x, _, y = transform[len("translate("):-1].partition(" ")
            dx, dy = dx + float(x), dy + float(y or 0)
    return dx, dy


def text_boxes(svg: str) -> list[tuple[tuple[float, float, float, float], float, str]]:
    """((x0, y0, x1, y1), font size, text) of every <text>, in the figure's coordinates."""
    boxes = []

    def walk(element, stack, size):
        size = float(element.get("font-size", size))
        if element.tag == f"{SVG}text":
            text = element.text or ""
            width = 0.6 * size * len(text)
            dx, dy = _translation(stack)
            x = float(element.get("x")) + dx - {"middle": width / 2, "end": width}.get(element.get("text-anchor"), 0)
            y = float(element.get("y")) + dy
            boxes.append(((x, y - 0.8 * size, x + width, y + 0.2 * size), size, text))
        for child in element:
            walk(child, stack + [element], size)

    walk(ET.fromstring(svg), [], 12)
    return boxes


def assert_legible_and_apart(figure) -> list:
    """The figure fits in 900 px; every text is at least 11 px, inside the figure, and overlaps no other text."""
    assert figure.width <= OUTPUT_WIDTH, f"the figure is {figure.width} px wide"
    boxes = text_boxes(figure.svg)
    for i, (box, size, text) in enumerate(boxes):
        assert size >= SMALLEST_TEXT, f"{text!r} is {size} px"
        assert 0 <= box[0] and box[2] <= figure.width and 0 <= box[1] and box[3] <= figure.height, (text, box)
        for other, _, other_text in boxes[i + 1:]:
            apart = box[2] <= other[0] or other[2] <= box[0] or box[3] <= other[1] or other[3] <= box[1]
            assert apart, f"{text!r} {box} overlaps {other_text!r} {other}"
    return boxes
