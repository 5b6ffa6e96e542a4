"""The tokenize job's direct JSONL read (:mod:`pipelines.read.jsonl_read`: pyarrow for the lines, Python for the
JSON) gives the rows Spark's JSONL read gives: every awkward line (blank, malformed, no text field, text that is no
string, nested kept fields, numbers, non-ASCII, invalid UTF-8, CRLF, single quotes) and byte ranges cut inside a
file. Spark with ``reader: arrow`` reads JSONL that way; the Beam engine always does
(``tests/pipelines/test_beam_tokenize.py`` compares it with Spark's reader)."""

from __future__ import annotations

import gzip
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.read.jsonl_read import JsonlUnit, jsonl_columns, plan_jsonl, read_jsonl_units
from pipelines.tokenize.commit import read_manifest
from tests.pipelines.test_tokenize_job import make_documents

#: Lines that Spark's JSON functions take in every way they can: ``(line, what it is)``.
AWKWARD_LINES = [
    (b'{"text": "plain ascii", "id": 1, "meta": {"lang": "en", "score": 0.5}}', "strings, a nested object"),
    (b"", "blank: no row"),
    (b"    ", "spaces only: no row"),
    (json.dumps({"text": "non-ASCII \u4e2d\u6587 \U0001f600 na\u00efve", "id": 2, "tag": "\u03a9"},
                ensure_ascii=False).encode(), "raw UTF-8"),
    (json.dumps({"text": "\u4e2d\U0001f600 escaped", "id": 3}).encode(), "\\u escapes, a surrogate pair"),
    (b"[1, 2]", "an array: malformed"),
    (b"not json", "malformed"),
    (b"\t", "a tab: malformed, not blank"),
    (b'{"id": 4, "meta": null}', "no text field: null"),
    (b'{"text": null, "id": 5}', "null text"),
    (b'{"text": 42, "id": 6.5e1}', "a number as text, a float kept"),
    (b'{"text": {"a": [1, true, null], "b": 1e2}, "id": -0}', "an object as text"),
    (b'{"text": ["x", "y"], "id": 8, "meta": [{"k": "\\u00e9"}]}', "an array as text"),
    (b'{"text": true, "id": 9}', "a boolean as text"),
    (b'{"text": "bad \xff byte and \xed\xa0\x80 surrogate", "id": 10}', "invalid UTF-8 in the text"),
    (b'{"text": "ok", "id": 11, "tag": "\xc3("}', "invalid UTF-8 in a kept field"),
    (b"{'text': 'single quotes', 'id': 12}", "single quotes"),
    (b'{"text": "trailing", "id": 13} garbage after', "text after the object"),
    (b'{"text": "first", "text": "dup", "id": 14}', "a repeated name"),
    (b'{"text": "", "id": 15}', "empty text"),
    (b'{"text": "crlf line", "id": 16}\r', "a CRLF line"),
    (b"\r", "a lone CR: malformed"),
    (b'{"text": "tab\tinside\\n", "id": 17, "meta": {"deep": {"er": [1, {"x": "\xc3\xa9"}]}}}', "a raw tab"),
    (b'  {"text": "leading spaces", "id": 18}  ', "spaces around"),
    (b'{"text": "big", "id": 123456789012345678901234567890, "tag": 1e400}', "a huge integer, an overflow"),
    (b'{"text": "\\ud800 lone surrogate escape", "id": 19}', "a lone surrogate escape: null"),
    (b'\xef\xbb\xbf{"text": "bom", "id": 20}', "a byte order mark: malformed"),
    (b'{"text": "nan", "id": NaN}', "NaN: malformed"),
    (b'{"text": "c" /* c */, "id": 21}', "a comment: malformed"),
    (b'{text: "unquoted", "id": 22}', "an unquoted name: malformed"),
    (b'{"text": "comma", "id": 23,}', "a trailing comma: malformed"),
    (b'{"text": "closed twice", "id": 24}}', "a second brace after the object"),
    (b'{"id": {"text": "inner"}}', "the text field only nested: null"),
    (b'{"text": 1e22, "id": -1.5E-10, "tag": 12345678.0, "meta": [0.001, -0.0, 1234567.0]}', "floats"),
    (b'{"text":"a","id":null,"id":25,"tag":"\\ud83d\\ude00","meta":{"k":"\xf0\x9f\x98\x80"}}', "escapes"),
]
KEEP = ["id", "meta", "tag"]


def _document_lines(count: int, seed: int, first_id: int) -> list[bytes]:
    return [json.dumps({"id": first_id + i} if doc is None else {"id": first_id + i, "text": doc},
                       ensure_ascii=bool(i % 2)).encode() for i, doc in enumerate(make_documents(count, seed))]


def write_jsonl_corpus(directory, awkward: bool = True) -> list[str]:
    """JSONL files in ``directory``: ``a.jsonl`` (documents and every awkward line, no newline after the last
    line), ``b.jsonl.gz``, ``c.jsonl.zst`` and an empty ``d.jsonl``. Their sizes fall in name order: Spark's
    reader reads the largest file first (and ``.zst`` files after the others), so its rows come in input order
    too. ``awkward``: without the awkward lines (``a.jsonl`` then has no bad row but empty texts)."""
    import zstandard

    os.makedirs(directory, exist_ok=True)
    awkward_lines = [line for line, _ in AWKWARD_LINES] if awkward else []
    first = _document_lines(300, seed=11, first_id=0)
    lines = first[:150] + awkward_lines + first[150:] + awkward_lines[::-1]
    with open(os.path.join(directory, "a.jsonl"), "wb") as handle:
        handle.write(b"\n".join(lines))
    with gzip.open(os.path.join(directory, "b.jsonl.gz"), "wb") as handle:
        handle.write(b"\n".join(_document_lines(200, seed=12, first_id=1000) + awkward_lines[:6]) + b"\n")
    with open(os.path.join(directory, "c.jsonl.zst"), "wb") as handle:
        handle.write(zstandard.ZstdCompressor().compress(b"\n".join(_document_lines(40, seed=13, first_id=2000))
                                                         + b"\n"))
    open(os.path.join(directory, "d.jsonl"), "wb").close()
    sizes = [os.path.getsize(os.path.join(directory, name)) for name in ("a.jsonl", "b.jsonl.gz", "c.jsonl.zst")]
    assert sizes == sorted(sizes, reverse=True), sizes
    return [str(directory)]


def output_rows(output) -> tuple[pa.Table, list[int]]:
    """A Parquet output's shards, in manifest order, as one table, and each run's document count."""
    manifest = read_manifest(str(output))
    tables = [pq.read_table(os.path.join(str(output), shard["stem"] + ".parquet"))
              for run in manifest["runs"] for shard in run["shards"]]
    return pa.concat_tables(tables), [sum(shard["documents"] for shard in run["shards"]) for run in manifest["runs"]]


#: summary fields two engines (or readers) must agree on for the same input and settings
SAME_SUMMARY = ("rows_read", "documents", "bytes", "tokens", "bad_rows", "tokens_per_document", "input_files",
                "empty_input_files", "input_format")


def same_summary(summary: dict) -> dict:
    return {key: summary[key] for key in SAME_SUMMARY}


# ---------------------------------------------------------------------------------------------- no Spark
def test_jsonl_columns_read_lines_as_sparks_json_functions_do():
    lines = [line for line, _ in AWKWARD_LINES]
    rows, text, malformed, kept = jsonl_columns(lines, "text", ["id", "meta"])
    assert rows.tolist() == [i for i, line in enumerate(lines) if line.strip(b" ")]
    by_line = dict(zip(rows.tolist(), zip(text.to_pylist(), malformed.tolist(), *[k.to_pylist() for k in kept])))
    assert by_line[0] == (b"plain ascii", False, "1", '{"lang":"en","score":0.5}')
    assert by_line[5] == by_line[7] == by_line[21] == (None, True, None, None)
    assert by_line[8] == (None, False, "4", None)
    assert by_line[10] == (b"42", False, "65.0", None)
    assert by_line[11] == (b'{"a":[1,true,null],"b":100.0}', False, "0", None)
    assert by_line[14][0] == "bad \ufffd byte and \ufffd surrogate".encode()  # Java's decoder: one U+FFFD each
    assert by_line[16][0] == b"single quotes" and by_line[17][0] == b"trailing" and by_line[18][0] == b"first"
    assert by_line[25] == (None, False, "19", None)
    assert text.type == pa.binary() and all(k.type == pa.string() for k in kept)


@pytest.mark.parametrize("unit_count", [1, 3, 7])
def test_jsonl_units_give_every_row_once_named_by_its_line(tmp_path, unit_count):
    path = tmp_path / "a.jsonl"
    lines = [line for line, _ in AWKWARD_LINES] * 3
    path.write_bytes(b"\n".join(lines) + b"\n")
    units, reason = plan_jsonl([(str(path), os.path.getsize(path))], unit_count)
    assert reason == "" and len(units) == unit_count and all(isinstance(u, JsonlUnit) for u in units)
    schema = pa.schema([("id", pa.string())])
    expected_rows, expected_text, _, (expected_ids,) = jsonl_columns(lines, "text", ["id"])
    texts, ids, places = [], [], []
    for batch, place in read_jsonl_units(units, "text", schema, "t", "m", located=True):
        assert batch.schema.names == ["t", "m", "id"]
        texts += batch.column("t").to_pylist()
        ids += batch.column("id").to_pylist()
        places += [place.describe(row) for row in range(batch.num_rows)]
    assert texts == expected_text.to_pylist() and ids == expected_ids.to_pylist()
    assert places == [f"{path}, line {row + 1}" for row in expected_rows.tolist()]


def test_jsonl_files_pyarrow_cannot_take_are_named():
    units, reason = plan_jsonl([("/x/a.jsonl.bz2", 10)], None)
    assert units is None and "a.jsonl.bz2" in reason


# ---------------------------------------------------------------------------------------------- Spark
@pytest.mark.spark
def test_sparks_direct_jsonl_read_writes_what_its_reader_writes(spark, tmp_path):
    """``reader: arrow`` (the direct read, byte ranges cut inside ``a.jsonl``) and Spark's reader write the same
    Parquet rows, kept columns included, with the same counts, for ``--on-bad-row keep`` and ``skip``."""
    from pipelines.tokenize import TokenizeConfig, run_tokenize
    from tests.pipelines.test_tokenize_job import PIECES
    from tokenizer import Model

    model = str(tmp_path / "m.shardpiece")
    Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0], specials=("<s>", "</s>")).save(model)
    inputs = write_jsonl_corpus(tmp_path / "in")
    for policy in ("keep", "skip"):
        def run(name, **options):
            return run_tokenize(spark, TokenizeConfig(model=model, inputs=inputs, output=str(tmp_path / name),
                                                      keep_columns=KEEP, on_bad_row=policy, quiet=True,
                                                      add_bos=True, **options))

        through_spark = run(f"spark-{policy}")
        direct = run(f"arrow-{policy}", reader="arrow", partitions=5)
        assert through_spark["reader"] == "spark" and direct["reader"] == "arrow"
        assert same_summary(direct) == same_summary(through_spark)
        (spark_table, spark_runs), (direct_table, direct_runs) = (output_rows(tmp_path / f"spark-{policy}"),
                                                                  output_rows(tmp_path / f"arrow-{policy}"))
        assert direct_table.schema == spark_table.schema and direct_runs == spark_runs
        assert direct_table.to_pylist() == spark_table.to_pylist()
        assert direct["bad_rows"]["malformed"] > 0 and direct["bad_rows"]["null"] > 0


def test_which_reader_takes_jsonl(tmp_path):
    """Spark keeps its own reader for JSONL unless ``reader: arrow``; an engine without one (Beam) reads it
    directly, and what only Spark's reader reads is an error saying why."""
    from pipelines.read.jsonl_read import JsonlPlan
    from pipelines.tokenize import TokenizeConfig
    from pipelines.tokenize.commit import InputFile
    from pipelines.tokenize.inputs import _direct_plan
    from tokenizer.errors import ConfigError

    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"text": "a", "id": 1}\n')
    files = [InputFile(str(path), os.path.getsize(path), 0)]

    def plan(engine=None, **options):
        config = TokenizeConfig(model="m", inputs=[str(path)], output="o", keep_columns=["id"], **options)
        return _direct_plan(config, "jsonl", files, engine=engine)

    assert plan() == (None, None) and plan(reader="spark") == (None, None)
    for units, schema in (plan(reader="arrow"), plan(engine="beam")):
        assert isinstance(units, JsonlPlan) and [u.path for u in units.units] == [str(path)]
        assert schema == pa.schema([("id", pa.string())])
    with pytest.raises(ConfigError, match=r"--engine beam .*\(--verify counts the input rows with Spark's reader\)"):
        plan(engine="beam", verify=True)
    with pytest.raises(ConfigError, match=r"reader: spark asks for Spark's reader\): tokenize it with Spark"):
        plan(engine="beam", reader="spark")
    with pytest.raises(ConfigError, match="names with quotes or backslashes are not supported"):
        plan(engine="beam", text_column="it's")
