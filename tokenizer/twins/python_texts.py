"""Twin of :mod:`tokenizer.kernels.python_texts`: texts packed through ``str.encode``.

    >>> data, offsets = ref_pack_texts(("ab", "é", b"\\xff"))
    >>> data.tobytes(), offsets.tolist(), ref_byte_bounds(("ab", "é", b"\\xff"))
    (b'ab\\xc3\\xa9\\xff', [0, 2, 4, 5], [0, 2, 4, 5])
"""

from __future__ import annotations

import numpy as np


def ref_byte_bounds(texts) -> list[int]:
    """Twin of :func:`tokenizer.kernels.python_texts.text_byte_bounds`: per text its size if it is bytes or ASCII,
    else its length times 2, 3 or 4 by its widest character (below U+0100, U+10000, or above), cumulated."""
    bounds = [0]
    for text in texts:
        if isinstance(text, bytes) or text.isascii():
            size = len(text)
        else:
            widest = max(map(ord, text))
            size = len(text) * (2 if widest < 0x100 else 3 if widest < 0x10000 else 4)
        bounds.append(bounds[-1] + size)
    return bounds


def ref_pack_texts(texts) -> tuple[np.ndarray, np.ndarray] | None:
    """Twin of :func:`tokenizer.kernels.python_texts.pack_text_items`: ``(data, offsets)`` of the texts' UTF-8
    (bytes as they are), or ``None`` when a str holds an unpaired surrogate."""
    try:
        encoded = [text if isinstance(text, bytes) else text.encode("utf-8") for text in texts]
    except UnicodeEncodeError:
        return None
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets
