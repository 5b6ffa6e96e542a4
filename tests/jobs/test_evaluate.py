"""``shardpiece evaluate`` on the sample corpus: a BytePiece, a unigram and a byte-level BPE model (two sizes each),
their exports (a tokenizer.json file and a folder, a SentencePiece .model, a .tiktoken file built from the BPE model's
merges), run in this process and as a command; the figures checked against counts made here, the table, the JSON
records and the plot."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.evaluate import main, plot_lines
from jobs.export import EXPORTERS
from jobs.train_options import UNIGRAM_DEFAULTS
from tests.tokenizer.sample_models import REPO, sample_lines
from tokenizer import Tokenizer
from tokenizer.evaluation import count_words
from tokenizer.piece_types import PieceType

KEYS = ("bytes_per_token", "tokens_per_word", "vocab_used", "unknown_rate", "round_trip", "encode_mb_per_s",
        "model", "input", "algorithm", "vocab_size")
LINES = 400  # of each sample file evaluated on


def sample_file_lines(name: str) -> list[bytes]:
    with gzip.open(os.path.join(REPO, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
        return [line for line in handle.read().split(b"\n")[:LINES] if line]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Model files and inputs: ``{"models": {name: path}, "exports": {export: source}, "inputs": {name: path},
    "lines": {input name: its documents}, "in_memory": {name: Model}}``."""
    from tokenizer.trainers import bpe, bytepiece, unigram

    # train's defaults: lossless unigram models (byte fallback, spaces kept as they are)
    root = tmp_path_factory.mktemp("evaluate")
    lines = sample_lines(300)
    trained = {}
    for size, model in bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(500, 1000), min_count=2)).items():
        trained[f"bytepiece-{size}.model"] = model
    for size in (1800, 2400):
        trained[f"unigram-{size}.model"] = unigram.train_unigram_local(
            lines, unigram.UnigramSettings(vocab_size=size, **UNIGRAM_DEFAULTS["lossless"]))
    for size, model in bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(500, 1000))).items():
        trained[f"bpe-{size}.model"] = model
    models = {}
    for name, model in trained.items():
        model.save(root / name)
        models[name] = str(root / name)
    exports = {  # export path as --model gives it -> its source
        str(root / "bytepiece-hf"): "bytepiece-1000.model",
        str(root / "unigram-2400-sp.model"): "unigram-2400.model",
        str(root / "bpe-hf" / "tokenizer.json"): "bpe-1000.model",
        str(root / "bpe-1000.tiktoken") + ":gpt2": "bpe-1000.model",
    }
    EXPORTERS["huggingface"](trained["bytepiece-1000.model"], str(root / "bytepiece-hf"))
    EXPORTERS["sentencepiece"](trained["unigram-2400.model"], str(root / "unigram-2400-sp.model"))
    EXPORTERS["huggingface"](trained["bpe-1000.model"], str(root / "bpe-hf" / "tokenizer.json"))
    EXPORTERS["tiktoken"](trained["bpe-1000.model"], str(root / "bpe-1000.tiktoken"))
    inputs, documents = {}, {}
    for name in ("en", "zh"):
        documents[name] = sample_file_lines(name)
        inputs[name] = str(root / f"{name}.txt")
        with open(inputs[name], "wb") as handle:
            handle.write(b"\n".join(documents[name]) + b"\n")
    texts = [line.decode("utf-8") for line in documents["en"]]
    inputs["en.jsonl"] = str(root / "en.jsonl")
    with open(inputs["en.jsonl"], "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"id": i, "body": text}, ensure_ascii=False) + "\n"
                          for i, text in enumerate(texts))
    inputs["en.parquet"] = str(root / "en.parquet")
    pq.write_table(pa.table({"body": texts}), inputs["en.parquet"])
    return {"models": models, "exports": exports, "inputs": inputs, "documents": documents, "in_memory": trained}


def run_json(argv: list[str], capsys) -> list[dict]:
    assert main(["evaluate", *argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def all_models(workspace) -> list[str]:
    return [*workspace["models"].values(), *workspace["exports"]]


def model_args(specs) -> list[str]:
    return [arg for spec in specs for arg in ("--model", spec)]


@pytest.fixture(scope="module")
def records(workspace):
    """The --json records of every model on the en and zh inputs (in this process)."""
    argv = ["evaluate", *model_args(all_models(workspace)), "--input", workspace["inputs"]["en"],
            "--input", workspace["inputs"]["zh"], "--json"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_one_record_per_model_and_input_with_the_figures(workspace, records):
    specs = all_models(workspace)
    assert [(r["input"], r["model"]) for r in records] == [(workspace["inputs"][name], spec) for name in ("en", "zh")
                                                           for spec in specs]
    for record in records:
        assert set(KEYS) <= set(record)
        assert record["round_trip"] is True  # every model here is lossless
        assert record["encode_mb_per_s"] > 0
        assert 1.0 < record["bytes_per_token"] < 8.0
    algorithms = {os.path.basename(r["model"]): (r["algorithm"], r["format"]) for r in records}
    assert algorithms["bytepiece-1000.model"] == ("bytepiece", "shardpiece")
    assert algorithms["unigram-2400-sp.model"] == ("unigram", "sentencepiece")
    assert algorithms["bpe-1000.tiktoken:gpt2"] == ("bpe", "tiktoken")
    assert algorithms["bytepiece-hf"][1] == algorithms["tokenizer.json"][1] == "tokenizer.json"  # a folder, a file


def test_figures_equal_counts_made_independently(workspace, records):
    """bytes/token is the documents' bytes over their ids, tokens per word over whitespace words (en) or characters
    (zh), vocab_used the distinct ids over the vocabulary, unknown_rate the byte-fallback and unk ids' share."""
    by_path = {v: k for k, v in workspace["inputs"].items()}
    tokenizers = {name: Tokenizer(model) for name, model in workspace["in_memory"].items()}
    for record in records:
        name = os.path.basename(record["model"])
        if name not in workspace["in_memory"]:
            continue
        model = workspace["in_memory"][name]
        documents = workspace["documents"][by_path[record["input"]]]
        ids = [tokenizers[name].encode(text) for text in documents]
        flat = np.concatenate([np.asarray(row, dtype=np.int64) for row in ids])
        n_bytes = sum(len(text) for text in documents)
        assert (record["bytes"], record["tokens"]) == (n_bytes, len(flat))
        assert record["bytes_per_token"] == pytest.approx(n_bytes / len(flat), rel=1e-12)
        if by_path[record["input"]] == "en":
            words, unit = sum(len(text.split()) for text in documents), "word"
        else:
            words, unit = sum(len(text.decode("utf-8")) for text in documents), "character"
        assert (record["words"], record["word_unit"]) == (words, unit) == count_words(documents)
        assert record["tokens_per_word"] == pytest.approx(len(flat) / words, rel=1e-12)
        assert record["vocab_used"] == pytest.approx(len(set(flat.tolist())) / model.vocab_size, rel=1e-12)
        fallback = np.isin(model.types[flat], [PieceType.UNKNOWN, PieceType.BYTE])
        assert record["unknown_rate"] == pytest.approx(fallback.sum() / len(flat), rel=1e-12, abs=0)
    zh_unigram = next(r for r in records if r["input"].endswith("zh.txt") and r["model"].endswith("unigram-1800.model"))
    assert zh_unigram["unknown_rate"] > 0  # rare characters fall back to bytes


def test_an_export_gives_the_figures_of_its_source(workspace, records):
    figures = ("bytes", "tokens", "bytes_per_token", "tokens_per_word", "unknown_rate", "round_trip")
    for export, source in workspace["exports"].items():
        for name in ("en", "zh"):
            path = workspace["inputs"][name]
            got = next(r for r in records if r["model"] == export and r["input"] == path)
            want = next(r for r in records if r["model"] == workspace["models"][source] and r["input"] == path)
            assert {k: got[k] for k in figures} == {k: want[k] for k in figures}, (export, name)
            if not export.endswith(":gpt2"):  # a .tiktoken file has no special tokens: a smaller vocabulary
                assert (got["vocab_size"], got["vocab_used"]) == (want["vocab_size"], want["vocab_used"])


def test_the_tiktoken_file_gives_tiktokens_own_token_counts(workspace, records):
    tiktoken = pytest.importorskip("tiktoken")
    from tokenizer.interop.tiktoken_files import TIKTOKEN_PATTERN_TEXT, read_tiktoken_ranks

    spec = next(e for e in workspace["exports"] if e.endswith(":gpt2"))
    encoding = tiktoken.Encoding(name="bpe-1000", pat_str=TIKTOKEN_PATTERN_TEXT["gpt2"], special_tokens={},
                                 mergeable_ranks=read_tiktoken_ranks(spec.rpartition(":")[0]))
    for name in ("en", "zh"):
        record = next(r for r in records if r["model"] == spec and r["input"] == workspace["inputs"][name])
        documents = workspace["documents"][name]
        assert record["tokens"] == sum(len(encoding.encode_ordinary(t.decode("utf-8"))) for t in documents)
        assert record["vocab_size"] == encoding.n_vocab


def test_the_tiktoken_file_read_with_the_o200k_pattern_gives_tiktokens_counts(workspace, capsys):
    """--tiktoken-pattern o200k: the same ranks pre-split by tiktoken's o200k regex (letters split by case)."""
    tiktoken = pytest.importorskip("tiktoken")
    from tokenizer.interop.tiktoken_files import TIKTOKEN_PATTERN_TEXT, read_tiktoken_ranks

    path = next(e for e in workspace["exports"] if e.endswith(":gpt2")).rpartition(":")[0]
    encoding = tiktoken.Encoding(name="bpe-1000-o200k", pat_str=TIKTOKEN_PATTERN_TEXT["o200k"], special_tokens={},
                                 mergeable_ranks=read_tiktoken_ranks(path))
    got = run_json(["--model", path, "--tiktoken-pattern", "o200k", "--input", workspace["inputs"]["en"]], capsys)
    documents = workspace["documents"]["en"]
    assert got[0]["round_trip"] is True
    assert got[0]["tokens"] == sum(len(encoding.encode_ordinary(t.decode("utf-8"))) for t in documents)


def test_jsonl_and_parquet_columns_give_the_text_files_figures(workspace, capsys):
    model = workspace["models"]["bpe-1000.model"]
    inputs = workspace["inputs"]
    got = run_json(["--model", model, "--input", inputs["en"], "--input", inputs["en.jsonl"], "--input",
                    inputs["en.parquet"], "--text-column", "body"], capsys)
    figures = [{k: r[k] for k in ("bytes", "tokens", "words", "vocab_used")} for r in got]
    assert figures[0] == figures[1] == figures[2]


def test_one_table_per_input(workspace, records, capsys):
    specs = [workspace["models"]["bytepiece-1000.model"], workspace["models"]["unigram-2400.model"],
             next(e for e in workspace["exports"] if e.endswith(":gpt2"))]
    assert main(["evaluate", *model_args(specs), "--input", workspace["inputs"]["en"], "--input",
                 workspace["inputs"]["zh"]]) == 0
    tables = capsys.readouterr().out.strip().split("\n\n")
    assert len(tables) == 2
    for table, name, unit in zip(tables, ("en", "zh"), ("tokens/word", "tokens/char")):
        title, header, *rows = table.splitlines()
        path = workspace["inputs"][name]
        assert title.startswith(f"{path}: {len(workspace['documents'][name]):,} documents, ")
        assert header.split()[:4] == ["model", "algorithm", "format", "vocab"] and unit in header
        assert [row.split()[0] for row in rows] == specs
        for row, spec in zip(rows, specs):
            record = next(r for r in records if r["model"] == spec and r["input"] == path)
            cells = row.split()
            assert cells[4] == f"{record['bytes_per_token']:.3f}" and cells[5] == f"{record['tokens_per_word']:.3f}"
            assert cells[8] == "yes"


def test_plot_is_a_png_with_a_line_per_kind_and_input(workspace, records, tmp_path, capsys):
    lines = plot_lines(records)
    en = workspace["inputs"]["en"]
    sizes = [size for size, _ in lines[("bytepiece", en)]]
    assert len(sizes) == 2 and sizes == sorted(sizes)
    assert len(lines[("unigram", en)]) == 2 and len(lines[("bpe (tiktoken)", en)]) == 1
    assert len(lines) == 2 * len({k for k, _ in lines})
    out = tmp_path / "plot" / "bpt.png"
    specs = [workspace["models"][name] for name in ("bytepiece-500.model", "bytepiece-1000.model")]
    assert main(["evaluate", *model_args(specs), "--input", en, "--plot", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert f"wrote {out}" in capsys.readouterr().err


def test_plot_without_matplotlib_says_how_to_install_it(workspace, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    code = main(["evaluate", "--model", workspace["models"]["bpe-500.model"], "--input", workspace["inputs"]["en"],
                 "--plot", str(tmp_path / "p.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "pip install 'shardpiece[plot]'" in err
    assert not (tmp_path / "p.png").exists()


def run_command(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "jobs.cli", "evaluate", *argv], capture_output=True, text=True,
                          env=env, timeout=600)


def test_the_command_prints_the_same_records(workspace, records):
    specs = [workspace["models"]["unigram-1800.model"], next(e for e in workspace["exports"] if "bytepiece" in e)]
    result = run_command(*model_args(specs), "--input", workspace["inputs"]["zh"], "--json")
    assert result.returncode == 0, result.stderr
    got = [json.loads(line) for line in result.stdout.splitlines()]
    for record in got:
        want = next(r for r in records if r["model"] == record["model"] and r["input"] == record["input"])
        assert {k: v for k, v in record.items() if k != "encode_mb_per_s"} == \
               {k: v for k, v in want.items() if k != "encode_mb_per_s"}


@pytest.mark.parametrize("case, fix", [
    ("missing input", "matches no file"),
    ("missing model", "cannot read the file"),
    ("not a model", "unknown model format"),
    ("tiktoken without pattern", "--tiktoken-pattern"),
    ("unknown tiktoken pattern", "use one of gpt2, cl100k, o200k"),
    ("folder without tokenizer.json", "a folder without a tokenizer.json"),
])
def test_a_bad_model_or_input_is_exit_2_with_one_line(workspace, case, fix, tmp_path, capsys):
    model, source = workspace["models"]["bpe-500.model"], workspace["inputs"]["en"]
    tiktoken_file = next(e for e in workspace["exports"] if e.endswith(":gpt2")).rpartition(":")[0]
    (tmp_path / "empty").mkdir()
    argv = {
        "missing input": ["--model", model, "--input", str(tmp_path / "nope.txt")],
        "missing model": ["--model", str(tmp_path / "nope.model"), "--input", source],
        "not a model": ["--model", source, "--input", source],
        "tiktoken without pattern": ["--model", tiktoken_file, "--input", source],
        "unknown tiktoken pattern": ["--model", tiktoken_file + ":p50k", "--input", source],
        "folder without tokenizer.json": ["--model", str(tmp_path / "empty"), "--input", source],
    }[case]
    code = main(["evaluate", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("shardpiece evaluate: error: ") and fix in err


def test_the_command_exits_2_for_a_missing_model(workspace, tmp_path):
    result = run_command("--model", str(tmp_path / "nope.model"), "--input", workspace["inputs"]["en"])
    assert result.returncode == 2 and result.stdout == ""
    missing = tmp_path / "nope.model"
    assert result.stderr == f"shardpiece evaluate: error: {missing}: cannot read the file: No such file or directory\n"
