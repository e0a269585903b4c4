"""The float explorer: bits to value and back, bit-exact against NumPy and ml_dtypes; neighbours, ranges, the figure."""

import math
import xml.etree.ElementTree as ET
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from minigrad.viz.float_explorer import (
    FORMATS, FloatExplorer, classify, decode, describe_bits, draw_float_bits, encode, exact_decimal, neighbours,
    shortest_decimal, spacing,
)
from svg_text_boxes import assert_legible_and_apart

SVG = "{http://www.w3.org/2000/svg}"
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}
NARROW = ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


def _bits_of(array, name: str) -> np.ndarray:
    return np.asarray(array).astype(FORMATS[name].dtype).view(UINT[FORMATS[name].bits]).astype(np.int64)


def _same(a: float, b: float) -> bool:
    """Equal as floats, -0 told from 0, NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("name", NARROW)
def test_every_bit_pattern_of_the_narrow_formats_decodes_as_ml_dtypes_does(name):
    f = FORMATS[name]
    patterns = np.arange(2**f.bits, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        theirs = patterns.astype(UINT[f.bits]).view(f.dtype).astype(np.float64)
    for b, value in zip(patterns.tolist(), theirs.tolist()):
        assert _same(decode(b, f), value), (name, hex(b), decode(b, f), value)
    finite = [b for b in patterns.tolist() if classify(b, f) not in ("nan",)]
    assert all(encode(decode(b, f), f) == b for b in finite)  # every non-NaN pattern comes back


def test_float32_patterns_decode_as_numpy_does():
    gen = np.random.default_rng(0)
    specials = [0, 1, 2, 0x007FFFFF, 0x00800000, 0x00800001, 0x3F800000, 0x7F7FFFFF, 0x7F800000, 0x7F800001,
                0x7FC00000, 0x7FFFFFFF]
    patterns = specials + [p | 0x80000000 for p in specials] + gen.integers(0, 2**32, 3000).tolist()
    with np.errstate(invalid="ignore"):
        theirs = np.array(patterns, dtype=np.int64).astype(np.uint32).view(np.float32).astype(np.float64)
    for b, value in zip(patterns, theirs.tolist()):
        assert _same(decode(b, "float32"), value), hex(b)
        assert classify(b, "float32") != "nan" and encode(value, "float32") == b or math.isnan(value)


def _adversarial_float32(name: str) -> np.ndarray:
    """float32 numbers where rounding to ``name`` is hardest: the format's values, the ties between neighbours and
    one float32 ulp either side of each (all of the lowest and highest binades, a sample between), the subnormal and
    overflow edges, and random float32 numbers across the whole range."""
    f = FORMATS[name]
    patterns = np.arange(2 ** (f.bits - 1), dtype=np.int64).astype(UINT[f.bits])  # the non-negative ones
    with np.errstate(invalid="ignore", over="ignore"):
        values = patterns.view(f.dtype).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    gen = np.random.default_rng(1)
    if len(finite) > 3000:
        edge = 2 ** (f.mantissa_bits + 1)  # two binades at each end: the subnormals and the top
        middle = gen.choice(np.arange(edge, len(finite) - edge - 1), 2000, replace=False)
        keep = np.sort(np.concatenate([np.arange(edge), middle, np.arange(len(finite) - edge - 1, len(finite) - 1)]))
        low, high = finite[keep], finite[keep + 1]
    else:
        low, high = finite[:-1], finite[1:]
    ties = (low + high) / 2  # exact in float32 for these narrow formats
    top = f.max + 2.0 ** (f.max_exponent - f.mantissa_bits) / 2  # the tie between max and the next binade
    edges = [top, 2 * top, f.max * 1.01, f.smallest_subnormal / 2, f.smallest_subnormal / 4, f.smallest_subnormal * 0.75]
    with np.errstate(over="ignore"):
        candidates = np.concatenate([low, ties, edges]).astype(np.float32)
    candidates = np.concatenate([candidates, -candidates])
    nudged = np.concatenate([np.nextafter(candidates, np.float32(np.inf)), np.nextafter(candidates, np.float32(-np.inf))])
    random = gen.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([candidates, nudged, random, np.float32([np.inf, -np.inf, np.nan, -0.0, 0.0])])


@pytest.mark.parametrize("name", NARROW)
def test_encoding_rounds_as_ml_dtypes_does_from_float32(name):
    values = _adversarial_float32(name)
    with np.errstate(over="ignore", invalid="ignore"):
        theirs = _bits_of(values, name)  # NumPy/ml_dtypes round a float32 once
    for x, b in zip(values.tolist(), theirs.tolist()):
        mine = encode(x, name)
        if math.isnan(x) or classify(b, name) == "nan":
            assert classify(mine, name) == "nan", (name, x)
        else:
            assert mine == b, (name, x, hex(mine), hex(b))


def test_ties_go_to_the_even_mantissa():
    # float16 around 1: 1, 1 + 2^-10 (odd), 1 + 2^-9 (even)
    assert encode(1 + 2**-11, "float16") == 0x3C00  # halfway between 1 and 1 + 2^-10: down to the even 1
    assert encode(1 + 3 * 2**-11, "float16") == 0x3C02  # halfway between the odd and the even: up
    assert encode(1 + 2**-11 + 2**-30, "float16") == 0x3C01  # past the tie: up
    assert encode(2**-25, "float16") == 0x0000  # half the smallest subnormal: to the even zero
    assert encode(3 * 2**-25, "float16") == 0x0002
    assert encode(65520, "float16") == 0x7C00 and encode(65519.99, "float16") == 0x7BFF  # the tie past max: inf
    assert encode(464, "float8_e4m3fn") == 0x7E and encode(464.01, "float8_e4m3fn") == 0x7F  # no inf: NaN
    assert encode(-1e6, "float8_e4m3fn") == 0xFF and encode(-1e6, "float8_e5m2") == 0xFC


def test_one_rounding_from_the_exact_value():
    # 1 + 2^-24 + 2^-60: float64 rounds it onto float32's tie, which then goes down to 1; one rounding goes up.
    text = exact_decimal(Fraction(1) + Fraction(1, 2**24) + Fraction(1, 2**60), max_digits=80)
    assert encode(text, "float32") == 0x3F800001
    assert encode(float(text), "float32") == 0x3F800000 == int(np.float32(float(text)).view(np.uint32))
    # ml_dtypes rounds float64 to bfloat16 through float32: twice; encode rounds once
    x = 1 + 2**-8 + 2**-40
    assert int(np.float64(x).astype(ml_dtypes.bfloat16).view(np.uint16)) == 0x3F80
    assert encode(x, "bfloat16") == 0x3F81


@pytest.mark.parametrize("text, name, bits", [
    ("0.1", "float32", 0x3DCCCCCD), ("0.1", "float16", 0x2E66), ("0.1", "bfloat16", 0x3DCD),
    ("-0", "float32", 0x80000000), ("-0.0", "float16", 0x8000), ("1e-45", "float32", 0x00000001),
    ("inf", "float16", 0x7C00), ("-inf", "bfloat16", 0xFF80), ("nan", "float32", 0x7FC00000),
    ("inf", "float8_e4m3fn", 0x7F), ("448", "float8_e4m3fn", 0x7E), ("57344", "float8_e5m2", 0x7B),
    ("65504", "float16", 0x7BFF), ("1e-8", "float16", 0x0000), ("3.4028235e38", "float32", 0x7F7FFFFF),
])
def test_typed_values_set_the_bits_numpy_gives(text, name, bits):
    assert encode(text, name) == bits
    if name in ("float32", "float16"):
        assert int(np.array(float(text), dtype=name).view(UINT[FORMATS[name].bits])) == bits


def test_spacing_is_the_distance_to_numpys_next_value():
    gen = np.random.default_rng(2)
    for dtype in (np.float32, np.float16):
        name = np.dtype(dtype).name
        values = np.concatenate([gen.standard_normal(300).astype(dtype) * dtype(100),
                                 dtype([0, -0.0, np.finfo(dtype).tiny, np.finfo(dtype).smallest_subnormal, 1, -1,
                                        np.finfo(dtype).max, -np.finfo(dtype).max])])
        for x in values:
            b = encode(float(x), name)
            below, above = spacing(b, name)
            with np.errstate(over="ignore"):
                up, down = np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(-np.inf))
            assert above == (None if np.isinf(up) else float(up) - float(x)), (name, x)
            assert below == (None if np.isinf(down) else float(x) - float(down)), (name, x)


def test_neighbours_at_the_edges():
    f16 = FORMATS["float16"]
    assert neighbours(0x0000, f16) == (0x8001, 0x0001) == neighbours(0x8000, f16)  # ±0 are one number
    assert neighbours(0x0001, f16) == (0x0000, 0x0002) and neighbours(0x8001, f16) == (0x8002, 0x8000)
    assert neighbours(0x7BFF, f16) == (0x7BFE, 0x7C00) and spacing(0x7BFF, f16) == (32.0, None)  # above max: inf
    assert neighbours(0x7C00, f16) == (0x7BFF, None) and neighbours(0xFC00, f16) == (None, 0xFBFF)
    assert neighbours(0x7E00, f16) == (None, None) and spacing(0x7E00, f16) == (None, None)
    assert neighbours(0x7E, "float8_e4m3fn") == (0x7D, None)  # 448: nothing above (no inf)
    assert spacing(encode(1.0, "bfloat16"), "bfloat16") == (2**-8, 2**-7)  # the gap doubles at a power of two


@pytest.mark.parametrize("name", ["float32", *NARROW])
def test_ranges_match_finfo(name):
    f = FORMATS[name]
    info = np.finfo(f.dtype) if name in ("float32", "float16") else ml_dtypes.finfo(f.dtype)
    assert f.max == float(info.max) and f.smallest_normal == float(info.tiny)
    assert f.smallest_subnormal == float(info.smallest_subnormal) and f.eps == float(info.eps)
    assert math.floor(f.mantissa_bits * math.log10(2)) == int(info.precision) or name.startswith("float8")
    assert f.decimal_digits == pytest.approx((info.nmant + 1) * math.log10(2))
    assert decode(encode(f.max, f), f) == f.max and classify(encode(f.smallest_subnormal, f), f) == "subnormal"


def test_shortest_decimal_reads_back_and_exact_decimal_is_exact():
    assert shortest_decimal(encode("0.1", "float32"), "float32") == "0.1"
    assert shortest_decimal(encode("65504", "float16"), "float16") == "65500"  # as NumPy prints it: 65504 is nearest
    gen = np.random.default_rng(4)
    for dtype in (np.float16, np.float32):
        for x in gen.standard_normal(200).astype(dtype) * dtype(1000):
            assert float(shortest_decimal(encode(float(x), dtype.__name__), dtype.__name__)) == float(str(x))
    assert exact_decimal(decode(0x3DCCCCCD, "float32")) == "0.100000001490116119384765625"
    assert exact_decimal(Fraction(1, 2**149)).startswith("1.40129846432481707092372958328991613128")
    assert exact_decimal(Fraction(1, 2**149)).endswith("…")
    gen = np.random.default_rng(3)
    for b in gen.integers(0, 2**16, 500).tolist():
        if classify(b, "bfloat16") != "nan":
            assert encode(shortest_decimal(b, "bfloat16"), "bfloat16") == b


@pytest.mark.parametrize("value, name", [
    ("0.1", "float32"), ("-1e-40", "float32"), ("nan", "float16"), ("65504", "float16"), ("-inf", "bfloat16"),
    ("1e-39", "bfloat16"), ("448", "float8_e4m3fn"), ("0.001", "float8_e4m3fn"), ("-0", "float8_e5m2"),
    ("3e-5", "float8_e5m2"),
])
def test_the_figure_is_legible_apart_and_deterministic(value, name):
    figure = draw_float_bits(encode(value, name), name)
    assert figure.svg == draw_float_bits(encode(value, name), name).svg
    assert_legible_and_apart(figure)
    cells = [r for r in ET.fromstring(figure.svg).iter(f"{SVG}rect") if "data-bit" in r.attrib]
    assert [int(r.get("data-bit")) for r in cells] == list(reversed(range(FORMATS[name].bits)))


def test_the_figure_says_how_the_bits_decode():
    lines = describe_bits(0x3DCCCCCD, "float32")
    assert "exponent 01111011 = 123, minus the bias 127: 2^-4" in lines
    assert "value = +1.6000000238418579 x 2^-4 = 0.100000001490116119384765625" in lines
    assert any("subnormal" in line for line in describe_bits(0x0001, "float16"))
    svg = draw_float_bits(0x3DCCCCCD, "float32").svg
    assert "2^-24 = 5.96e-08" in svg and ">65504<" in svg and ">float8_e4m3fn<" in svg


def test_the_explorer_toggles_bits_and_keeps_the_value_across_formats():
    explorer = FloatExplorer("0.1")
    assert explorer.bits == 0x3DCCCCCD
    explorer.toggle(31)
    assert explorer.value == -decode(0x3DCCCCCD, "float32")
    explorer.set_format("float16")
    assert explorer.bits == 0xAE66  # -0.1 rounded into float16
    explorer.set_value("-0")
    explorer.set_format("bfloat16")
    assert explorer.bits == 0x8000
    explorer.set_value(1e6)
    explorer.set_format("float8_e4m3fn")
    assert classify(explorer.bits, "float8_e4m3fn") == "nan"  # past 448, and no inf
    with pytest.raises(ValueError, match="position must be 0 to 7"):
        explorer.toggle(8)
    with pytest.raises(ValueError, match="not a number"):
        explorer.set_value("zero point one")
    with pytest.raises(ValueError, match="unknown float format"):
        explorer.set_format("float64")


def test_the_widget_controls_follow_and_set_the_state():
    pytest.importorskip("ipywidgets")
    explorer = FloatExplorer("0.1")
    explorer.widget
    assert [t.description for t in explorer._toggles] == list(format(0x3DCCCCCD, "032b"))
    explorer._toggles[0].value = True  # the sign
    assert explorer.bits == 0xBDCCCCCD and explorer._value_box.value == "-0.1"
    explorer._format_box.value = "float8_e5m2"
    assert len(explorer._toggle_row.children) == 8 and explorer.bits == encode("-0.1", "float8_e5m2")
    explorer._value_box.value = "2.5"
    assert explorer.bits == encode(2.5, "float8_e5m2") and "gap" in explorer._message.value
    explorer._value_box.value = "abc"
    assert "not a number" in explorer._message.value and explorer.bits == encode(2.5, "float8_e5m2")
    assert "<svg" in explorer._picture.value
