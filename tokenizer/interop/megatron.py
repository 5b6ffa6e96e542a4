"""Megatron-LM indexed datasets (``PREFIX.bin`` + ``PREFIX.idx``): a writer, a memory-mapped reader and a merger.

Plain numpy, no Spark and no torch. Written from the format's description (Megatron-LM's ``IndexedDataset``, the
"MMIDIDX" memory-mapped layout), so files written here load with ``IndexedDataset(PREFIX)`` and the reverse.

``PREFIX.bin`` holds the tokens of every sequence back to back, in the token dtype, with no header.
``PREFIX.idx`` is, all little endian::

    offset        size      field
    0             9         magic b"MMIDIDX\\x00\\x00"
    9             8         version, uint64 == 1
    17            1         token dtype code, uint8 (see DTYPE_CODES: 4 = int32, 8 = uint16, ...)
    18            8         sequence count S, uint64
    26            8         document count D, uint64 (entries of the document index array, documents + 1)
    34            4*S       sequence lengths in tokens, int32
    34+4S         8*S       sequence pointers: byte offset of each sequence in PREFIX.bin, int64
    34+12S        8*D       document indices, int64: ``[0, end_1, end_2, ...]``; document ``i`` is the sequences
                            ``document_indices[i] .. document_indices[i+1] - 1``

shardpiece writes one sequence per document (so ``D == S + 1`` and ``document_indices == arange(S + 1)``); the reader
accepts any grouping. Multimodal ``.idx`` files (a trailing int8 mode per sequence) are not written; the reader
ignores the trailing modes if present.

Token dtype: ``uint16`` when the vocabulary has fewer than 65,500 pieces (Megatron's own rule), else ``int32``.

Example (hand-checkable)::

    >>> import tempfile, os
    >>> prefix = os.path.join(tempfile.mkdtemp(), "ds")
    >>> with MegatronWriter(prefix, vocab_size=300) as writer:
    ...     writer.add_document([1, 2, 3]); writer.add_document([]); writer.add_document([299])
    >>> dataset = MegatronDataset(prefix)
    >>> len(dataset), str(dataset.dtype), [d.tolist() for d in dataset]
    (3, 'uint16', [[1, 2, 3], [], [299]])
    >>> dataset.sequence_pointers.tolist()  # byte offsets: 3 uint16 tokens = 6 bytes
    [0, 6, 6]
"""

from __future__ import annotations

import os
import shutil
import struct
from typing import Iterable, Iterator, Sequence

import numpy as np

from tokenizer.errors import InputError, ModelFileError

INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, document count: 34 bytes

#: Megatron's dtype codes (the 18th byte of the .idx file).
DTYPE_CODES: dict[int, np.dtype] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.int8), 3: np.dtype(np.int16), 4: np.dtype(np.int32),
    5: np.dtype(np.int64), 6: np.dtype(np.float64), 7: np.dtype(np.float32), 8: np.dtype(np.uint16),
}
_CODE_OF = {dtype: code for code, dtype in DTYPE_CODES.items()}

#: Vocabularies with fewer pieces than this store uint16 tokens (Megatron's threshold), larger ones int32.
UINT16_VOCAB_LIMIT = 65_500


def token_dtype(vocab_size: int) -> np.dtype:
    """Megatron's token dtype for a vocabulary: ``token_dtype(32000) -> uint16``, ``token_dtype(65500) -> int32``."""
    return np.dtype(np.uint16) if vocab_size < UINT16_VOCAB_LIMIT else np.dtype(np.int32)


def idx_path(prefix: str | os.PathLike) -> str:
    return os.fspath(prefix) + ".idx"


def bin_path(prefix: str | os.PathLike) -> str:
    return os.fspath(prefix) + ".bin"


def write_index(
    path: str | os.PathLike, dtype: np.dtype, sequence_lengths: np.ndarray, document_indices: np.ndarray,
) -> None:
    """Write a ``.idx`` file: the header, int32 lengths, int64 byte pointers (derived), int64 document indices.

    ``sequence_lengths``: shape ``(S,)``, tokens per sequence; ``document_indices``: shape ``(D,)``, starting at 0
    and ending at ``S``.
    """
    dtype = np.dtype(dtype)
    if dtype not in _CODE_OF:
        raise InputError(f"token dtype {dtype} has no Megatron code: use uint16 or int32")
    lengths = np.asarray(sequence_lengths, dtype=np.int64)
    if len(lengths) and (lengths.min() < 0 or lengths.max() > np.iinfo(np.int32).max):
        raise InputError("a sequence length does not fit Megatron's int32 length field: split the document")
    documents = np.asarray(document_indices, dtype=np.int64)
    if len(documents) == 0 or documents[0] != 0 or documents[-1] != len(lengths) or np.any(np.diff(documents) < 0):
        raise InputError("document indices must start at 0, never decrease and end at the sequence count")
    pointers = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1] * dtype.itemsize, out=pointers[1:])
    with open(path, "wb") as handle:
        handle.write(_HEADER.pack(INDEX_MAGIC, INDEX_VERSION, _CODE_OF[dtype], len(lengths), len(documents)))
        handle.write(lengths.astype("<i4").tobytes())
        handle.write(pointers.astype("<i8").tobytes())
        handle.write(documents.astype("<i8").tobytes())


class MegatronWriter:
    """Stream documents into ``PREFIX.bin`` and write ``PREFIX.idx`` on :meth:`close` (one sequence per document).

    The files are written under the names given; atomic publication (temporary names, then rename) is the caller's
    job (``pipelines.tokenize.writers`` does it). Use as a context manager; on an exception the partial files are
    removed.
    """

    def __init__(self, prefix: str | os.PathLike, *, vocab_size: int | None = None, dtype: np.dtype | None = None):
        if dtype is None:
            if vocab_size is None:
                raise InputError("pass vocab_size (to choose uint16 or int32 tokens) or dtype")
            dtype = token_dtype(vocab_size)
        self.prefix = os.fspath(prefix)
        self.dtype = np.dtype(dtype)
        self.vocab_size = vocab_size
        self._lengths: list[np.ndarray] = []
        self._bin = open(bin_path(self.prefix), "wb")
        self.num_tokens = 0

    def add_document(self, ids: Sequence[int] | np.ndarray) -> None:
        """Append one document (a sequence of token ids)."""
        self.add_documents(np.asarray(ids, dtype=np.int64), np.array([0, len(ids)], dtype=np.int64))

    def add_documents(self, flat_ids: np.ndarray, offsets: np.ndarray) -> None:
        """Append many documents at once: document ``i`` is ``flat_ids[offsets[i]:offsets[i+1]]``.

        ``flat_ids``: integer array, shape ``(T,)``; ``offsets``: integer array, shape ``(n + 1,)``, ``offsets[0]``
        may be non-zero (an Arrow list array's offsets into its values).
        """
        offsets = np.asarray(offsets, dtype=np.int64)
        flat = np.asarray(flat_ids)[offsets[0]:offsets[-1]]
        if len(flat):
            low, high = int(flat.min()), int(flat.max())
            info = np.iinfo(self.dtype)
            limit = self.vocab_size if self.vocab_size is not None else int(info.max) + 1
            if low < 0 or high >= limit or high > info.max:
                raise InputError(
                    f"token id {low if low < 0 else high} does not fit the dataset (vocabulary {limit}, dtype "
                    f"{self.dtype}): was the data encoded with another model?"
                )
        self._bin.write(flat.astype(self.dtype.newbyteorder("<"), copy=False).tobytes())
        self._lengths.append(np.diff(offsets))
        self.num_tokens += len(flat)

    def close(self) -> None:
        if self._bin.closed:
            return
        self._bin.close()
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        write_index(idx_path(self.prefix), self.dtype, lengths, np.arange(len(lengths) + 1, dtype=np.int64))

    def abort(self) -> None:
        self._bin.close()
        for path in (bin_path(self.prefix), idx_path(self.prefix)):
            if os.path.exists(path):
                os.unlink(path)

    def __enter__(self) -> "MegatronWriter":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class MegatronDataset:
    """Read a Megatron indexed dataset: ``dataset[i]`` is sequence ``i`` as a read-only array view (memory-mapped).

    Attributes: ``dtype``, ``sequence_lengths`` (int32, ``(S,)``), ``sequence_pointers`` (int64 byte offsets,
    ``(S,)``), ``document_indices`` (int64, ``(D,)``), ``tokens`` (the whole ``.bin`` as a flat array).
    Raises :class:`ModelFileError` naming the file when the index is truncated, of another version or inconsistent
    with the ``.bin`` size.
    """

    def __init__(self, prefix: str | os.PathLike):
        self.prefix = os.fspath(prefix)
        path = idx_path(self.prefix)
        try:
            index = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) else np.zeros(0, np.uint8)
        except OSError as exc:
            raise ModelFileError(path, f"cannot read the index: {exc.strerror}; is the prefix right?") from None
        if len(index) < _HEADER.size:
            raise ModelFileError(path, f"index is {len(index)} bytes, shorter than the 34-byte header (truncated?)")
        magic, version, code, count, doc_count = _HEADER.unpack(bytes(index[:_HEADER.size]))
        if magic != INDEX_MAGIC:
            raise ModelFileError(path, "not a Megatron MMIDIDX index (bad magic); pass the prefix of a .idx/.bin pair")
        if version != INDEX_VERSION:
            raise ModelFileError(path, f"index version {version} is not supported (only {INDEX_VERSION})")
        if code not in DTYPE_CODES:
            raise ModelFileError(path, f"unknown token dtype code {code}")
        self.dtype = DTYPE_CODES[code].newbyteorder("<")
        needed = _HEADER.size + 12 * count + 8 * doc_count
        if len(index) < needed:
            raise ModelFileError(path, f"index is {len(index)} bytes but its counts need {needed} (truncated?)")
        start = _HEADER.size
        self.sequence_lengths = np.frombuffer(index, dtype="<i4", count=count, offset=start)
        self.sequence_pointers = np.frombuffer(index, dtype="<i8", count=count, offset=start + 4 * count)
        self.document_indices = np.frombuffer(index, dtype="<i8", count=doc_count, offset=start + 12 * count)
        data_path = bin_path(self.prefix)
        try:
            size = os.path.getsize(data_path)
        except OSError as exc:
            raise ModelFileError(data_path, f"cannot read the token file: {exc.strerror}") from None
        expected = int(self.sequence_lengths.astype(np.int64).sum()) * self.dtype.itemsize
        if size != expected:
            raise ModelFileError(data_path, f"token file is {size} bytes but the index describes {expected}: the "
                                 "pair is truncated or mismatched; rewrite it")
        self.tokens = np.memmap(data_path, dtype=self.dtype, mode="r") if size else np.zeros(0, self.dtype)

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sequence {i} out of range for {len(self)} sequences")
        start = int(self.sequence_pointers[i]) // self.dtype.itemsize
        return self.tokens[start:start + int(self.sequence_lengths[i])]

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(len(self)):
            yield self[i]

    @property
    def num_documents(self) -> int:
        return max(len(self.document_indices) - 1, 0)

    def document(self, i: int) -> list[np.ndarray]:
        """The sequences of document ``i`` (one per document for datasets shardpiece writes)."""
        begin, end = int(self.document_indices[i]), int(self.document_indices[i + 1])
        return [self[j] for j in range(begin, end)]


def merge_datasets(prefixes: Iterable[str | os.PathLike], output_prefix: str | os.PathLike) -> MegatronDataset:
    """Concatenate Megatron datasets (same token dtype) into one ``output_prefix.bin``/``.idx``, in the given order.

    Copies the token files byte for byte and rebuilds the index (pointers shifted, document indices offset), then
    publishes both files by rename, so a reader never sees a half-written merge; the output's directory is created.
    An ``OSError`` while writing becomes :class:`~tokenizer.errors.OutputWriteError` naming the path and the fix.
    Returns the merged dataset.
    """
    prefixes = [os.fspath(p) for p in prefixes]
    if not prefixes:
        raise InputError("nothing to merge: pass at least one dataset prefix")
    output_prefix = os.fspath(output_prefix)
    datasets = [MegatronDataset(p) for p in prefixes]
    dtypes = {d.dtype for d in datasets}
    if len(dtypes) != 1:
        raise InputError(f"cannot merge datasets of different token dtypes {sorted(map(str, dtypes))}: "
                         "re-tokenize them with one model")
    lengths, documents, offset = [], [np.zeros(1, np.int64)], 0
    tmp_bin, tmp_idx = output_prefix + ".bin.tmp", output_prefix + ".idx.tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(output_prefix)), exist_ok=True)
        with open(tmp_bin, "wb") as out:
            for dataset in datasets:
                with open(bin_path(dataset.prefix), "rb") as source:
                    shutil.copyfileobj(source, out, 16 << 20)
                lengths.append(np.asarray(dataset.sequence_lengths, dtype=np.int64))
                documents.append(np.asarray(dataset.document_indices[1:], dtype=np.int64) + offset)
                offset += len(dataset)
        write_index(tmp_idx, dtypes.pop(), np.concatenate(lengths), np.concatenate(documents))
        os.replace(tmp_bin, bin_path(output_prefix))
        os.replace(tmp_idx, idx_path(output_prefix))
    except OSError as exc:
        from tokenizer.files import write_error

        raise write_error(output_prefix + ".bin", exc, "merged Megatron dataset") from None
    finally:
        for path in (tmp_bin, tmp_idx):
            if os.path.exists(path):
                os.unlink(path)
    return MegatronDataset(output_prefix)
