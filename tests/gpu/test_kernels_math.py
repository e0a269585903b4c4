"""jit's math functions (exp, log, sqrt, isfinite) in a simulated kernel: float32 in, float32 out, NumPy's values."""

import numpy as np

from minigrad.gpu import jit


@jit.rawkernel()
def math_of_each(x, exps, logs, roots, finite, n):
    i = jit.grid(1)
    if i < n:
        exps[i] = jit.exp(x[i])
        logs[i] = jit.log(x[i])
        roots[i] = jit.sqrt(x[i])
        finite[i] = jit.isfinite(x[i])


def test_math_functions_match_numpy_in_float32():
    x = np.array([0.5, 1.0, 4.0, 90.0, np.inf, np.nan, -1.0], np.float32)
    n = len(x)
    exps, logs, roots = (np.zeros(n, np.float32) for _ in range(3))
    finite = np.zeros(n, np.bool_)
    with np.errstate(invalid="ignore", over="ignore"):  # exp(90) overflows float32, log(-1) is NaN
        math_of_each[1, 32](x, exps, logs, roots, finite, n)
        np.testing.assert_array_equal(exps, np.exp(x))
        np.testing.assert_array_equal(logs, np.log(x))
        np.testing.assert_array_equal(roots, np.sqrt(x))
    np.testing.assert_array_equal(finite, np.isfinite(x))


def test_math_functions_keep_float32_scalars_float32():
    values = []

    @jit.rawkernel()
    def record(x):
        values.append(jit.exp(x[0]) + jit.sqrt(x[0]))

    record[1, 1](np.ones(1, np.float32))
    assert values[0].dtype == np.float32
