"""``--engine beam`` on inputs with a scheme, read through Beam's ``FileSystems`` (:mod:`pipelines.beam.files`):
training gives the model bytes of the same files on a local path (a directory of text and ``.gz`` files, a glob of
Parquet files), tokenize the same shards, and a path that matches
nothing the local listing's error. The "remote" filesystem is ``tempfs://`` (:mod:`tests.pipelines.beam_tempfs`, a
test-only Beam ``FileSystem`` over a temporary directory, named by ``beam_plugins`` so that Beam's worker processes
import it too): no network. Skipped without Apache Beam."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("apache_beam")

from tests.pipelines.beam_tempfs import ROOT_ENV  # noqa: E402
from tests.pipelines.test_beam_engine import ALGORITHMS, train  # noqa: E402
from tests.pipelines.test_engines import corpus_lines  # noqa: E402
from tests.pipelines.test_tokenize_job import PIECES, make_documents, write_parquet, write_text  # noqa: E402

PLUGIN = "beam_plugins=tests.pipelines.beam_tempfs"
BEAM = ["--engine", "beam", "--beam-option", "direct_num_workers=2", "direct_running_mode=multi_processing", PLUGIN,
        "--partitions", "4"]
BEAM_TOKENIZE = {"runner": "DirectRunner", "beam_option": ["direct_num_workers=2",
                                                          "direct_running_mode=multi_processing", PLUGIN]}


@pytest.fixture(scope="module")
def tempfs(tmp_path_factory):
    """``(root, local copy)``: ``tempfs://corpus/`` (``ROOT/corpus``) and the same files in a local directory: two
    text files, a ``.gz`` one, two Parquet files (row groups of 150) and files the directory listing skips."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("tempfs")
    corpus = root / "corpus"
    (corpus / "text").mkdir(parents=True)
    (corpus / "parquet").mkdir()
    lines = corpus_lines(900, seed=21)
    for i, part in enumerate((lines[:300], lines[300:600])):
        (corpus / "text" / f"c{i}.txt").write_text("\n".join(part) + "\n", encoding="utf-8")
        pq.write_table(pa.table({"text": part}), corpus / "parquet" / f"c{i}.parquet", row_group_size=150)
    (corpus / "text" / "c2.txt.gz").write_bytes(gzip.compress(("\n".join(lines[600:]) + "\n").encode()))
    (corpus / "text" / "_SUCCESS").write_text("")
    (corpus / "text" / ".hidden.txt").write_text("never read\n")
    local = tmp_path_factory.mktemp("local")
    shutil.copytree(corpus, local / "corpus")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ROOT_ENV, str(root))  # the direct runner's worker processes inherit it
        yield root, local / "corpus"


@pytest.mark.slow
@pytest.mark.parametrize("name, scheme_input, local_input", [
    ("bytepiece", "tempfs://corpus/text", "text"),                          # a directory: plain and .gz files
    ("bpe byte-level", "tempfs://corpus/parquet/*.parquet", "parquet/*.parquet"),
])
def test_training_on_a_scheme_path_gives_the_local_copys_model_bytes(tempfs, tmp_path, name, scheme_input,
                                                                     local_input):
    _, local = tempfs
    flags = ALGORITHMS[name][0]
    # the local copy in this process (whose models equal --engine beam's on local paths: test_beam_engine.py)
    code, expected, reference = train(flags, [str(local / local_input)], tmp_path / "local", "--master", "none")
    assert code == 0
    code, got, manifest = train(flags, [scheme_input], tmp_path / "scheme", *BEAM)
    assert code == 0
    assert got == expected
    assert manifest["read"] == reference["read"]
    assert [f["path"] for f in manifest["input_fingerprint"]["files"]] == \
        [f["path"].replace("file:" + str(local), "tempfs://corpus") for f in reference["input_fingerprint"]["files"]]


def beam_tokenize():
    from pipelines.beam.tokenize import BeamTokenize

    return BeamTokenize(BEAM_TOKENIZE)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from tokenizer import Model

    path = str(tmp_path_factory.mktemp("model") / "test.shardpiece")
    Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0], specials=("<s>", "</s>")).save(path)
    return path


def test_tokenize_on_scheme_paths_writes_the_local_copys_shards(tempfs, tmp_path, model_path):
    from pipelines.tokenize import TokenizeConfig, run_tokenize
    from pipelines.tokenize.commit import read_manifest
    from tests.pipelines.test_beam_tokenize import rows

    root, _ = tempfs
    lake, local = root / "lake", tmp_path / "lake"
    lake.mkdir()
    write_parquet(str(lake / "day-1.parquet"), make_documents(900, seed=1))
    write_text(str(lake / "a.txt"), make_documents(700, seed=4))
    (lake / "b.jsonl").write_text("".join(json.dumps({"text": text, "n": k}) + "\n"
                                          for k, text in enumerate(make_documents(500, seed=5))), encoding="utf-8")
    shutil.copytree(lake, local)
    for name, output_format in (("day-1.parquet", "parquet"), ("a.txt", "npy"), ("b.jsonl", "parquet")):
        outputs = {}
        for where, source in (("scheme", f"tempfs://lake/{name}"), ("local", str(local / name))):
            outputs[where] = tmp_path / f"{where}-{name}"
            config = TokenizeConfig(model=model_path, inputs=[source], output=str(outputs[where]), quiet=True,
                                    on_bad_row="skip", output_format=output_format, partitions=3, add_eos=True)
            summary = run_tokenize(None, config, executor=beam_tokenize())
            assert summary["reader"] == "arrow"
        assert rows(outputs["scheme"], output_format) == rows(outputs["local"], output_format)
        manifest = read_manifest(str(outputs["scheme"]))
        assert [f["path"] for run in manifest["runs"] for f in run["inputs"]] == [f"tempfs://lake/{name}"]
        assert len(manifest["runs"][0]["shards"]) == 3


def test_a_scheme_path_that_matches_nothing_is_the_local_error(tempfs, tmp_path, model_path, capsys):
    from pipelines.tokenize import TokenizeConfig, run_tokenize
    from tokenizer.errors import InputError

    _, local = tempfs
    flags = ALGORITHMS["bpe byte-level"][0]
    for missing in ("corpus/nothing.txt", "corpus/text/*.nothing"):
        messages = []
        for source in (str(local.parent / missing), f"tempfs://{missing}"):
            code, _, _ = train(flags, [source], tmp_path / "train", *BEAM)
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and len(err) == 1, err
            messages.append(err[0].replace(source, "SOURCE"))
            with pytest.raises(InputError) as raised:
                run_tokenize(None, TokenizeConfig(model=model_path, inputs=[source], output=str(tmp_path / "tok"),
                                                  quiet=True), executor=beam_tokenize())
            messages.append(str(raised.value).replace(source, "SOURCE"))
        assert messages[:2] == messages[2:], messages
        assert "matches no file" in messages[0]


def test_a_bad_row_in_a_scheme_file_stops_the_run_as_in_a_local_file(tempfs, tmp_path, capsys):
    """The first bad row's file and line (JSONL, gzip text) or row (Parquet), found through Beam's ``FileSystems``:
    the local copy's one line, with the path."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    root, _ = tempfs
    (root / "bad").mkdir()
    lines = [json.dumps({"text": line}) for line in corpus_lines(40, seed=2)]
    lines[20] = "[1, 2]"  # not a JSON object
    (root / "bad" / "b.jsonl").write_text("\n".join(lines) + "\n")
    texts = [line.encode() for line in corpus_lines(40, seed=3)]
    texts[30] = b"bad \xff byte"
    (root / "bad" / "c.txt.gz").write_bytes(gzip.compress(b"\n".join(texts) + b"\n"))
    pq.write_table(pa.table({"text": pa.array(texts, pa.binary())}), root / "bad" / "d.parquet", row_group_size=16)
    local = tmp_path / "local"
    shutil.copytree(root / "bad", local)
    for name, flags in (("b.jsonl", ALGORITHMS["bpe byte-level"][0]),
                        ("c.txt.gz", ALGORITHMS["bpe sentencepiece"][0]),  # a character model: invalid UTF-8 is bad
                        ("d.parquet", ALGORITHMS["bpe sentencepiece"][0])):
        messages = []
        # the local copy in this process (its message is --engine beam's on a local path: test_beam_engine.py)
        for source, engine in ((str(local / name), ["--master", "none"]), (f"tempfs://bad/{name}", BEAM)):
            code, _, _ = train(flags, [source], tmp_path / name, *engine, "--on-bad-row", "error")
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and len(err) == 1, err
            messages.append(err[0].replace(source, "SOURCE"))
        assert messages[0] == messages[1] and messages[0].startswith("shardpiece train: error: SOURCE, "), messages


def test_listing_a_scheme_path_follows_the_local_listing(tempfs):
    from pipelines.beam import exchange as X
    from pipelines.beam.files import list_remote
    from pipelines.inprocess.read import list_local_inputs
    from tokenizer.errors import ConfigError

    _, local = tempfs
    X.import_plugins(BEAM_TOKENIZE)
    for spec in ("text", "text/", "text/*.txt", "text/c0.txt", "parquet/*"):
        listed = list_remote([f"tempfs://corpus/{spec}"])
        files, empty = list_local_inputs([str(local / spec)])
        assert sorted(listed) == [path.replace(str(local), "tempfs://corpus") for path, _ in files] + empty
        assert [size for size, _ in (listed[p] for p in sorted(listed))] == [size for _, size in files]
    with pytest.raises(ConfigError, match="beam_plugins=MODULE"):
        list_remote(["nofs://bucket/a.txt"])
    from apache_beam.options.pipeline_options import SetupOptions

    several = {"beam_option": ["beam_plugins=tests.pipelines.beam_tempfs, json"]}
    assert X.pipeline_options(several).view_as(SetupOptions).beam_plugins == ["tests.pipelines.beam_tempfs", "json"]
    with pytest.raises(ConfigError, match="beam_plugins=no_such_module: cannot import it"):
        X.import_plugins({"beam_option": ["beam_plugins=no_such_module"]})
