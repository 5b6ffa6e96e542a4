"""Helpers for the SentencePiece oracle tests: a generated multilingual corpus and in-memory model training.

The corpus mixes English, Chinese, Japanese (kana, kanji, half-width katakana), emoji (with ZWJ and variation
selectors), runs of spaces, tabs, full-width and other characters NFKC changes (ligatures, circled digits, squared
words, superscripts, Roman numerals, Arabic presentation forms), combining marks, control characters, U+2581, U+FFFD
and U+3000. It is generated from a seeded ``random.Random``, so every run sees the same lines.
"""

from __future__ import annotations

import io
import random

import pytest

spm = pytest.importorskip("sentencepiece")

ENGLISH = ("the quick brown fox jumps over lazy dog tokenizer model shard piece byte level unigram merge "
           "language corpus spark numba kernel encode decode Hello World Don't can't e-mail 2024 3.14 #tag "
           "user@example.com https://example.org/path?q=1").split()
CHINESE = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
JAPANESE = ("これはペンですわたしはにほんごをべんきょうしていますカタカナひらがな漢字東京大阪京都日本語の文章を"
            "書きます。「こんにちは」と言いました！？ｶﾀｶﾅﾃｽﾄﾊﾟﾋﾟﾌﾟｰ")
EMOJI = ["😀", "🎉", "👍🏽", "👨‍👩‍👧", "❤️", "🇯🇵", "🤖", "✨"]
NFKC_CHANGES = ["ﬁ", "ﬂ", "①", "②", "⑩", "㍿", "㌔", "²", "³", "½", "Ⅻ", "ｶ", "ﾞ", "Ａ", "ｂ", "１２３", "！", "？",
                "，", "．", "ｰ", "　", "ﷺ", "µ", "K", "Å", "™", "℃", "…", "‥", "e\u0301", "a\u0308", "ㄱ", "ㅏ",
                "\u2160", "⁇", "\u00a0", "\u2002", "\u200b", "\ufeff", "\u3000\u3000"]
ODD = ["\t", "\t\t", "  ", "     ", "\u2581", "\ufffd", "\x01", "\x7f", "\u0085", "\r", " \u2581 ", "\u00ad"]


def make_corpus(num_lines: int, seed: int) -> list[str]:
    """``num_lines`` lines of mixed text (no newlines inside a line)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(num_lines):
        parts = []
        for _ in range(rng.randint(1, 14)):
            kind = rng.random()
            if kind < 0.3:
                parts.append(" ".join(rng.choice(ENGLISH) for _ in range(rng.randint(1, 6))))
            elif kind < 0.5:
                start = rng.randrange(len(CHINESE) - 8)
                parts.append(CHINESE[start:start + rng.randint(1, 8)])
            elif kind < 0.65:
                start = rng.randrange(len(JAPANESE) - 8)
                parts.append(JAPANESE[start:start + rng.randint(1, 8)])
            elif kind < 0.72:
                parts.append(rng.choice(EMOJI))
            elif kind < 0.85:
                parts.append(rng.choice(NFKC_CHANGES))
            else:
                parts.append(rng.choice(ODD))
            parts.append(rng.choice(["", " ", " ", "  ", "\t"]))
        lines.append("".join(parts))
    return lines


def train_model(lines: list[str], **options) -> bytes:
    """Serialized ModelProto of a SentencePiece model trained in memory on ``lines`` (2 threads)."""
    settings = dict(vocab_size=1500, num_threads=2, minloglevel=2, hard_vocab_limit=False,
                    character_coverage=0.995, seed_sentencepiece_size=20000, max_sentence_length=100000)
    settings.update(options)
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buffer, **settings)
    return buffer.getvalue()


def processor(model_bytes: bytes):
    return spm.SentencePieceProcessor(model_proto=model_bytes)
