"""SentencePiece's unigram trainer over a table of (chunk, count), on one machine.

The algorithm follows SentencePiece's ``unigram_model_trainer.cc`` and ``trainer_interface.cc``:

1. sentences are normalized (SentencePiece's normalizer: charsmap, whitespace rules, space -> "▁"), meta pieces in
   the text become boundaries (U+001F, sentencepiece 0.2's boundary; a tab is an ordinary character), and they
   are split into words at "▁" (``split_by_whitespace``); the words
   with their counts are the chunk table (:func:`count_chunks`, a monoid: counts of two shards add up);
2. characters are kept by frequency until ``character_coverage`` of all characters is covered; the rest is the
   unknown character (never inside a piece);
3. seed pieces: every character, plus the ``seed_sentencepiece_size`` substrings of 2..``max_sentencepiece_length``
   characters that are internal nodes of the suffix tree (branching, occurring at least twice) and valid pieces,
   best first by frequency x length. SentencePiece builds a suffix array over the corpus; here it is built over the
   distinct chunks, each suffix weighted by its chunk's count, which yields the same frequencies;
4. EM: ``num_sub_iterations`` rounds of E-step (forward-backward expected counts) and the Bayesian M-step
   (pieces expected less than 0.5 times go, score = digamma(count) - digamma(total)); then loss-based pruning
   keeps ``shrinking_factor`` of the pieces; repeat until at most 1.1 x vocab_size pieces remain;
5. the final vocabulary: required characters first, then the best-scored pieces, meta pieces at their ids.

Expected counts are int64 fixed point (``E_STEP_SCALE``) summed exactly, so a sharded E-step (the Spark pipeline)
gives the same model as one process. The byte-level variant (``variant="byte"``) works on raw bytes: no "▁", no
normalization, every byte a base piece (lossless, like BytePiece), chunks split before each space.

Example::

    settings = UnigramSettings(vocab_size=8000)
    model = train_unigram_local(["Hello world", "hello there"] * 100, settings)

The steps live in one module each: :mod:`.settings` (settings and shared constants), :mod:`.chunks` (sentences ->
chunk table), :mod:`.seeds` (required characters and seed pieces), :mod:`.em` (E-step, M-step, pruning),
:mod:`.loop` (the EM driver loop and its checkpoints) and :mod:`.fit` (chunk table -> model). This package
re-exports their public names.
"""

from tokenizer.packed import pack
from tokenizer.trainers.unigram.chunks import ChunkSplitter, chunk_table, split_into_words
from tokenizer.trainers.unigram.em import PieceTrie, digamma, e_step, m_step, piece_alternatives, prune, viterbi_step
from tokenizer.trainers.unigram.fit import build_model, finalize, train_from_chunks, train_unigram_local
from tokenizer.trainers.unigram.loop import (Checkpoints, EmState, EStepRunner, TrainReport, chunk_blocks,
                                             local_runner, run_em)
from tokenizer.trainers.unigram.seeds import (SymbolTable, required_characters, seed_pieces, sorted_suffixes,
                                              symbol_table)
from tokenizer.trainers.unigram.settings import (BOUNDARY, E_STEP_SCALE, LOCAL_BLOCK_BYTES, MIN_EXPECTED,
                                                 MIN_SCORE_PENALTY_DELTA, UNK_CHAR, UNK_PENALTY, VARIANTS, WS,
                                                 UnigramSettings)

__all__ = [
    "BOUNDARY", "E_STEP_SCALE", "LOCAL_BLOCK_BYTES", "MIN_EXPECTED", "MIN_SCORE_PENALTY_DELTA", "UNK_CHAR",
    "UNK_PENALTY", "VARIANTS", "WS", "Checkpoints", "ChunkSplitter", "EStepRunner", "EmState", "PieceTrie",
    "SymbolTable", "TrainReport", "UnigramSettings", "build_model", "chunk_blocks", "chunk_table", "digamma",
    "e_step", "finalize", "local_runner", "m_step", "pack", "piece_alternatives", "prune", "required_characters",
    "run_em", "seed_pieces", "sorted_suffixes", "split_into_words", "symbol_table", "train_from_chunks",
    "train_unigram_local", "viterbi_step",
]
