"""minigrad: a course you can pip install, from a scalar autograd engine to a GPU tensor library.

Stages (each imports only the ones before it): ``minigrad.scalar`` (chapters 01-02),
then the tensor core, nn/optim/data, gpu, memory, amp and checkpoint.
``minigrad.viz`` (figures and widgets) and ``minigrad.grading`` (exercises and
the grader) stand outside the stage order.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``minigrad.save`` / ``minigrad.load`` (checkpoints), imported on first use so that
    ``import minigrad`` stays light and imports no stage."""
    if name in ("save", "load"):
        from minigrad.nn import serialization

        return getattr(serialization, name)
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
