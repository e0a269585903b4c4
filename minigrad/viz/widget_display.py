"""Show a widget with its static figure riding along in the same output.

A front end that cannot show widgets (a notebook rendered without a kernel,
nbval) shows the SVG instead; without ipywidgets only the figure is shown.
"""

from __future__ import annotations

from collections.abc import Callable


def display_with_static_figure(get_widget: Callable, static_figure: Callable) -> None:
    """``get_widget()`` builds the widget (may raise ImportError); ``static_figure()`` returns an SVGFigure."""
    from IPython.display import display

    try:
        widget = get_widget()
    except ImportError:
        display(static_figure())
        return
    bundle = dict(widget._repr_mimebundle_() or {})
    bundle["image/svg+xml"] = static_figure().svg
    display(bundle, raw=True)
