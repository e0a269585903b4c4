"""Numerical gradients by central differences, to check ``backward()``.

``(f(x + h) - f(x - h)) / 2h`` has error O(h**2), against O(h) for the
one-sided difference; with float64 and h = 1e-6 the two sides agree to about
1e-8 for smooth functions. Kinks (relu at 0) are the one place it cannot judge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minigrad.scalar.engine import Value

__all__ = ["numerical_gradient", "gradcheck", "GradcheckResult"]


def numerical_gradient(f: Callable[..., float], xs: Sequence[float], h: float = 1e-6) -> list[float]:
    """d f / d x_i for each input, by central differences; ``f`` takes floats, returns a float."""
    xs = [float(x) for x in xs]
    grads = []
    for i in range(len(xs)):
        plus = xs.copy()
        minus = xs.copy()
        plus[i] += h
        minus[i] -= h
        grads.append((float(f(*plus)) - float(f(*minus))) / (2.0 * h))
    return grads


@dataclass(frozen=True)
class GradcheckResult:
    """Outcome of :func:`gradcheck`: analytic vs numerical gradient, worst input first."""

    analytic: list[float]
    numerical: list[float]
    worst_index: int
    worst_error: float
    ok: bool

    def __str__(self) -> str:
        i = self.worst_index
        verdict = "OK" if self.ok else "MISMATCH"
        return (
            f"gradcheck {verdict}: worst input #{i}: backward gives {self.analytic[i]:.8g}, "
            f"finite differences give {self.numerical[i]:.8g} (error {self.worst_error:.2e})"
        )


def gradcheck(
    f: Callable[..., Value], xs: Sequence[float], h: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-4
) -> GradcheckResult:
    """Compare ``backward()`` of ``f(*Values)`` with finite differences.

    ``f`` must accept Values and return a single Value. The check passes when
    every input satisfies ``|analytic - numerical| <= atol + rtol * |numerical|``.
    """
    leaves = [Value(float(x)) for x in xs]
    out = f(*leaves)
    if not isinstance(out, Value):
        raise TypeError(f"gradcheck: f must return a Value, got {type(out).__name__}")
    out.backward()
    analytic = [v.grad for v in leaves]
    numerical = numerical_gradient(lambda *a: f(*(Value(x) for x in a)).data, xs, h)
    errors = [abs(a - n) - rtol * abs(n) for a, n in zip(analytic, numerical)]
    worst = max(range(len(errors)), key=errors.__getitem__) if errors else 0
    ok = all(e <= atol for e in errors)
    raw = abs(analytic[worst] - numerical[worst]) if errors else 0.0
    return GradcheckResult(analytic, numerical, worst, raw, ok)
