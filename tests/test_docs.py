"""The commands of README.md and docs/ run as written: every ```console block, in the order of README.md then docs/
(alphabetically), from a copy of the repository's root (the sample corpus and configs beside it), as one bash
script per file that stops at the first failing command. A block that needs a cluster, Docker or a network is a plain
``` block and is not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


def documents() -> list[str]:
    docs = os.path.join(REPO, "docs")
    return ["README.md"] + sorted(os.path.join("docs", name) for name in os.listdir(docs) if name.endswith(".md"))


def console_blocks(path: str) -> list[str]:
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        return BLOCK.findall(handle.read())


def test_the_readme_has_console_blocks_for_every_command():
    text = "\n".join(console_blocks("README.md"))
    for command in ("train", "encode", "decode", "inspect", "export", "evaluate", "tokenize"):
        assert f"shardpiece {command} " in text, f"README.md runs no 'shardpiece {command}'"


@pytest.mark.spark
@pytest.mark.parametrize("path", [p for p in documents() if console_blocks(p)])
def test_console_blocks_run_as_written(path, tmp_path):
    if "--engine beam" in "\n".join(console_blocks(path)):
        pytest.importorskip("apache_beam")  # the optional extra shardpiece[beam]
    for name in ("data", "configs"):
        os.symlink(os.path.join(REPO, name), tmp_path / name)
    script = "set -euo pipefail\n" + "\n".join(console_blocks(path))
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"{path}: a command failed\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
