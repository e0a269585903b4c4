"""What :func:`~minigrad.tensor.gradcheck.gradcheck` reports: the worst element, and the error it raises."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GradcheckError", "GradcheckResult"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` when backward and finite differences disagree."""


@dataclass(frozen=True)
class GradcheckResult:
    """Outcome of :func:`gradcheck`; truthy when the check passed."""

    ok: bool
    input_index: int  # which input holds the worst element
    element: tuple  # its index inside that input
    analytic: float
    numeric: float
    error: float  # |analytic - numeric|
    checked: int  # how many elements were compared

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        verdict = "OK" if self.ok else "MISMATCH"
        return (
            f"gradcheck {verdict} ({self.checked} elements): worst is input {self.input_index} at "
            f"{self.element}: backward gives {self.analytic:.8g}, finite differences give "
            f"{self.numeric:.8g} (difference {self.error:.3g})"
        )
