"""``import tokenizer`` (and building a Tokenizer) never loads pyspark; no import cycles; runtime code never imports the
kernels' Python twins (``tokenizer.twins``)."""

from __future__ import annotations

import ast
import os
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


def heavy_modules_after(code: str, roots: tuple[str, ...] = ("numba", "pyspark", "numpy")) -> list[str]:
    """The modules of the packages ``roots`` (default Numba, pyspark and numpy) a fresh interpreter has loaded after
    running ``code``."""
    probe = code + ("\nimport sys\nprint(','.join(sorted(m for m in sys.modules\n"
                    f"    if m.split('.')[0] in {tuple(roots)!r})))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [m for m in result.stdout.strip().splitlines()[-1].split(",") if m] if result.stdout.strip() else []


def test_train_help_loads_no_numba_numpy_or_pyspark():
    code = ("import contextlib, io\nfrom jobs.train_options import build_parser\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        build_parser().parse_args(['--help'])\n    except SystemExit:\n        pass")
    assert heavy_modules_after(code) == []


def test_evaluate_help_loads_no_numba_numpy_pyspark_or_matplotlib():
    code = ("import contextlib, io, sys\nfrom jobs.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['evaluate', '--help'])\n    except SystemExit:\n        pass\n"
            "assert 'matplotlib' not in sys.modules")
    assert heavy_modules_after(code) == []


def test_tokenize_help_loads_no_numba_or_pyspark():
    code = ("import contextlib, io, sys\nfrom jobs.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['tokenize', '--help'])\n    except SystemExit:\n        pass\n"
            "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'pyspark'})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------- import graph
PACKAGES = ("tokenizer", "pipelines", "jobs")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project_modules() -> dict[str, str]:
    """``{dotted module name: path}`` of every module of the packages (a package is its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(REPO, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                    found[dotted.removesuffix(".__init__")] = path
    return found


def imported_modules(path: str, name: str, known: set[str]) -> set[str]:
    """The project modules ``path`` imports, at module level or inside functions (``from a.b import c`` counts as
    ``a.b.c`` when that is a module, else ``a.b``)."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    resolved = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_the_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_function_level_imports_included():
    modules = project_modules()
    assert "tokenizer.core" in modules and "pipelines.spark.reduce" in modules
    graph = {name: imported_modules(path, name, set(modules)) for name, path in modules.items()}
    assert "tokenizer.compiled" in graph["tokenizer.core"]
    assert import_cycles(graph) == []


def is_twin(module: str) -> bool:
    return module == "tokenizer.twins" or module.startswith("tokenizer.twins.")


def test_runtime_code_never_imports_the_twins():
    """The kernels' Python twins are for tests only: no module of tokenizer (outside tokenizer.twins), pipelines or
    jobs, and no benchmark, imports them, at module level or inside a function."""
    modules = project_modules()
    known = set(modules)
    assert "tokenizer.twins" in known and "tokenizer.twins.unigram" in known
    sources = {name: path for name, path in modules.items() if not is_twin(name)}
    benchmarks = os.path.join(REPO, "benchmarks")
    sources.update({f"benchmarks.{name[:-3]}": os.path.join(benchmarks, name)
                    for name in sorted(os.listdir(benchmarks)) if name.endswith(".py")})
    importers = {name: sorted(filter(is_twin, imported_modules(path, name, known))) for name, path in sources.items()}
    assert {name: twins for name, twins in importers.items() if twins} == {}
    # the check sees the imports the tests make
    test_file = os.path.join(REPO, "tests", "tokenizer", "test_kernels_bpe.py")
    assert "tokenizer.twins.bpe" in imported_modules(test_file, "tests.tokenizer.test_kernels_bpe", known)


def beam_importers() -> list[str]:
    """Modules outside ``pipelines.beam`` that import ``apache_beam`` or ``pipelines.beam`` at module level (the
    skeleton imports the Beam engine inside the function that opens it)."""
    found = []
    for name, path in project_modules().items():
        if name == "pipelines.beam" or name.startswith("pipelines.beam."):
            continue
        for node in ast.parse(open(path, encoding="utf-8").read()).body:
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "apache_beam" or n.startswith("pipelines.beam") for n in names):
                found.append(name)
    return found


def test_only_the_beam_engine_imports_beam():
    """``import tokenizer``, the other engines and the jobs never load Apache Beam (an optional extra)."""
    assert beam_importers() == []
    code = ("import tokenizer, jobs.train, jobs.tokenize, jobs.cli, pipelines.train.skeleton\n"
            "import pipelines.inprocess.engine, pipelines.spark.train_engine, pipelines.tokenize.run")
    loaded = heavy_modules_after(code, ("apache_beam", "pipelines"))
    assert [m for m in loaded if m.split(".")[0] == "apache_beam" or m.startswith("pipelines.beam")] == []
