"""BENCHMARKS.md is the current truth: one section per benchmark script, naming the script's one results file and
quoting that file's runs (commit, date), in under 500 lines; no measured figure in the package's docstrings or
comments (they point to BENCHMARKS.md instead). Reads files only: no Spark, no benchmark run."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import tokenize

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(REPO, "benchmarks")
RESULTS = os.path.join(BENCHMARKS, "results")
DOC = os.path.join(REPO, "BENCHMARKS.md")
MAX_LINES = 500
#: Sections of BENCHMARKS.md that are not about one script.
OTHER_SECTIONS = {"Test runs recorded by hand"}
#: Results files still in an older per-run form, with the script they belong to: encode.py's next run writes
#: encode.json and these go (issue 19).
PLOT_SUFFIXES = (".png", ".svg")


def doc_lines() -> list[str]:
    with open(DOC, encoding="utf-8") as handle:
        return handle.read().splitlines()


def sections() -> dict[str, str]:
    """``{heading: text}`` of every ``## heading`` of BENCHMARKS.md."""
    found: dict[str, list[str]] = {}
    current = None
    for line in doc_lines():
        if line.startswith("## "):
            current = line[3:].strip()
            assert current not in found, f"BENCHMARKS.md has two sections '## {current}'"
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def scripts() -> list[str]:
    """The benchmark scripts (``benchmarks/*.py`` but the shared helpers)."""
    return sorted(name for name in os.listdir(BENCHMARKS)
                  if name.endswith(".py") and name not in ("common.py", "__init__.py"))


def source(script: str) -> str:
    with open(os.path.join(BENCHMARKS, script), encoding="utf-8") as handle:
        return handle.read()


def writes_results(script: str) -> bool:
    return "write_results(" in source(script)


def results_stem(script: str) -> str:
    """The one results file a script writes: its name without ``.py``, ``_`` as ``-`` (``common.results_name``)."""
    return script[:-len(".py")].replace("_", "-")


def results_files() -> list[str]:
    return sorted(name for name in os.listdir(RESULTS) if not name.startswith("."))


def owner(name: str) -> list[str]:
    """The scripts a results file belongs to (a plot image: the script whose JSON it stands beside)."""
    stem, ext = os.path.splitext(name)
    if ext not in (".json",) + PLOT_SUFFIXES:
        return []
    return [script for script in scripts() if results_stem(script) == stem]


def runs(body) -> list[dict]:
    """The runs a results file holds: the file itself (``machine`` at its top) or each entry of ``runs``."""
    if isinstance(body, dict) and "machine" in body:
        return [body]
    if isinstance(body, dict) and isinstance(body.get("runs"), dict):
        return list(body["runs"].values())
    return []


def test_benchmarks_md_is_short():
    assert len(doc_lines()) < MAX_LINES, f"BENCHMARKS.md has {len(doc_lines())} lines: keep it under {MAX_LINES}"


def test_every_section_names_an_existing_script():
    for name in sections():
        if name in OTHER_SECTIONS:
            continue
        assert name.endswith(".py"), f"'## {name}': a section is '## SCRIPT.py' (or one of {sorted(OTHER_SECTIONS)})"
        assert name in scripts(), f"'## {name}': there is no benchmarks/{name}"


def test_every_script_that_writes_results_has_a_section():
    missing = [script for script in scripts() if writes_results(script) and script not in sections()]
    assert not missing, f"benchmarks without a section in BENCHMARKS.md: {missing}"


def test_each_results_file_belongs_to_exactly_one_script():
    for name in results_files():
        owners = owner(name)
        assert len(owners) == 1, (f"benchmarks/results/{name} belongs to {owners or 'no script'}: a script writes "
                                  "only results/SCRIPT.json (its name, '_' as '-'), plus at most a plot beside it")
        stem, ext = os.path.splitext(name)
        if ext in PLOT_SUFFIXES:
            assert os.path.isfile(os.path.join(RESULTS, stem + ".json")), f"{name} stands beside no {stem}.json"
        assert f'"{stem}"' in source(owners[0]), f"{owners[0]} does not write {stem}.json (no \"{stem}\" in it)"


def test_results_files_are_one_run_or_runs_by_key():
    for name in results_files():
        if name.endswith(".json"):
            with open(os.path.join(RESULTS, name), encoding="utf-8") as handle:
                body = json.load(handle)
            assert runs(body), f"{name}: neither one run (machine at the top) nor {{'runs': {{KEY: run}}}}"
            for run in runs(body):
                assert "machine" in run and "command" in run, f"{name}: a run without its machine or command"


def test_each_section_names_its_results_file_and_quotes_its_runs():
    text = sections()
    for script in scripts():
        if script not in text:
            continue
        own = [name for name in results_files() if owner(name) == [script]]
        expected = own or [results_stem(script) + ".json"]
        for name in expected:
            assert f"`{name}`" in text[script], f"'## {script}' does not name its results file `{name}`"
        for name in own:
            if not name.endswith(".json"):
                continue
            with open(os.path.join(RESULTS, name), encoding="utf-8") as handle:
                body = json.load(handle)
            for run in runs(body):
                machine = run["machine"]
                commit, date = machine.get("git_commit"), str(machine.get("utc", ""))[:10]
                assert not commit or commit in text[script], f"'## {script}' does not quote {name}'s commit {commit}"
                assert not date or date in text[script], f"'## {script}' does not quote {name}'s date {date}"


# A measured figure: a number with a speed, time, size or ratio unit, as a benchmark would print it. Limits and
# settings (``1 << 20``, "2 GiB", "32 MB input splits", "~2 MB shards") are whole numbers of a size unit and are
# not matched; inline code (``...``) and doctest lines are left out, so examples stay checkable by hand.
NUMBER = r"(?<![\w.])(?:~\s?|≈\s?|about\s)?\d+(?:[.,]\d+)*"
MEASURED = re.compile("|".join([
    NUMBER + r"\s?(?:[KMGT]i?B|tokens|lines|documents|bytes)/s\b",  # speed
    NUMBER + r"\s?(?:ms|µs|us|ns)\b",  # short times
    r"(?<![\w.])\d+\.\d+\s(?:CPU\s)?(?:s|seconds)\b",  # decimal seconds
    r"(?:~\s?|≈\s?|about\s)\d+(?:\.\d+)?\s(?:CPU\s)?(?:s|seconds)\b",  # approximate seconds
    r"(?<![\w.])\d+\.\d+\s?[KMGT]i?B\b",  # a size to the decimal
    NUMBER + r"\s?x\s(?:faster|slower|fewer|more|smaller|larger|sentencepiece|bytepiece|tokenizers|tiktoken)\b",
    r"(?:~\s?|≈\s?|about\s)\d+(?:\.\d+)?\s?x\b",  # an approximate ratio
    r"(?<![\w.])\d+\.\d{2,}\s(?:bytes per token|bytes/token)\b",
    r"(?<![\w.])[+-]\d+(?:\.\d+)?\s?%",  # a signed difference
]))


def code_texts(path: str):
    """``(line, text)`` of every comment and docstring of a Python file."""
    with open(path, encoding="utf-8") as handle:
        code = handle.read()
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(code)):  # docstrings (and attribute docstrings): strings standing as statements
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for offset, line in enumerate(node.value.value.splitlines()):
                yield node.lineno + offset, line


def measured_figures(path: str) -> list[str]:
    found = []
    for line_number, text in code_texts(path):
        if text.lstrip(" #").startswith((">>>", "...")):
            continue
        text = re.sub(r"``.*?``", "", text)
        for match in MEASURED.finditer(text):
            found.append(f"{os.path.relpath(path, REPO)}:{line_number}: {match.group(0)!r} in {text.strip()!r}")
    return found


@pytest.mark.parametrize("package", ["tokenizer", "pipelines", "jobs"])
def test_no_measured_figure_in_docstrings_or_comments(package):
    found = []
    for folder, _, names in os.walk(os.path.join(REPO, package)):
        for name in sorted(names):
            if name.endswith(".py"):
                found += measured_figures(os.path.join(folder, name))
    assert not found, ("measured figures in docstrings or comments: point to the benchmark instead (e.g. 'see "
                       "BENCHMARKS.md, encode.py'):\n" + "\n".join(found))


@pytest.mark.parametrize("text, flagged", [
    ("zstd 0.19 CPU s and 13.5 MB", True), ("71-77 ms, against", True), ("~2x faster than a stable one", True),
    ("about 4x", True), ("3.822 bytes per token (+18%)", True), ("a new worker costs ~1 s of imports", True),
    ("1.5x sentencepiece", True), ("43.9 MB/s", True),
    ("packed shards of ~2 MB", False), ("input splits of at most 4 MB", False), ("past 2 GiB", False),
    ("1 << 20", False), ("1%-wide buckets", False), ("order 6, min_count 8, 32k", False), ("2 s + 1", False),
    ("exactly 1.0 bytes per token", False), ("3.82 bytes/token", True),
])
def test_the_figure_heuristic(text, flagged):
    assert bool(MEASURED.search(text)) is flagged


def test_write_results_keeps_one_file_with_a_run_per_key(tmp_path, monkeypatch):
    from benchmarks import common

    monkeypatch.setattr("sys.argv", ["benchmarks/bpe.py", "--corpus", "en", "--work", "/tmp/w", "--systems", "a", "b"])
    key = common.run_key()
    assert key == "--corpus en --systems a b"
    common.write_results("bpe", {"x": 1}, str(tmp_path), key=key)
    common.write_results("bpe", {"x": 2}, str(tmp_path), key="zh")
    path = common.write_results("bpe", {"x": 3}, str(tmp_path), key="zh")
    assert os.listdir(tmp_path) == ["bpe.json"]
    with open(path, encoding="utf-8") as handle:
        body = json.load(handle)
    assert list(body) == ["runs"] and {k: v["x"] for k, v in body["runs"].items()} == {key: 1, "zh": 3}
    assert body["runs"]["zh"]["command"] == "benchmarks/bpe.py --corpus en --work /tmp/w --systems a b"
    assert "machine" in body["runs"]["zh"] and common.results_name("benchmarks/tokenize_job.py") == "tokenize-job"
