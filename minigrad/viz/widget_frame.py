"""The frame the course's widgets are built in: controls above a picture, and a static figure where widgets cannot run.

Each widget (the backprop stepper, the stride explorer, the segment map,
...) is an object whose state can be set from code and drawn as an
``SVGFigure`` with ``figure()``. ``WidgetFrame`` adds what they all share:

- ``.widget`` builds the ipywidgets box on first use: ``self._picture``
  (an HTML widget) is made first, ``_rows(widgets)`` makes the controls and
  returns the box's rows from top to bottom (a list is one row of widgets
  side by side), and ``_refresh()`` fills it in;
- ``_refresh()`` draws ``figure()`` into the picture (a widget with text
  beside its picture extends it); ``_redraw()`` calls it after a change of
  state, once the widget exists;
- ``_moving_controls()`` moves the controls to the state without their
  observers setting the state again from half-moved controls;
- the box carries the CSS classes ``minigrad-widget`` and ``minigrad-<name>``
  (``minigrad-backprop-stepper`` for ``BackpropStepper``), its picture
  ``minigrad-picture``: stable handles for a browser test or a stylesheet;
- displaying the object shows the widget with ``static_figure()`` (by
  default ``figure()``) riding along, or only the figure without
  ipywidgets (:func:`~minigrad.viz.widget_display.display_with_static_figure`);
- ``zoomed(factor)`` shows the widget's pictures and its static figure
  ``factor`` times as large (``SVGFigure.scaled``; a matplotlib picture is
  drawn at ``factor`` times its dpi), for a projector; the figures
  ``figure()`` returns keep their size.
"""

from __future__ import annotations

import html
import math
import re
from contextlib import contextmanager
from numbers import Real

from minigrad.viz.widget_display import display_with_static_figure, widget_picture

ERROR_STYLE = "color:#b42318;white-space:pre-wrap"
WIDGET_CLASS = "minigrad-widget"
PICTURE_CLASS = "minigrad-picture"


def css_class(widget_type: type) -> str:
    """The CSS class of a widget's box: ``minigrad-`` and its class name in kebab case (``minigrad-will-it-fit``)."""
    return "minigrad-" + re.sub(r"(?<!^)(?=[A-Z])", "-", widget_type.__name__).lower()


def widget_error(message: str) -> str:
    """The HTML of a message saying why the controls' values cannot be drawn."""
    return f"<pre style='{ERROR_STYLE}'>{html.escape(message)}</pre>"


class WidgetFrame:
    """Base of the course's widgets: ``.widget``, its refresh, and showing it with a static figure."""

    _widget = None  # the ipywidgets box, once built
    _syncing = False  # True while _moving_controls() moves the controls to the state
    zoom = 1.0  # how much larger than figure() the pictures are shown (zoomed())

    def static_figure(self):
        """What a front end without widgets shows: the current figure."""
        return self.figure()

    def _rows(self, widgets) -> list:
        """Make the controls (observing them as needed) and return the rows of the box, ``self._picture`` among them."""
        raise NotImplementedError

    @property
    def widget(self):
        if self._widget is None:
            import ipywidgets as widgets

            self._picture = widgets.HTML()
            self._picture.add_class(PICTURE_CLASS)
            rows = self._rows(widgets)
            self._widget = widgets.VBox([widgets.HBox(row) if isinstance(row, list) else row for row in rows])
            self._widget.add_class(WIDGET_CLASS)
            self._widget.add_class(css_class(type(self)))
            self._refresh()
        return self._widget

    def zoomed(self, factor: float):
        """Show this widget's pictures ``factor`` times as large from now on (1 is their own size); returns self."""
        if isinstance(factor, bool) or not isinstance(factor, Real) or not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"{type(self).__name__}.zoomed: factor must be a positive finite number, got {factor!r}; "
                             f"1.5 shows the pictures half as large again")
        self.zoom = float(factor)
        self._redraw()
        return self

    def _zoomed(self, figure):
        """``figure`` (an SVGFigure) as the widget shows it: scaled by ``zoom``. (A widget drawn with matplotlib
        passes ``zoom`` to ``figure_png`` instead.)"""
        return figure if self.zoom == 1 else figure.scaled(self.zoom)

    def _refresh(self) -> None:
        self._picture.value = widget_picture(self._zoomed(self.figure()).svg)

    def _redraw(self) -> None:
        """Bring the widget up to date with the state, if it has been built."""
        if self._widget is not None:
            self._refresh()

    @contextmanager
    def _moving_controls(self):
        """Inside the block, observers that set the state from the controls see ``_syncing`` and do nothing."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _ipython_display_(self) -> None:
        display_with_static_figure(lambda: self.widget, lambda: self._zoomed(self.static_figure()))
