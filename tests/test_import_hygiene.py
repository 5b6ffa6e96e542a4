"""``import tokenizer`` (and building a Tokenizer) never loads pyspark."""

from __future__ import annotations

import subprocess
import sys


def test_import_tokenizer_loads_no_pyspark():
    code = (
        "import sys, tokenizer\n"
        "from tokenizer import Model, Tokenizer\n"
        "Tokenizer(Model.byte_level([b'ab'], [-1.0])).encode('abab')\n"
        "bad = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"pyspark modules loaded: {result.stdout.strip()}"
