"""Limits the trainers share with the command line's options (a module without Numba or numpy, so that ``shardpiece
train --help`` imports neither)."""

#: byte_level BPE's default longest piece: a guard against runaway pieces, far above what a vocabulary learns (Hugging
#: Face's trainer and tiktoken set none; a lower cap costs compression where long runs repeat, as in source code)
BYTE_LEVEL_MAX_PIECE_BYTES = 256
#: the smallest ``--max-table-entries``: a bound below this would not leave room for a useful vocabulary
MIN_TABLE_ENTRIES = 1 << 16
#: the smallest ``--max-table-bytes`` (key bytes), for the same reason
MIN_TABLE_BYTES = 1 << 16
