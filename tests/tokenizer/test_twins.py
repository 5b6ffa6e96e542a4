"""The layout of the kernels' Python twins (tokenizer/twins): none left in tokenizer/kernels, one twin module per
kernel module and named as it, every twin named ``ref_...`` (see the package docstring of :mod:`tokenizer.twins`)."""

from __future__ import annotations

import ast
import os

TOKENIZER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tokenizer")
KERNELS = os.path.join(TOKENIZER, "kernels")
TWINS = os.path.join(TOKENIZER, "twins")


def modules(directory: str) -> list[str]:
    return sorted(name[:-3] for name in os.listdir(directory) if name.endswith(".py") and name != "__init__.py")


def functions(directory: str, module: str) -> list[str]:
    """Names of the module-level functions of ``directory/module.py``."""
    with open(os.path.join(directory, f"{module}.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_twin_is_left_in_the_kernels_folder():
    assert [m for m in modules(KERNELS) if "reference" in m or "twin" in m] == []
    left = [f"{m}.{f}" for m in modules(KERNELS) for f in functions(KERNELS, m)
            if f.startswith("ref_") or "reference" in f or "twin" in f]
    assert left == []


def test_each_twin_module_is_named_as_the_kernel_module_it_mirrors():
    assert "unigram" in modules(TWINS)
    assert set(modules(TWINS)) <= set(modules(KERNELS))


def test_every_public_function_of_the_twins_is_a_ref_twin():
    named_otherwise = [f"{m}.{f}" for m in modules(TWINS) for f in functions(TWINS, m)
                       if not f.startswith(("ref_", "_"))]
    assert named_otherwise == []
