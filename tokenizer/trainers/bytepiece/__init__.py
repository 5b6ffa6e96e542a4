"""BytePiece training (byte-level unigram from an n-gram language model), as pure functions of arrays.

The algorithm is BytePiece's (Su Jianlin's ``bytepiece`` 0.6), split into steps that run per partition (counting)
or on the driver (model building, pruning), so a Spark job and :func:`train_bytepiece_local` compute the same
model bytes for any partitioning::

    chunks   = chunk_texts(data, offsets, settings)                    # per partition: normalize, split
    ngrams   = count_ngrams(*chunks, settings.order)                   # per partition  \\  a monoid:
    ngrams   = merge_counts(ngrams_a, ngrams_b)                        # reduce          }  empty_counts() is 0
    lm       = build_ngram_model(*ngrams, settings)                    # driver (prune by min_count, log probs)
    pieces   = segment_and_count_pieces(lm, *chunks, settings)         # per partition (lm broadcast)
    pieces   = merge_piece_counts(pieces_a, pieces_b)                  # reduce (empty_piece_counts() is 0)
    pruned   = prune_pieces(pieces_list, piece_counts, settings)       # driver: {vocab_size: (pieces, counts)}
    [optional: refine_em rounds: em_e_step per partition, summed; em_m_step on the driver]
    model    = build_model(pieces, counts, settings, provenance)       # driver: tokenizer.model.Model

Steps, as BytePiece does them:

1. Text is NFC-normalized (``normalization="nfc"``; ``"identity"`` keeps any bytes) and split into chunks: a run
   of at most ``max_chunk_chars`` non-newline characters plus the newlines after it (at most 100), so no piece ever
   crosses from a newline back to text; with ``isolate_digits`` every Unicode decimal digit is a chunk of its own.
2. Byte n-grams of length ``1..order`` inside each chunk are counted (integers, exact).
3. N-grams of length >= 2 with count < ``min_count`` are dropped; the 256 single bytes are completed with count 1
   (the total grows by one for each). ``log p(g) = log c(g) - log c(g[:-1])`` (``c(b"")`` = total bytes).
4. Each chunk is segmented by a Viterbi over the n-gram model (a piece's bytes after the first are predicted from
   the previous bytes of the same piece, context capped at ``order - 1`` bytes; with ``ensure_unicode`` no piece
   starts on a UTF-8 continuation byte), and the pieces are counted.
5. Pruning (driver): single bytes are completed with count 1; pieces longer than ``max_piece_length`` or rarer than
   ``min_count`` are re-segmented with the kept pieces (a unigram Viterbi, ``log p = log(c / total)``) and their
   counts moved onto the pieces used; then every kept piece is re-segmented with all kept pieces, and the pieces no
   segmentation uses disappear, repeated until the number of pieces is stable. For each vocab size, largest first
   (nested): if too many, keep the single bytes and the most frequent pieces (longer first on equal counts), move
   the rest's counts as above, and repeat the stability loop.
6. Scores are ``log(count / total count)``; the model is byte level (ids 0..255 are the bytes; then the multi-byte
   pieces sorted by length then bytes, exactly BytePiece's id order minus its 3 leading specials; then the special
   tokens as CONTROL pieces).

What this adds: ``refine_em_rounds`` rounds of unigram EM over the corpus after pruning. Each round segments the
corpus with the current model (E-step: piece counts of the best segmentations, ``refine_em_mode="viterbi"``, or
posterior counts, ``"expected"``, plus the counts of adjacent piece pairs), then re-estimates the counts, drops
pieces nothing uses and (every round but the last) fills the slots BytePiece leaves free (it often stops well
below the requested size) with the most frequent concatenations of two adjacent pieces. On zh.train (NFC, order 6,
min_count 8, 32k), where BytePiece and the plain pipeline give the same pieces, a few viterbi rounds fill most of
the free slots and raise bytes per token on zh.test markedly. With refinement each vocabulary size is
refined on its own, so smaller vocabularies are no longer guaranteed subsets of larger ones.

The steps live in one module each: :mod:`.settings`, :mod:`.chunks` (packing and chunking), :mod:`.ngrams`
(n-gram counts and the language model), :mod:`.pieces` (segmentation and piece counts), :mod:`.pruning`,
:mod:`.refine` (EM refinement) and :mod:`.fit` (the model, and the whole trainer on one machine). This package
re-exports their public names.
"""

from tokenizer.trainers.bytepiece.chunks import chunk_texts, pack_texts
from tokenizer.trainers.bytepiece.fit import build_model, corpus_fingerprint, train_bytepiece_local
from tokenizer.trainers.bytepiece.ngrams import (NgramModel, NgramTable, build_ngram_model, count_maximal_ngrams,
                                                 count_ngrams, empty_counts, expand_maximal, expand_prefix_form,
                                                 join_counts, kept_ngrams, leading_pair, merge_counts, prefix_form)
from tokenizer.trainers.bytepiece.pieces import (empty_piece_counts, merge_piece_counts, pack_pieces, piece_list,
                                                 segment_and_count_pieces, segment_chunks)
from tokenizer.trainers.bytepiece.pruning import (PieceModel, candidate_mask, complete_bytes, prune_candidates,
                                                  prune_pieces, resegment_counts)
from tokenizer.trainers.bytepiece.refine import EStepStatistics, em_e_step, em_m_step, refine_em
from tokenizer.trainers.bytepiece.settings import EM_MODES, NORMALIZATIONS, TrainSettings

__all__ = [
    "EM_MODES", "NORMALIZATIONS", "EStepStatistics", "NgramModel", "NgramTable", "PieceModel", "TrainSettings",
    "build_model", "build_ngram_model", "candidate_mask", "chunk_texts", "complete_bytes",
    "corpus_fingerprint", "count_maximal_ngrams", "count_ngrams", "em_e_step", "em_m_step", "empty_counts",
    "empty_piece_counts", "expand_maximal", "expand_prefix_form", "join_counts", "kept_ngrams", "leading_pair",
    "merge_counts", "prefix_form", "merge_piece_counts", "pack_pieces", "pack_texts", "piece_list",
    "prune_candidates", "prune_pieces", "refine_em", "resegment_counts", "segment_and_count_pieces", "segment_chunks",
    "train_bytepiece_local",
]
