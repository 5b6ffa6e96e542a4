"""encode / decode / inspect commands: byte-exact round trips through files and stdin/stdout, errors, no Spark."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.cli import main
from jobs.encode import escape_piece, unescape_piece
from tokenizer.model import Model
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

TEXT = (
    "hello world, hello there\n"
    "東京大学の日本語テキスト\n"
    "\n"
    "trailing spaces and \\ backslash   \r\n"
    "  indented\ttab\n"
).encode() + b"bad \xff\xfe utf-8\n\x00nul\n"


@pytest.fixture(scope="module", params=["byte_level", "trained"])
def model_path(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / f"{request.param}.model"
    if request.param == "byte_level":
        model = Model.byte_level([b"hello", b" world", "日本".encode(), b"  "], [-2.0, -3.0, -2.5, -4.0],
                                 specials=("<s>", "</s>"))
    else:
        lines = [b"hello world, hello there", "東京大学の日本語テキスト".encode(), b"the cat and the hat"] * 30
        model = train_bytepiece_local(lines, TrainSettings(min_count=2, vocab_sizes=(300,)))[300]
    model.save(path)
    return str(path)


class FakeStream:
    """Stands in for sys.stdin / sys.stdout: a ``.buffer`` of bytes."""

    def __init__(self, data: bytes = b""):
        self.buffer = io.BytesIO(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_escape_piece_is_reversible_and_whitespace_free(piece):
    text = escape_piece(piece)
    assert not any(c.isspace() for c in text)
    assert unescape_piece(text.encode()) == piece


def test_escape_piece_examples():
    assert escape_piece(b"a b") == "a\\x20b"
    assert escape_piece("日本".encode()) == "日本"
    assert escape_piece(b"\\") == "\\\\"
    assert escape_piece(b"\xe6\x97") == "\\xe6\\x97"


def test_encode_decode_round_trip_through_files(model_path, tmp_path):
    source, ids, back = tmp_path / "in.txt", tmp_path / "ids.txt", tmp_path / "back.txt"
    source.write_bytes(TEXT)
    assert main(["encode", "--model", model_path, "--input", str(source), "--output", str(ids)]) == 0
    id_lines = ids.read_bytes().split(b"\n")[:-1]
    assert len(id_lines) == TEXT.count(b"\n")
    assert id_lines[2] == b""  # the empty line stays an empty line
    assert all(field.isdigit() for line in id_lines for field in line.split())
    assert main(["decode", "--model", model_path, "--input", str(ids), "--output", str(back)]) == 0
    assert back.read_bytes() == TEXT


def test_encode_decode_through_stdin_and_stdout(model_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", FakeStream(TEXT))
    out = FakeStream()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["encode", "--model", model_path]) == 0
    ids = out.buffer.getvalue()
    monkeypatch.setattr(sys, "stdin", FakeStream(ids))
    back = FakeStream()
    monkeypatch.setattr(sys, "stdout", back)
    assert main(["decode", "--model", model_path]) == 0
    assert back.buffer.getvalue() == TEXT


def test_pieces_round_trip_and_last_line_without_newline(model_path, tmp_path):
    source, pieces, back = tmp_path / "in.txt", tmp_path / "pieces.txt", tmp_path / "back.txt"
    source.write_bytes(b"hello world\n\xe6\x97 half a character")
    assert main(["encode", "--model", model_path, "--pieces", "--input", str(source), "--output", str(pieces)]) == 0
    assert b"\\xe6\\x97" in pieces.read_bytes().replace(b" ", b"")
    assert main(["decode", "--model", model_path, "--pieces", "--input", str(pieces), "--output", str(back)]) == 0
    assert back.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("ends", ["", "\n"])
def test_bos_eos_and_a_last_line_without_newline_round_trip(model_path, tmp_path, ends):
    source, ids, back = tmp_path / "in.txt", tmp_path / "ids.txt", tmp_path / "back.txt"
    source.write_bytes(TEXT + b"last line" + ends.encode())
    assert main(["encode", "--model", model_path, "--add-bos", "--add-eos", "--input", str(source),
                 "--output", str(ids)]) == 0
    model = Model.load(model_path)
    assert ids.read_bytes().endswith(b"\n") == bool(ends)  # the ids keep where the text's newlines were
    lines = [row for row in ids.read_bytes().split(b"\n") if row]
    assert all(row.split()[0] == str(model.bos_id).encode() and row.split()[-1] == str(model.eos_id).encode()
               for row in lines)
    assert main(["decode", "--model", model_path, "--input", str(ids), "--output", str(back)]) == 0
    assert back.read_bytes() == source.read_bytes()


def test_add_bos_without_a_bos_piece_says_so(tmp_path, capsys):
    path = str(tmp_path / "plain.model")
    Model.byte_level([b"ab"], [-1.0]).save(path)
    (tmp_path / "in.txt").write_bytes(b"ab\n")
    assert main(["encode", "--model", path, "--add-bos", "--input", str(tmp_path / "in.txt")]) == 2
    assert "no bos piece" in capsys.readouterr().err


def loaded_after(argv: list[str]) -> list[str]:
    """The Numba and pyspark modules a fresh interpreter has loaded after ``shardpiece ARGV``."""
    code = ("import contextlib, io, sys\nfrom jobs.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'pyspark'))))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [m for m in result.stdout.strip().split(",") if m]


def test_inspect_and_help_load_no_numba_or_spark(model_path, tmp_path):
    from jobs.export import EXPORTERS
    from tokenizer.trainers.unigram import UnigramSettings, train_unigram_local

    model = Model.load(model_path)
    EXPORTERS["huggingface"](model, str(tmp_path / "hf"))
    lines = [b"hello world, hello there", b"the cat and the hat", b"a tokenizer splits text"] * 20
    EXPORTERS["sentencepiece"](train_unigram_local(lines, UnigramSettings(vocab_size=60)), str(tmp_path / "sp.model"))
    for argv in (["--help"], ["encode", "--help"], ["decode", "--help"], ["inspect", "--help"],
                 ["inspect", model_path], ["inspect", model_path, "--json"], ["inspect", str(tmp_path / "hf")],
                 ["inspect", str(tmp_path / "hf" / "tokenizer.json")], ["inspect", str(tmp_path / "sp.model")]):
        assert loaded_after(argv) == [], argv


def test_decode_errors_name_line_and_fix(model_path, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"1 2 3\n4 999999\n")
    assert main(["decode", "--model", model_path, "--input", str(bad)]) == 2
    assert "line 2: id 999999 is outside the vocabulary" in capsys.readouterr().err
    bad.write_bytes(b"1 two\n")
    assert main(["decode", "--model", model_path, "--input", str(bad)]) == 2
    assert "'two' is not an integer id" in capsys.readouterr().err
    assert main(["encode", "--model", str(tmp_path / "missing.model"), "--input", str(bad)]) == 2
    assert "cannot read the file" in capsys.readouterr().err


def test_inspect_text_and_json(model_path, capsys):
    assert main(["inspect", model_path]) == 0
    text = capsys.readouterr().out
    assert "shardpiece model, format version 1" in text and "vocab_size" in text and "provenance" in text
    assert main(["inspect", model_path, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    model = Model.load(model_path)
    assert info["vocab_size"] == model.vocab_size
    assert info["normalizer"] == model.normalizer
    assert info["piece_types"]["normal"] + info["piece_types"].get("control", 0) == model.vocab_size


def test_inspect_bounds_long_provenance_and_json_keeps_all(tmp_path, capsys):
    from tokenizer.trainers.bpe import BpeSettings, train_bpe_local

    lines = [f"word{i} other{i % 7} thing{i % 13}".encode() for i in range(3000)]
    path = str(tmp_path / "bpe.model")
    model = train_bpe_local(lines, BpeSettings(vocab_sizes=(600,)))[600]
    model.save(path)
    assert main(["inspect", path]) == 0
    text = capsys.readouterr().out
    assert "bpe_merges" in text and "items)" in text and max(len(line) for line in text.splitlines()) < 400
    assert main(["inspect", path, "--json"]) == 0
    merges = json.loads(capsys.readouterr().out)["provenance"]["bpe_merges"]["left_lengths"]
    assert len(merges) == len(model.provenance["bpe_merges"]["left_lengths"]) > 100


def test_single_node_commands_never_import_pyspark(model_path, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"hello world\n")
    code = (
        "import sys; from jobs.cli import main; "
        f"rc = main(['encode', '--model', {model_path!r}, '--input', {str(source)!r}, '--output', '/dev/null']); "
        f"rc += main(['inspect', {model_path!r}]); "
        "assert rc == 0, rc; assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_decode_of_an_identity_model_loads_no_numba(model_path, tmp_path):
    """Decoding joins the pieces' bytes: a model without a SentencePiece normalizer needs no kernel for it."""
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"104 101 108\n")
    assert Model.load(model_path).normalizer.get("name", "identity") == "identity"
    argv = ["decode", "--model", model_path, "--input", str(ids), "--output", str(tmp_path / "text.txt")]
    assert loaded_after(argv) == []
    assert (tmp_path / "text.txt").read_bytes() == b"hel\n"
