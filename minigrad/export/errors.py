"""``UnsupportedLayerError``: a layer that has no counterpart on the other side of the conversion."""

__all__ = ["UnsupportedLayerError"]


class UnsupportedLayerError(TypeError):
    """A model holds a layer (or a layer setting) that ``to_torch``/``from_torch`` cannot convert.

    The message names each such layer by its path in the model and its class,
    e.g. ``features.3 (LSTM)``, and lists the layers that do convert.
    """
