"""Show a widget with its static figure riding along in the same output.

A front end that cannot show widgets (a notebook rendered without a kernel,
nbval) shows the figure instead: its SVG, or its PNG where SVG is not shown
(an untrusted notebook, GitHub). Without ipywidgets only the figure is shown.
"""

from __future__ import annotations

from collections.abc import Callable

from minigrad.viz.svg_png import png_bundle


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
    png, metadata = png_bundle(figure.svg, figure.width, figure.height)
    bundle.update({"image/svg+xml": figure.svg, **png})
    display(bundle, raw=True, metadata=metadata)
