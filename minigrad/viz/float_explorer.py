"""The bits of a floating point number: sign, exponent and mantissa of float32, float16, bfloat16 and two float8s.

A format with ``e`` exponent bits and ``m`` mantissa bits stores
``(-1)^s * 1.mantissa * 2^(exponent - bias)`` (normal numbers, ``bias =
2^(e-1) - 1``); an exponent field of 0 holds the subnormals ``(-1)^s *
0.mantissa * 2^(1 - bias)`` and the zeros; an exponent field of all ones
holds inf (mantissa 0) and NaN. ``float8_e4m3fn`` ("finite") has no inf: its
top exponent holds numbers too, and only the mantissa of all ones is NaN.

The pure functions work on bit patterns (ints) and exact values (``Fraction``):

- ``decode(bits, fmt)``: the value the bits stand for (a Python float; every
  value of these formats is a float64 exactly);
- ``encode(value, fmt)``: the bits of the nearest value, ties to the even
  mantissa, one rounding from the exact value (a decimal string such as
  ``"0.1"`` is read exactly); past ``max`` a value becomes inf, or NaN in a
  format without inf;
- ``neighbours(bits, fmt)``: the bit patterns of the next values below and
  above, and ``spacing(bits, fmt)`` the gaps to them (the ulps);
- ``FloatFormat``'s properties: max, smallest normal, smallest subnormal,
  machine epsilon, decimal digits.

``FloatExplorer`` holds a format and a bit pattern; its widget has a format
dropdown, a value box and a toggle per bit, and its figure shows the bits,
how they decode, the neighbours and every format's range.

Invariants
- ``decode(encode(x))`` is ``x`` rounded once to the format (bit-exact
  against NumPy and ml_dtypes, which round float32 inputs once).
- ``encode(decode(b)) == b`` for every bit pattern but NaNs (one NaN each).
- The figure is a pure function of (format, bits): byte-identical SVG.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from numbers import Real

from minigrad.viz.graph_svg import TEXT, TEXT_SOFT, SVGFigure, _element, _text, _text_width
from minigrad.viz.widget_frame import WidgetFrame, widget_error

__all__ = [
    "FloatFormat", "FORMATS", "decode", "decode_exact", "encode", "neighbours", "spacing", "classify",
    "shortest_decimal", "exact_decimal", "describe_bits", "format_table", "draw_float_bits", "FloatExplorer",
]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating point format: 1 sign bit, ``exponent_bits``, ``mantissa_bits`` (the stored fraction)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    has_inf: bool = True  # False: the top exponent holds numbers, and only its all-ones mantissa is NaN

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_exponent(self) -> int:
        """The exponent of the largest binade of finite numbers."""
        top = 2**self.exponent_bits - 1
        return (top if not self.has_inf else top - 1) - self.bias

    @property
    def min_exponent(self) -> int:
        return 1 - self.bias

    @property
    def max_exact(self) -> Fraction:
        m = self.mantissa_bits
        largest = 2 ** (m + 1) - (2 if not self.has_inf else 1)  # the fn format's all-ones mantissa is NaN
        return Fraction(largest) * Fraction(2) ** (self.max_exponent - m)

    @property
    def max(self) -> float:
        return float(self.max_exact)

    @property
    def smallest_normal(self) -> float:
        return 2.0**self.min_exponent

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (self.min_exponent - self.mantissa_bits)

    @property
    def eps(self) -> float:
        """Machine epsilon: the gap from 1 to the next number, ``2^-mantissa_bits``."""
        return 2.0**-self.mantissa_bits

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits the ``mantissa_bits + 1`` bits of precision carry: ``(m + 1) log10 2``."""
        return (self.mantissa_bits + 1) * math.log10(2)

    @property
    def dtype(self):
        """The NumPy dtype (ml_dtypes' for bfloat16 and the float8s)."""
        import numpy as np

        if self.name in ("float32", "float16"):
            return np.dtype(self.name)
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, self.name))

    @property
    def nan_bits(self) -> int:
        """The NaN NumPy and ml_dtypes make: sign 0, exponent all ones, mantissa's top bit (all bits: fn)."""
        m = self.mantissa_bits
        top = (2**self.exponent_bits - 1) << m
        return top | (2**m - 1 if not self.has_inf else 1 << (m - 1))

    def __str__(self) -> str:
        return self.name


FORMATS: dict[str, FloatFormat] = {f.name: f for f in (
    FloatFormat("float32", 8, 23),
    FloatFormat("float16", 5, 10),
    FloatFormat("bfloat16", 8, 7),
    FloatFormat("float8_e4m3fn", 4, 3, has_inf=False),
    FloatFormat("float8_e5m2", 5, 2),
)}


def _format(fmt) -> FloatFormat:
    if isinstance(fmt, FloatFormat):
        return fmt
    if fmt in FORMATS:
        return FORMATS[fmt]
    raise ValueError(f"unknown float format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _fields(bits: int, f: FloatFormat) -> tuple[int, int, int]:
    m, e = f.mantissa_bits, f.exponent_bits
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits < 2**f.bits:
        raise ValueError(f"{f.name}: bits must be an int from 0 to 2**{f.bits} - 1, got {bits!r}")
    return bits >> (e + m), (bits >> m) & (2**e - 1), bits & (2**m - 1)


def classify(bits: int, fmt) -> str:
    """``"zero"``, ``"subnormal"``, ``"normal"``, ``"inf"`` or ``"nan"``."""
    f = _format(fmt)
    _, exponent, mantissa = _fields(bits, f)
    top = 2**f.exponent_bits - 1
    if exponent == top and (f.has_inf or mantissa == 2**f.mantissa_bits - 1):
        return "nan" if mantissa else "inf"
    if exponent == 0:
        return "subnormal" if mantissa else "zero"
    return "normal"


def decode_exact(bits: int, fmt) -> Fraction | float:
    """The exact value of ``bits``: a Fraction (-0 is Fraction(0): see ``decode``), or inf/-inf/nan."""
    f = _format(fmt)
    sign, exponent, mantissa = _fields(bits, f)
    kind = classify(bits, f)
    if kind == "nan":
        return math.nan
    if kind == "inf":
        return -math.inf if sign else math.inf
    m = f.mantissa_bits
    if kind in ("zero", "subnormal"):
        value = Fraction(mantissa) * Fraction(2) ** (f.min_exponent - m)
    else:
        value = Fraction(2**m + mantissa) * Fraction(2) ** (exponent - f.bias - m)
    return -value if sign else value


def decode(bits: int, fmt) -> float:
    """The value ``bits`` stand for in ``fmt``, as a Python float (exact; -0.0 for the negative zero)."""
    f = _format(fmt)
    sign, exponent, mantissa = _fields(bits, f)
    kind = classify(bits, f)
    if kind == "nan":
        return math.nan
    m = f.mantissa_bits
    if kind == "inf":
        magnitude = math.inf
    elif kind == "normal":
        magnitude = math.ldexp(2**m + mantissa, exponent - f.bias - m)
    else:
        magnitude = math.ldexp(mantissa, f.min_exponent - m)
    return -magnitude if sign else magnitude


def _parse(value) -> tuple[int, int, int] | tuple[int, float]:
    """(sign bit, numerator, denominator) of the exact magnitude of a number or decimal string; (sign, inf or nan)."""
    if isinstance(value, str):
        text = value.strip().lower().replace("_", "")
        sign = 1 if text.startswith("-") else 0
        body = text.lstrip("+-")
        if body in ("inf", "infinity"):
            return sign, math.inf
        if body == "nan":
            return 0, math.nan
        try:
            exact = abs(Fraction(body))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a number: {value!r} (type a decimal such as 0.1, -2.5e-3, inf or nan)") from None
        return sign, exact.numerator, exact.denominator
    if isinstance(value, Fraction):
        return (1 if value < 0 else 0), abs(value.numerator), value.denominator
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"expected a number or a decimal string, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        return 0, math.nan
    sign = 1 if math.copysign(1.0, x) < 0 else 0
    if math.isinf(x):
        return sign, math.inf
    return (sign, *abs(x).as_integer_ratio())


def encode(value, fmt) -> int:
    """The bits of ``value`` rounded to ``fmt``: nearest, ties to even; beyond ``max``: inf (NaN without inf)."""
    f = _format(fmt)
    m, width = f.mantissa_bits, f.bits - 1
    parsed = _parse(value)
    sign = parsed[0]
    signed = sign << width
    overflow = signed | (f.nan_bits if not f.has_inf else (2**f.exponent_bits - 1) << m)
    if len(parsed) == 2:  # inf or nan
        return f.nan_bits if math.isnan(parsed[1]) else overflow
    _, p, q = parsed
    if p == 0:
        return signed
    exponent = p.bit_length() - q.bit_length()  # floor(log2(p / q)), or one more
    if (p << max(0, -exponent)) < (q << max(0, exponent)):
        exponent -= 1
    exponent = max(exponent, f.min_exponent)  # below it, the quantum of the subnormals
    shift = m - exponent  # count = p / q * 2^shift, rounded half to even
    numerator, denominator = p << max(0, shift), q << max(0, -shift)
    count, rest = divmod(numerator, denominator)
    if 2 * rest > denominator or (2 * rest == denominator and count % 2):
        count += 1
    bits = ((exponent + f.bias) << m) + count - 2**m  # a carry into the next binade adds itself
    if bits > (f.nan_bits if not f.has_inf else (2**f.exponent_bits - 1) << m) - 1:
        return overflow
    return signed | bits


def neighbours(bits: int, fmt) -> tuple[int | None, int | None]:
    """The bit patterns of the next value below and above ``bits``' (None past the ends, and for NaN).

    ±0 count as one number: their neighbours are ∓ the smallest subnormal. Above
    ``max`` lies inf (None in a format without inf).
    """
    f = _format(fmt)
    sign, _, _ = _fields(bits, f)
    kind = classify(bits, f)
    if kind == "nan":
        return None, None
    magnitude = bits & (2 ** (f.bits - 1) - 1)
    negative = 1 << (f.bits - 1)
    if kind == "zero":
        return negative | 1, 1
    if kind == "inf":
        return (bits - 1, None) if not sign else (None, bits - 1)

    def outward(b: int) -> int | None:
        nxt = b + 1
        return None if classify(nxt, f) == "nan" else nxt

    inward = bits - 1  # toward zero; from the smallest subnormal, to the zero of the same sign
    return (outward(bits), inward) if sign else (inward, outward(bits))


def spacing(bits: int, fmt) -> tuple[float | None, float | None]:
    """(gap to the value below, gap to the value above): the ulps around a finite value; None where no finite neighbour."""
    f = _format(fmt)
    if classify(bits, f) in ("nan", "inf"):
        return None, None
    value = decode_exact(bits, f)
    gaps = []
    for other in neighbours(bits, f):
        neighbour = None if other is None else decode_exact(other, f)
        gaps.append(None if neighbour is None or isinstance(neighbour, float) else float(abs(value - neighbour)))
    return gaps[0], gaps[1]


def shortest_decimal(bits: int, fmt) -> str:
    """The shortest decimal (``:.{d}g``) that ``encode`` reads back as ``bits``: ``"0.1"`` for float32's 0.1."""
    f = _format(fmt)
    kind = classify(bits, f)
    value = decode(bits, f)
    if kind in ("nan", "inf", "zero"):
        return {"nan": "nan", "inf": "-inf" if value < 0 else "inf"}.get(kind, "-0" if math.copysign(1, value) < 0 else "0")
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if encode(text, f) == bits:
            exponent = Decimal(text).adjusted()
            return format(Decimal(text), "f") if -5 <= exponent < 16 and "e" in text else text
    return repr(value)


def exact_decimal(value: Fraction | float, max_digits: int = 40) -> str:
    """The exact decimal expansion of a binary fraction, cut to ``max_digits`` significant digits with "…"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    value = Fraction(value)
    if value == 0:
        return "0"
    with localcontext() as context:
        context.prec = 400  # 2**-149 has 105 significant digits: exact
        d = Decimal(value.numerator) / Decimal(value.denominator)
    digits = d.as_tuple().digits
    if len(digits) <= max_digits and -30 <= d.adjusted() < max_digits:
        return format(d, "f")
    with localcontext() as context:
        context.prec = max_digits
        context.rounding = "ROUND_DOWN"
        cut = +d
    return format(cut, "e") + ("…" if cut != d else "")


# ------------------------------------------------------------------ the figure

SIGN_FILL, EXPONENT_FILL, MANTISSA_FILL = ("#fde2e2", "#d64545"), ("#e0ecfb", "#3b7dd8"), ("#dcf2e2", "#3f9e5a")
MARGIN, TOP = 12, 12
BIT_AREA = 760  # the widest row of cells (float32's), so every figure fits in 900 px
FIELD_GAP = 8
CELL_HEIGHT = 30
LINE = 18
SMALL = 11


def _cell_width(f: FloatFormat) -> int:
    return min(40, (BIT_AREA - 2 * FIELD_GAP) // f.bits)


def _g(x: float | None) -> str:
    """A number in 4 significant digits (``-0`` as ``0``)."""
    if x is None:
        return "none"
    return format(0.0 if x == 0 else x, ".4g")


def _range_number(x: float) -> str:
    """A limit of a format: a whole number as it is, a power of two as ``2^k = ...``, else 4 digits."""
    if x == int(x) and x < 1e6:
        return str(int(x))
    mantissa, exponent = math.frexp(x)
    return f"2^{exponent - 1} = {x:.3g}" if mantissa == 0.5 else _g(x)


def describe_bits(bits: int, fmt) -> list[str]:
    """The lines that say how ``bits`` decode: fields, significand, value, its shortest decimal, neighbours."""
    f = _format(fmt)
    sign, exponent, mantissa = _fields(bits, f)
    kind = classify(bits, f)
    e, m = f.exponent_bits, f.mantissa_bits
    exp_text, man_text = format(exponent, f"0{e}b"), format(mantissa, f"0{m}b")
    lines = [f"sign {sign}: {'-' if sign else '+'}"]
    if kind in ("normal", "subnormal", "zero"):
        if kind == "normal":
            lines.append(f"exponent {exp_text} = {exponent}, minus the bias {f.bias}: 2^{exponent - f.bias}")
            lines.append(f"significand 1.{man_text} (binary; the leading 1 is implicit) "
                         f"= {exact_decimal(Fraction(2**m + mantissa, 2**m))}")
            scale = exponent - f.bias
        else:
            lines.append(f"exponent {exp_text}: {kind}, no implicit 1; the exponent is 1 - bias = {f.min_exponent}")
            lines.append(f"significand 0.{man_text} (binary) = {exact_decimal(Fraction(mantissa, 2**m))}")
            scale = f.min_exponent
        value = decode_exact(bits, f)
        significand = Fraction(mantissa + (2**m if kind == "normal" else 0), 2**m)
        lines.append(f"value = {'-' if sign else '+'}{float(significand):.17g} x 2^{scale} = "
                     f"{'-' if sign and value == 0 else ''}{exact_decimal(value)}")
        lines.append(f"shortest decimal that reads back: {shortest_decimal(bits, f)}")
        below, above = neighbours(bits, f)
        gap_below, gap_above = spacing(bits, f)
        parts = []
        for name, nb, gap in (("below", below, gap_below), ("above", above, gap_above)):
            if nb is None:
                parts.append(f"{name}: none (past max: NaN)")
            elif gap is None:
                parts.append(f"{name}: {decode(nb, f)}")
            else:
                exact = exact_decimal(decode_exact(nb, f))
                parts.append(f"{name}: {exact if len(exact) <= 12 else shortest_decimal(nb, f)} (gap {_g(gap)})")
        lines.append("neighbours " + ";  ".join(parts))
    elif kind == "inf":
        lines.append(f"exponent {exp_text} (all ones), mantissa {man_text} (all zeros): "
                     f"{'-' if sign else '+'}infinity")
        lines.append("what an overflow rounds to: any number past max")
    else:
        lines.append(f"exponent {exp_text} (all ones), mantissa {man_text}: NaN, not a number")
        lines.append("what 0/0, inf - inf or inf * 0 give; it spreads through every op it enters")
    return lines


def format_table() -> list[tuple[str, ...]]:
    """One row per format: name, bits (sign/exponent/mantissa), max, smallest normal, smallest subnormal, eps, digits."""
    rows = [("format", "s/e/m", "max", "min normal", "min subnormal", "epsilon", "digits")]
    for f in FORMATS.values():
        rows.append((f.name, f"1/{f.exponent_bits}/{f.mantissa_bits}", *map(_range_number, (
            f.max, f.smallest_normal, f.smallest_subnormal, f.eps)), f"{f.decimal_digits:.2f}"))
    return rows


def draw_float_bits(bits: int, fmt) -> SVGFigure:
    """The bits of ``bits`` in ``fmt`` (fields coloured), how they decode, and the table of formats (``fmt``'s row bold)."""
    f = _format(fmt)
    _fields(bits, f)
    cell = _cell_width(f)
    kind = classify(bits, f)
    parts = []
    y = TOP + 14
    title = (f"{f.name}: 1 sign bit, {f.exponent_bits} exponent bits, {f.mantissa_bits} mantissa bits, "
             f"bias {f.bias}{'' if f.has_inf else ', no inf'}")
    parts.append(_text(title, MARGIN, y, weight="bold"))
    y += 10
    fields = [("sign", 1, SIGN_FILL), ("exponent", f.exponent_bits, EXPONENT_FILL),
              ("mantissa", f.mantissa_bits, MANTISSA_FILL)]
    index_y, cell_y = y + 12, y + 18
    x, position = float(MARGIN), f.bits - 1
    labels = []
    for name, count, (fill, stroke) in fields:
        start = x
        for _ in range(count):
            bit = (bits >> position) & 1
            parts.append(_element("rect", {
                "data-bit": position, "fill": stroke if bit else fill, "height": CELL_HEIGHT, "rx": 3,
                "stroke": stroke, "width": cell - 2, "x": x + 1, "y": cell_y}))
            parts.append(_text(str(bit), x + cell / 2, cell_y + 20, anchor="middle", weight="bold",
                               fill="#ffffff" if bit else TEXT))
            if cell >= 22 or position % 2 == 0:
                parts.append(_text(str(position), x + cell / 2, index_y, anchor="middle", fill=TEXT_SOFT, size=SMALL))
            x += cell
            position -= 1
        labels.append((name, (start + x) / 2))
        x += FIELD_GAP
    label_y = cell_y + CELL_HEIGHT + 16
    for name, centre in labels:
        parts.append(_text(name, centre, label_y, anchor="middle", fill=TEXT_SOFT))
    bits_right = x - FIELD_GAP
    parts.append(_text(f"{kind}", bits_right + 12, cell_y + 20, fill=TEXT_SOFT))
    y = label_y + 8
    for line in describe_bits(bits, f):
        y += LINE
        parts.append(_text(line, MARGIN, y))
    y += 14
    rows = format_table()
    widths = [max(_text_width(row[c]) for row in rows) + 16 for c in range(len(rows[0]))]
    for r, row in enumerate(rows):
        y += LINE
        bold = r == 0 or row[0] == f.name
        if row[0] == f.name:
            parts.append(_element("rect", {"fill": "#fff4c2", "height": LINE, "width": sum(widths) - 8,
                                           "x": MARGIN - 4, "y": y - 13}))
        cx = float(MARGIN)
        for c, cell_text in enumerate(row):
            parts.append(_text(cell_text, cx, y, weight="bold" if bold else None, fill=TEXT if bold else TEXT_SOFT))
            cx += widths[c]
    lines = [title, *describe_bits(bits, f)]
    width = max(bits_right + 12 + _text_width(kind), MARGIN + sum(widths), *(MARGIN + _text_width(s) for s in lines))
    width, height = math.ceil(width + MARGIN), y + MARGIN
    background = _element("rect", {"fill": "#ffffff", "height": height, "width": width, "x": 0, "y": 0})
    return SVGFigure(background + "".join(parts), width, height)


# ------------------------------------------------------------------ the widget


class FloatExplorer(WidgetFrame):
    """A format and a bit pattern: toggle bits, type a value, switch formats (the value is rounded into the new one).

    ``set_value(x)``, ``set_bits(b)``, ``toggle(i)`` (bit ``i``, 0 the lowest
    mantissa bit) and ``set_format(name)`` change the state; ``value``,
    ``describe()`` and ``figure()`` read it; ``widget`` (ipywidgets) has a
    dropdown, a value box and one toggle per bit.
    """

    def __init__(self, value="0.1", fmt: str = "float32"):
        self.format = _format(fmt)
        self.bits = encode(value, self.format)
        self._error = ""

    @property
    def value(self) -> float:
        return decode(self.bits, self.format)

    def set_value(self, value) -> None:
        """The bits of ``value`` (a number or a decimal string) rounded to the current format."""
        self.bits = encode(value, self.format)
        self._redraw()

    def set_bits(self, bits: int) -> None:
        _fields(bits, self.format)
        self.bits = bits
        self._redraw()

    def toggle(self, position: int) -> None:
        """Flip bit ``position`` (0 = the lowest mantissa bit, ``bits - 1`` = the sign)."""
        if not isinstance(position, int) or not 0 <= position < self.format.bits:
            raise ValueError(f"FloatExplorer.toggle: position must be 0 to {self.format.bits - 1}, got {position!r}")
        self.set_bits(self.bits ^ (1 << position))

    def set_format(self, fmt) -> None:
        """Switch to ``fmt``; the value is rounded into it (NaN stays NaN)."""
        old, new = self.format, _format(fmt)
        value = decode_exact(self.bits, old)
        sign = _fields(self.bits, old)[0]
        self.format = new
        if isinstance(value, Fraction) and value == 0:
            self.bits = sign << (new.bits - 1)
        else:
            self.bits = encode(value, new)
        self._rebuild_toggles()
        self._redraw()

    def describe(self) -> list[str]:
        return describe_bits(self.bits, self.format)

    def figure(self) -> SVGFigure:
        return draw_float_bits(self.bits, self.format)

    # ------------------------------------------------------------------ the widget

    def _rows(self, widgets) -> list:
        self._widgets = widgets
        self._format_box = widgets.Dropdown(options=list(FORMATS), value=self.format.name, description="format")
        self._value_box = widgets.Text(value=shortest_decimal(self.bits, self.format), description="value",
                                       continuous_update=False)
        self._message = widgets.HTML()
        self._toggle_row = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self._rebuild_toggles()
        self._format_box.observe(self._on_format, names="value")
        self._value_box.observe(self._on_value, names="value")
        return [[self._format_box, self._value_box], self._toggle_row, self._message, self._picture]

    def _rebuild_toggles(self) -> None:
        if not hasattr(self, "_toggle_row"):  # the widget is not built yet
            return
        widgets = self._widgets
        toggles = []
        for position in reversed(range(self.format.bits)):
            toggle = widgets.ToggleButton(value=False, description="0", tooltip=f"bit {position}",
                                          layout=widgets.Layout(width="26px", padding="0"))
            toggle.position = position
            toggle.observe(self._on_toggle, names="value")
            toggles.append(toggle)
        self._toggles = toggles
        self._toggle_row.children = toggles

    def _on_format(self, change) -> None:
        if not self._syncing:
            self.set_format(change["new"])

    def _on_value(self, change) -> None:
        if self._syncing:
            return
        try:
            self.set_value(change["new"])
        except (ValueError, TypeError) as error:
            self._error = str(error)
            self._message.value = widget_error(self._error)
            return

    def _on_toggle(self, change) -> None:
        if not self._syncing:
            self.toggle(change["owner"].position)

    def _refresh(self) -> None:
        self._error = ""
        with self._moving_controls():
            self._format_box.value = self.format.name
            self._value_box.value = shortest_decimal(self.bits, self.format)
            for toggle in self._toggles:
                bit = (self.bits >> toggle.position) & 1
                toggle.value, toggle.description = bool(bit), str(bit)
        self._message.value = f"<code>{html.escape(self.describe()[-1])}</code>"
        super()._refresh()

    def __repr__(self) -> str:
        return f"FloatExplorer({self.format.name}, bits 0x{self.bits:0{(self.format.bits + 3) // 4}x} = {self.value!r})"
