"""Identical ids between each model kind and its exports, on whole test splits: the Hugging Face folder in
``tokenizers`` and transformers' ``AutoTokenizer``, and (SentencePiece-style unigram) the ``.model`` in sentencepiece.

    .venv/bin/python benchmarks/export_equality.py                    # en, zh, ja; 2 MB of each to train
    .venv/bin/python benchmarks/export_equality.py --train-bytes 4000000 --vocab-size 16000

Five model kinds, trained here on the first ``--train-bytes`` of each corpus's train split together (BytePiece,
byte unigram, byte-level BPE, SentencePiece-style unigram with byte fallback, SentencePiece-style BPE), each exported
with ``save_huggingface`` (and ``save_sentencepiece``). Lines compared: every line of NAME.test.txt plus lines that
spell control tokens (``<s>``, ``</s>``, ``<pad>``, ``<unk>``) and runs that tie (``"-" * 80``). Prints one table
of differing lines per kind and client (the target: 0 everywhere) and writes ``benchmarks/results/export-equality.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common  # noqa: E402

EXTRA_LINES = ["Hello <s> world </s> and <pad>", "<unk><s></s><pad>", "x<s>y", " </s> ", "<<s>>", "-" * 80,
               "=" * 33, "." * 7, "www.www.www", "\t\tindented\t\t", "  two  spaces  "]


def train_models(lines: list[str], vocab_size: int) -> dict:
    from tokenizer.trainers import bpe
    from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local
    from tokenizer.trainers.unigram import UnigramSettings, train_unigram_local

    return {
        "bytepiece": train_bytepiece_local(lines, TrainSettings(vocab_sizes=(vocab_size,), min_count=2))[vocab_size],
        "byte unigram": train_unigram_local(lines, UnigramSettings(vocab_size=vocab_size, variant="byte", pad_id=3)),
        "byte-level bpe": bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(vocab_size,)))[vocab_size],
        "sentencepiece unigram": train_unigram_local(lines, UnigramSettings(vocab_size=vocab_size, byte_fallback=True,
                                                                            pad_id=3, character_coverage=0.9995)),
        "sentencepiece bpe": bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(vocab_size,),
                                                                        pretokenizer="sentencepiece"))[vocab_size],
    }


def compare(kind: str, model, tests: dict[str, list[str]], work: str) -> dict:
    import tokenizers
    import transformers

    from tokenizer import Tokenizer
    from tokenizer.interop.huggingface import save_huggingface

    native = Tokenizer(model)
    folder = os.path.join(work, kind.replace(" ", "-"))
    save_huggingface(model, folder)
    hf = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    processor = None
    if kind == "sentencepiece unigram":
        import sentencepiece as spm

        from tokenizer.interop.sentencepiece_export import save_sentencepiece

        save_sentencepiece(model, os.path.join(folder, "m.model"))
        processor = spm.SentencePieceProcessor(model_file=os.path.join(folder, "m.model"))
    row = {"kind": kind, "vocab_size": model.vocab_size}
    for name, lines in tests.items():
        ours = native.encode_batch(lines)
        row[f"{name} lines"] = len(lines)
        row[f"{name} tokenizers"] = sum(a != e.ids for a, e in zip(ours, hf.encode_batch(lines,
                                                                                         add_special_tokens=False)))
        row[f"{name} AutoTokenizer"] = sum(a != b for a, b in zip(ours, auto(lines, add_special_tokens=False)
                                                                  ["input_ids"]))
        if processor is not None:
            row[f"{name} sentencepiece"] = sum(a != b for a, b in zip(ours, processor.encode(lines)))
    print(row, flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", nargs="+", default=["en", "zh", "ja"])
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--train-bytes", type=int, default=2_000_000, help="per corpus (default 2 MB)")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    train, tests = [], {}
    for name in args.corpus:
        path, _ = common.capped_train_file(args.corpora, name, args.work, args.train_bytes)
        train += [line for line in common.read_lines(path) if line]
        tests[name] = [line for line in common.read_lines(common.corpus_path(args.corpora, name, "test")) if line]
    tests["extra"] = EXTRA_LINES
    models = train_models(train, args.vocab_size)
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        rows = [compare(kind, model, tests, work) for kind, model in models.items()]
    headers = ["kind"] + [f"{name}: tokenizers / AutoTokenizer / sentencepiece" for name in tests]
    table = [[row["kind"]] + [f"{row[f'{name} tokenizers']} / {row[f'{name} AutoTokenizer']} / "
                              f"{row.get(f'{name} sentencepiece', '—')} of {row[f'{name} lines']:,}"
                              for name in tests] for row in rows]
    print(common.markdown_table(headers, table))
    print("wrote", common.write_results("export-equality", {"train_bytes_per_corpus": args.train_bytes,
                                                            "vocab_size": args.vocab_size, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
