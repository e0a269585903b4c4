"""Show a widget with its static figure riding along in the same output.

A front end that cannot show widgets (a notebook rendered without a kernel,
nbval, GitHub) shows the figure instead, as ``SVGFigure`` shows itself: its
PNG, or its SVG where no PNG can be made. Without ipywidgets only the figure
is shown.

Inside a widget a figure is an inline ``<svg>`` (``widget_picture``): it
shrinks to the widget's width by its own style, and a figure taller than
most of the window scrolls inside its box, so the buttons above it stay in view.
"""

from __future__ import annotations

from collections.abc import Callable

from minigrad.viz.svg_png import display_bundle

PICTURE_BOX = "overflow: auto; max-height: 85vh"
"""Style of the box around a widget's figure: scroll bars only for a figure taller than 85 % of the window."""


def display_with_static_figure(get_widget: Callable, static_figure: Callable) -> None:
    """``get_widget()`` builds the widget (may raise ImportError); ``static_figure()`` returns an SVGFigure."""
    from IPython.display import display

    try:
        widget = get_widget()
    except ImportError:
        display(static_figure())
        return
    bundle = dict(widget._repr_mimebundle_() or {})
    figure = static_figure()
    data, metadata = display_bundle(figure.svg, figure.width, figure.height)
    bundle.update(data)
    display(bundle, raw=True, metadata=metadata)


def display_with_png_figure(get_widget: Callable, figure, text: str, zoom: float = 1.0) -> None:
    """As :func:`display_with_static_figure`, for a matplotlib ``figure``: its PNG (at ``zoom`` times its dpi)
    rides along, ``text`` is the plain-text form."""
    import base64

    from IPython.display import display

    from minigrad.viz.figure_display import figure_png

    try:
        widget = get_widget()
    except ImportError:
        display(figure)
        return
    bundle = dict(widget._repr_mimebundle_() or {})
    bundle["image/png"] = base64.b64encode(figure_png(figure, zoom)).decode("ascii")
    bundle["text/plain"] = text
    display(bundle, raw=True)


def widget_picture(svg: str) -> str:
    """The HTML of a widget's picture: ``svg`` inline, in a box that scrolls what does not fit."""
    return f"<div style='{PICTURE_BOX}'>{svg}</div>"
