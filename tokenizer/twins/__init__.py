"""The Python twins of the kernels of :mod:`tokenizer.kernels` (for tests only)."""
