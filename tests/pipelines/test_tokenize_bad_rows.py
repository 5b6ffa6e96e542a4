"""Bad rows in the tokenize job: the ``error`` line names the file and line (text, JSONL) or row group and row
(Parquet) on every read path; invalid UTF-8 is a bad row only for SentencePiece-style models."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.tokenize import TokenizeConfig, run_tokenize
from pipelines.tokenize.commit import OutputDirectory
from tests.pipelines.test_tokenize_job import PIECES, decoded_documents
from tokenizer import Model, Tokenizer
from tokenizer.bad_rows import BAD_ROW_CHOICES
from tokenizer.errors import InputError
from tokenizer.model import PieceType

pytestmark = pytest.mark.spark
NOTHING_COMMITTED = "(nothing was committed; the output directory keeps its previous state)"


def sentencepiece_style_model() -> Model:
    """A tiny SentencePiece-style unigram model (``▁``, a-z, ``▁the``): its normalizer works on characters."""
    pieces = [b"<unk>", b"<s>", b"</s>", *[c.encode() for c in "\u2581abcdefghijklmnopqrstuvwxyz"],
              "\u2581the".encode()]
    types = [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.CONTROL] + [PieceType.NORMAL] * (len(pieces) - 3)
    scores = [0.0, 0.0, 0.0] + [-3.0] * (len(pieces) - 4) + [-1.0]
    return Model(pieces, np.array(scores), np.array(types), algorithm="unigram", unk_id=0, bos_id=1, eos_id=2,
                 pretokenizer={"name": "sentencepiece", "add_dummy_prefix": True, "remove_extra_whitespaces": True,
                               "escape_whitespaces": True, "treat_whitespace_as_suffix": False})


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``{"byte_level": path, "sentencepiece": path}``."""
    directory = tmp_path_factory.mktemp("models")
    byte_level = Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0], specials=("<s>", "</s>"))
    byte_level.save(directory / "byte_level.model")
    sentencepiece_style_model().save(directory / "sentencepiece.model")
    return {name: str(directory / f"{name}.model") for name in ("byte_level", "sentencepiece")}


def _config(model, inputs, output, **options) -> TokenizeConfig:
    return TokenizeConfig(model=model, inputs=[str(i) for i in inputs], output=str(output), progress_seconds=5,
                          **options)


def _stops_with(spark, config, place: str, detail: str) -> str:
    """Run ``config``, which must stop on a bad row: its one line is ``PLACE: DETAIL; <the choices> (nothing was
    committed ...)`` and the output directory is not committed."""
    with pytest.raises(InputError) as raised:
        run_tokenize(spark, config)
    message = str(raised.value)
    assert message == f"{place}: {detail}; {BAD_ROW_CHOICES} {NOTHING_COMMITTED}"
    assert "\n" not in message and not OutputDirectory(config.output).is_complete()
    return message


def _lines(count: int, bad: dict[int, bytes]) -> bytes:
    """``count`` lines (``the cat N``), line ``n`` (from 1) replaced by ``bad[n]``."""
    return b"".join(bad.get(n, b"the cat %d" % n) + b"\n" for n in range(1, count + 1))


@pytest.mark.parametrize("reader", ["auto", "spark"])
def test_invalid_utf8_in_text_names_file_and_line(spark, tmp_path, models, monkeypatch, reader):
    import pipelines.read.arrow_read as arrow_read

    monkeypatch.setattr(arrow_read, "TEXT_UNIT_BYTES", 100)  # the bad line is in a later unit of the file
    (tmp_path / "a.txt").write_bytes(_lines(10, {}))
    (tmp_path / "b.txt").write_bytes(_lines(40, {37: b"the \xff cat", 39: b"\xfe"}))
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt"]
    config = _config(models["sentencepiece"], inputs, tmp_path / "out", reader=reader)
    _stops_with(spark, config, f"file:{tmp_path}/b.txt, line 37",
                "not valid UTF-8 (this model's normalizer works on characters)")


@pytest.mark.parametrize("suffix", [".txt.gz", ".txt.zst"])
def test_compressed_text_names_file_and_line_on_both_readers(spark, tmp_path, models, suffix):
    data = _lines(30, {12: b"\xc3(", 20: b"\xff"})
    packed = gzip.compress(data) if suffix == ".txt.gz" else zstandard.ZstdCompressor().compress(data)
    (tmp_path / f"in{suffix}").write_bytes(packed)
    for reader in ("auto", "spark"):
        config = _config(models["sentencepiece"], [tmp_path / f"in{suffix}"], tmp_path / reader, reader=reader)
        _stops_with(spark, config, f"file:{tmp_path}/in{suffix}, line 12",
                    "not valid UTF-8 (this model's normalizer works on characters)")


def test_malformed_jsonl_line_names_file_and_line(spark, tmp_path, models):
    lines = [json.dumps({"text": f"the cat {n}"}) for n in range(1, 8)]
    lines[1] = ""             # blank lines are no rows, but they are lines
    lines[4] = "[1, 2]"       # line 5
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    config = _config(models["byte_level"], [tmp_path / "docs.jsonl"], tmp_path / "out")
    _stops_with(spark, config, f"file:{tmp_path}/docs.jsonl, line 5", "not a JSON object")
    (tmp_path / "docs.jsonl").write_text("\n".join(lines[:4] + [json.dumps({"id": 5})] + lines[5:]) + "\n")
    config = _config(models["byte_level"], [tmp_path / "docs.jsonl"], tmp_path / "null")
    _stops_with(spark, config, f"file:{tmp_path}/docs.jsonl, line 5",
                "no text (null, or no field/column named as --text-column)")


def test_null_parquet_text_names_row_group_and_row(spark, tmp_path, models):
    texts = [f"the cat {n}" for n in range(50)]
    texts[23] = None
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), str(path), row_group_size=10)
    detail = "no text (null, or no field/column named as --text-column)"
    _stops_with(spark, _config(models["byte_level"], [path], tmp_path / "a"),
                f"file:{path}, row group 2, row 3 (both from 0)", detail)
    _stops_with(spark, _config(models["byte_level"], [path], tmp_path / "s", reader="spark"),
                f"file:{path}, row 23 (from 0)", detail)


def test_a_bad_row_of_parquet_filtered_by_where_is_named_by_its_row_in_the_row_group(spark, tmp_path, models):
    texts = [f"the cat {n}" for n in range(50)]
    texts[23] = None
    path = tmp_path / "in.parquet"
    table = pa.table({"text": pa.array(texts, pa.string()), "odd": [n % 2 for n in range(50)], "n": range(50)})
    pq.write_table(table, str(path), row_group_size=10)
    # row group 2 keeps rows 21, 22, 23, ...: the null is the filtered batch's row 2, the row group's row 3
    _stops_with(spark, _config(models["byte_level"], [path], tmp_path / "w", where="odd = 1 OR n = 22"),
                f"file:{path}, row group 2, row 3 (both from 0)",
                "no text (null, or no field/column named as --text-column)")


@pytest.mark.parametrize("reader", ["auto", "spark"])
def test_a_byte_level_model_tokenizes_invalid_utf8_as_the_bytes_it_is(spark, tmp_path, models, reader):
    data = _lines(6, {2: b"bad \xff\xfe bytes", 5: b"\xe6\x97 cut"})
    (tmp_path / "in.txt").write_bytes(data)
    output = tmp_path / "out"
    summary = run_tokenize(spark, _config(models["byte_level"], [tmp_path / "in.txt"], output, reader=reader,
                                          output_format="npy", verify=True))
    assert summary["bad_rows"]["total"] == 0 and summary["documents"] == 6
    assert summary["verify"]["documents_checked"] == 6
    decoded = decoded_documents(Tokenizer.load(models["byte_level"]), str(output), "npy")
    assert sorted(decoded) == sorted(data.split(b"\n")[:-1])


def test_sentencepiece_style_model_skips_or_replaces_invalid_utf8(spark, tmp_path, models):
    (tmp_path / "in.txt").write_bytes(_lines(6, {2: b"bad \xff", 5: b"\xe6\x97 cut"}))
    tok = Tokenizer.load(models["sentencepiece"])
    skipped = run_tokenize(spark, _config(models["sentencepiece"], [tmp_path / "in.txt"], tmp_path / "s",
                                          output_format="npy", on_bad_row="skip"))
    assert skipped["bad_rows"] | {} == {**skipped["bad_rows"], "invalid_utf8": 2, "skipped": 2, "kept": 0}
    assert skipped["documents"] == 4 and skipped["rows_read"] == 6
    kept = run_tokenize(spark, _config(models["sentencepiece"], [tmp_path / "in.txt"], tmp_path / "k",
                                       output_format="npy", on_bad_row="keep"))
    assert kept["bad_rows"] | {} == {**kept["bad_rows"], "invalid_utf8": 2, "kept": 2, "altered_text": 2}
    decoded = decoded_documents(tok, str(tmp_path / "k"), "npy")
    assert tok.decode_bytes(tok.encode("bad \ufffd")) in decoded and len(decoded) == 6
