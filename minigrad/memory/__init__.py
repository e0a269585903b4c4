"""``minigrad.memory`` (chapter 08): where the memory of a training step goes."""
