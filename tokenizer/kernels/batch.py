"""Batch encoders: many texts packed Arrow-style (one uint8 data buffer plus offsets) -> flat ids plus offsets.

Each kernel encodes documents ``doc_begin .. doc_end - 1`` (``data[offsets[i]:offsets[i + 1]]``; offsets int32 or
int64, absolute into ``data``, so a sliced Arrow array passes its offsets buffer from ``array.offset`` on) and
writes every id into ``out_ids`` (int32, room for the range's byte count plus two per document) and
``out_offsets[j]`` (int64, ``doc_end - doc_begin + 1``) = where document ``doc_begin + j`` starts in ``out_ids``.
``valid`` (uint8, one per document, or empty for "all valid") marks nulls: a null document gets no ids, not even
bos/eos. ``bos_id``/``eos_id`` >= 0 are added around every valid document.

Returns ``(total_ids, -1)``, or ``(-1, failing_document)`` when a document holds unknown text that the model can
represent neither by an unk piece nor by byte fallback.

Example (hand-checkable): data ``b"abab"``, offsets ``[0, 2, 4]``, pieces ``a``=0, ``b``=1, ``ab``=2 (higher score)
-> out_ids ``[2, 2]``, out_offsets ``[0, 1, 2]``.
"""

from __future__ import annotations

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_pairs import piece_bpe_into
from tokenizer.kernels.unigram import viterbi_into


@kernel
def unigram_batch(units, piece_score, byte_to_id, byte_mode, split_after_newlines, unk_id,
                  byte_fallback, unk_score, data, offsets, valid, doc_begin, doc_end, bos_id, eos_id,
                  best_score, best_start, best_id, path, out_ids, out_offsets):
    """Viterbi-encode documents ``doc_begin .. doc_end - 1``; work buffers sized for the longest document + 1."""
    pos = 0
    out_offsets[0] = 0
    check_valid = valid.shape[0] > 0
    for i in range(doc_begin, doc_end):
        if check_valid and valid[i] == 0:
            out_offsets[i - doc_begin + 1] = pos
            continue
        if bos_id >= 0:
            out_ids[pos] = bos_id
            pos += 1
        pos = viterbi_into(units, piece_score, byte_to_id, byte_mode, split_after_newlines, unk_id,
                           byte_fallback, unk_score, data, offsets[i], offsets[i + 1], best_score, best_start,
                           best_id, path, out_ids, pos)
        if pos < 0:
            return -1, i
        if eos_id >= 0:
            out_ids[pos] = eos_id
            pos += 1
        out_offsets[i - doc_begin + 1] = pos
    return pos, -1


@kernel
def bpe_batch(units, is_user_defined, has_user_defined, byte_piece, bmp_symbol, byte_mode, pseudo_units, has_pseudo,
              vocab_size, pair_keys, pair_merged, pair_rank, bits, unk_id, byte_fallback, byte_to_id, data, offsets,
              valid, doc_begin, doc_end, bos_id, eos_id, sym, nxt, prv, cand, heap, steps, out_ids, out_offsets):
    """SentencePiece-style BPE for documents ``doc_begin .. doc_end - 1`` (no dropout); tables and buffers as
    :func:`tokenizer.kernels.bpe_pairs.piece_bpe_into` wants."""
    pos = 0
    out_offsets[0] = 0
    check_valid = valid.shape[0] > 0
    for i in range(doc_begin, doc_end):
        if check_valid and valid[i] == 0:
            out_offsets[i - doc_begin + 1] = pos
            continue
        if bos_id >= 0:
            out_ids[pos] = bos_id
            pos += 1
        pos = piece_bpe_into(units, is_user_defined, has_user_defined, byte_piece, bmp_symbol, byte_mode,
                             pseudo_units, has_pseudo, vocab_size, pair_keys, pair_merged, pair_rank, bits, unk_id,
                             byte_fallback, byte_to_id, data, offsets[i], offsets[i + 1], sym, nxt, prv, cand, heap,
                             steps, out_ids, pos)
        if pos < 0:
            return -1, i
        if eos_id >= 0:
            out_ids[pos] = eos_id
            pos += 1
        out_offsets[i - doc_begin + 1] = pos
    return pos, -1
