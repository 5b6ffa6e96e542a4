"""The on-disk kernel cache never serves machine code compiled from older sources of another kernel file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

import tokenizer.kernels as kernels
from tokenizer.kernels import SOURCES_FINGERPRINT, sources_fingerprint

pytestmark = pytest.mark.skipif(os.environ.get("SHARDPIECE_DISABLE_JIT") == "1", reason="no compiled kernels")


def test_the_fingerprint_follows_every_python_source_of_the_directory(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    first = sources_fingerprint(str(tmp_path))
    (tmp_path / "notes.txt").write_text("not a source")
    assert sources_fingerprint(str(tmp_path)) == first
    (tmp_path / "b.py").write_text("y = 3\n")
    assert sources_fingerprint(str(tmp_path)) != first
    (tmp_path / "b.py").write_text("y = 2\n")
    assert sources_fingerprint(str(tmp_path)) == first
    (tmp_path / "c.py").write_text("")
    assert sources_fingerprint(str(tmp_path)) != first


def test_the_package_kernels_are_stamped_with_the_fingerprint():
    from tokenizer.kernels.batch import viterbi_entry
    from tokenizer.kernels.unigram import viterbi_bytes_into

    assert SOURCES_FINGERPRINT == sources_fingerprint(kernels.KERNELS_DIRECTORY)
    for dispatcher in (viterbi_entry, viterbi_bytes_into):
        locator = dispatcher._cache._impl.locator
        assert locator._shardpiece_kernels
        assert locator.get_source_stamp()[1] == SOURCES_FINGERPRINT


def test_a_change_to_a_twin_leaves_the_fingerprint_alone(tmp_path):
    """The kernels' Python twins live in ``tokenizer/twins``, beside ``tokenizer/kernels``: the fingerprint hashes the
    kernels' own files only, so editing or adding a twin recompiles nothing (editing a kernel still does)."""
    twins_directory = os.path.join(os.path.dirname(kernels.KERNELS_DIRECTORY), "twins")
    assert os.path.isfile(os.path.join(twins_directory, "__init__.py"))
    assert os.path.commonpath([twins_directory, kernels.KERNELS_DIRECTORY]) != kernels.KERNELS_DIRECTORY
    copy = tmp_path / "tokenizer"
    no_bytecode = shutil.ignore_patterns("__pycache__")
    shutil.copytree(kernels.KERNELS_DIRECTORY, copy / "kernels", ignore=no_bytecode)
    shutil.copytree(twins_directory, copy / "twins", ignore=no_bytecode)
    assert sources_fingerprint(str(copy / "kernels")) == SOURCES_FINGERPRINT
    with open(copy / "twins" / "unigram.py", "a") as handle:
        handle.write("\n# an edited twin\n")
    (copy / "twins" / "new_twin.py").write_text("def ref_new():\n    return 1\n")
    assert sources_fingerprint(str(copy / "kernels")) == SOURCES_FINGERPRINT
    with open(copy / "kernels" / "unigram.py", "a") as handle:
        handle.write("\n# an edited kernel file\n")
    assert sources_fingerprint(str(copy / "kernels")) != SOURCES_FINGERPRINT


CALLER = """
from tokenizer.kernels import kernel
from tokenizer.kernels.callee import value


@kernel
def twice_value():
    return 2 * value()
"""

RUN = """
from tokenizer.kernels.caller import twice_value
print(twice_value(), twice_value.stats.cache_hits.most_common(1) != [])
"""


def test_a_change_to_a_called_kernel_file_recompiles_its_callers(tmp_path):
    """``caller.py`` is unchanged while ``callee.py`` changes: Numba alone would load ``twice_value`` from its cache,
    with the old ``value`` compiled in."""
    package = tmp_path / "tokenizer"
    (package / "kernels").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(kernels.__file__, package / "kernels" / "__init__.py")
    (package / "kernels" / "caller.py").write_text(CALLER)

    def run(callee_value: int) -> tuple[int, bool]:
        (package / "kernels" / "callee.py").write_text(
            f"from tokenizer.kernels import kernel\n\n\n@kernel\ndef value():\n    return {callee_value}\n")
        environment = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
        environment["PYTHONPATH"] = str(tmp_path)
        done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=environment,
                              cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        result, cache_hit = done.stdout.split()
        return int(result), cache_hit == "True"

    assert run(1) == (2, False)      # compiled and cached
    assert run(1) == (2, True)       # loaded from the cache
    assert run(5) == (10, False)     # callee.py changed: recompiled, not the cached 2
    assert run(5) == (10, True)
