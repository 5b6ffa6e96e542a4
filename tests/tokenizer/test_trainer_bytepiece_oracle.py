"""shardpiece's BytePiece trainer against BytePiece itself (same settings, one worker), on a small generated
multilingual corpus."""

from __future__ import annotations

import base64
import contextlib
import io
import random

import numpy as np
import pytest

from tokenizer.model import PieceType
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

bytepiece = pytest.importorskip("bytepiece", reason="bytepiece (a test oracle) is not installed")

pytestmark = [pytest.mark.oracle, pytest.mark.slow]


def _corpus(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    words = ["the ", "cat ", "sat ", "on the ", "mat", ". ", "数据", "模型", "训练", "中文", "的", "日本語", "テスト",
             "です", "über", "naïve ", "cafe\u0301", "2024", "7", "\t", "  ", "Ω", "😀"]
    return ["".join(rng.choice(words) for _ in range(rng.randint(1, 40))) + "\n" * rng.randint(0, 2)
            for _ in range(n)]


@pytest.mark.parametrize("order, min_count, vocab_sizes, isolate_digits", [
    (6, 2, [600, 400], False),
    (4, 3, [350], True),
])
def test_same_pieces_and_scores_as_bytepiece(order, min_count, vocab_sizes, isolate_digits):
    texts = _corpus(order * 7 + min_count, 500)
    trainer = bytepiece.Trainer(order=order, max_vocab_size=vocab_sizes, min_count=min_count,
                                isolate_digits=isolate_digits)
    with contextlib.redirect_stderr(io.StringIO()):
        trainer.train(texts, workers=1)
    settings = TrainSettings(order=order, min_count=min_count, vocab_sizes=tuple(vocab_sizes), normalization="nfc",
                             isolate_digits=isolate_digits)
    models = train_bytepiece_local(texts, settings)
    for size, theirs in zip(sorted(vocab_sizes, reverse=True), trainer.pieces):
        model = models[size]
        ours = {p: s for p, s, t in zip(model.pieces, model.scores, model.types) if t == PieceType.NORMAL}
        overlap = len(set(ours) & set(theirs)) / len(theirs)
        assert overlap >= 0.98, f"vocab {size}: overlap {overlap:.3f}"
        assert set(ours) == set(theirs)  # on this corpus the algorithms agree exactly
        log_total = np.log(sum(theirs.values()))
        for piece, count in theirs.items():
            assert ours[piece] == pytest.approx(np.log(count) - log_total, abs=1e-4)  # 2**-13 steps: model.py
        # ids: BytePiece's id minus its 3 leading specials
        json_ids = trainer.dump(theirs)
        for key, (bp_id, _, _) in list(json_ids.items())[:50]:
            assert model.pieces[bp_id - 3] == base64.b64decode(key)
