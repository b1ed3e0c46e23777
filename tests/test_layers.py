"""The layout rules of CONTRIBUTING.rst, enforced on the source tree.

Every module under ``kernelmaps/`` (``.py``, ``.pyx``, ``.pxd``) belongs to
a layer and imports only from layers below its own, or from its own unit.
The layers are read from the one table of them, in CONTRIBUTING.rst
("Layers"): a module that table does not name fails here, so the table and
the tree cannot drift apart. A module of layer 3 or 5 reaches a public unit
only through its face (the package ``__init__``, or the module itself),
never its private modules; no module imports another unit's private name
(``_x``); there is no import cycle. The tests parse the source tree next to
this directory (the package under test is the installed one; this reads
files only).
"""

import ast
import functools
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernelmaps"

CONTRIBUTING = ROOT / "CONTRIBUTING.rst"


def layer_table(path=CONTRIBUTING):
    """{layer: [module names]} from the table of CONTRIBUTING.rst whose
    header is "layer  modules  may import": the names in double backquotes
    of its "modules" column, rows without a layer number continuing the
    row above."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.split()[:2] == ["layer", "modules"])
    rule = lines[start - 1]
    columns = [m.span() for m in re.finditer(r"=+", rule)]
    table, layer = {}, None
    for line in lines[start + 2:]:
        if line.startswith("="):
            break
        first = line[:columns[0][1]].strip()
        if first:
            layer = int(first)
        cell = line[columns[1][0]:columns[1][1]]
        table.setdefault(layer, []).extend(re.findall(r"``([\w./]+)``", cell))
    return table


def _modules(names):
    return {"kernelmaps" if name == "kernelmaps/__init__.py"
            else "kernelmaps." + name for name in names}


_TABLE = layer_table() if CONTRIBUTING.exists() else {}
ENGINE = "kernelmaps._engine"
BASE = _modules(_TABLE.get(1, []))
PUBLIC = _modules(_TABLE.get(2, []))
COMPOSITE = _modules(_TABLE.get(3, []))
TOP = "kernelmaps"
USERS = _modules(_TABLE.get(5, []))

pytestmark = pytest.mark.skipif(
    not (SOURCE / "__init__.py").exists() or not CONTRIBUTING.exists(),
    reason="no source tree next to the tests"
)


# -- reading the tree -----------------------------------------------------


def module_name(path, root):
    """Dotted name of a source file: ``kernelmaps/sets/__init__.py`` is
    ``kernelmaps.sets``; ``_version.py.in`` (configured by meson) is
    ``kernelmaps._version``."""
    parts = list(path.relative_to(root.parent).parts)
    stem = parts[-1]
    for suffix in (".py.in", ".py", ".pyx", ".pxd"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    parts[-1] = stem
    if stem == "__init__":
        parts.pop()
    return ".".join(parts)


def read_tree(root=SOURCE):
    """{module: (source, is_package, kind)} for every module under `root`;
    a ``.pyx`` and its ``.pxd`` are one module (their sources joined)."""
    modules = {}
    for path in sorted(root.rglob("*")):
        name = path.name
        if not name.endswith((".py", ".pyx", ".pxd", ".py.in")):
            continue
        kind = "cython" if name.endswith((".pyx", ".pxd")) else "python"
        module = module_name(path, root)
        text = path.read_text()
        if module in modules:  # a .pyx and its .pxd
            text = modules[module][0] + "\n" + text
        modules[module] = (text, name.startswith("__init__."), kind)
    return modules


_CYTHON_IMPORT = re.compile(
    r"^\s*(?:from\s+(?P<base>\.*[\w.]*)\s+c?import\s+(?P<names>[^#]*)"
    r"|c?import\s+(?P<plain>[\w.]+))", re.MULTILINE)


@functools.cache
def raw_imports(source, kind):
    """(level, module, names) of every import statement, at any depth (a
    tuple; cached: every test parses the same sources, one changed)."""
    return tuple(_imports(source, kind))


def _imports(source, kind):
    if kind == "python":
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield 0, alias.name, ()
            elif isinstance(node, ast.ImportFrom):
                yield node.level, node.module or "", tuple(a.name for a in node.names)
        return
    for match in _CYTHON_IMPORT.finditer(source):
        if match["plain"]:
            yield 0, match["plain"], ()
            continue
        base = match["base"]
        level = len(base) - len(base.lstrip("."))
        names = tuple(re.findall(r"\w+", match["names"]))
        yield level, base.lstrip("."), names


def resolve(module, is_package, level, target, names, known):
    """The kernelmaps modules an import statement of `module` reaches."""
    if level:
        parts = module.split(".")
        if not is_package:
            parts.pop()
        parts = parts[: len(parts) - (level - 1)]
        target = ".".join(parts + ([target] if target else []))
    if target != "kernelmaps" and not target.startswith("kernelmaps."):
        return set()
    submodules = {f"{target}.{n}" for n in names if f"{target}.{n}" in known}
    rest = [n for n in names if f"{target}.{n}" not in known]
    return submodules | ({target} if rest or not names else set())


def import_graph(modules):
    """{module: set of the kernelmaps modules it imports}."""
    graph = {}
    for module, (source, is_package, kind) in modules.items():
        edges = set()
        for level, target, names in raw_imports(source, kind):
            edges |= resolve(module, is_package, level, target, names, modules)
        edges.discard(module)  # a .pyx cimporting its own .pxd
        graph[module] = edges
    return graph


# -- the rule -------------------------------------------------------------


def unit(module):
    """(layer, unit) of a module; None for a module no rule names."""
    if module == ENGINE or module.startswith(ENGINE + "."):
        return 0, ENGINE
    if module in BASE:
        return 1, module
    for name in PUBLIC:
        if module == name or module.startswith(name + "."):
            return 2, name
    for name in COMPOSITE:
        if module == name or module.startswith(name + "."):
            return 3, name
    if module == TOP:
        return 4, TOP
    if module in USERS:
        return 5, module
    return None


def violations(modules):
    """Every break of the layer rule, and every import cycle, as text."""
    graph = import_graph(modules)
    found = []
    for module in sorted(graph):
        where = unit(module)
        if where is None:
            found.append(f"{module}: in no layer (add it to a layer of "
                         f"CONTRIBUTING.rst and of tests/test_layers.py)")
            continue
        for target in sorted(graph[module]):
            if target not in modules:
                found.append(f"{module} imports {target}, which does not exist")
                continue
            there = unit(target)
            if there is None:
                continue  # reported as a module of its own
            (layer, own), (other_layer, other) = where, there
            if other_layer > layer:
                found.append(f"{module} imports {target}: upward (layer "
                             f"{layer} -> {other_layer})")
            elif other_layer == layer and other != own and layer != 1:
                found.append(f"{module} imports {target}: sideways, from unit "
                             f"{own} into unit {other}")
            elif other_layer == 2 and layer in (3, 5) and target != other:
                found.append(f"{module} imports {target}: a private module of "
                             f"{other}; use its public names")
    found += private_names(modules)
    found += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return found


def private_names(modules):
    """Every private name (``_x``) a module imports from another unit: a
    unit's private names are its own (shared code moves down, or becomes
    a public name of its unit's face)."""
    found = []
    for module, (source, is_package, kind) in sorted(modules.items()):
        where = unit(module)
        for level, target, names in raw_imports(source, kind):
            for name in names:
                if not name.startswith("_") or name.startswith("__"):
                    continue
                reached = resolve(module, is_package, level, target, [name],
                                  modules)
                for other in reached:
                    there = unit(other)
                    # a submodule reached by its name is an import of it
                    if other.endswith("." + name) or there is None or (
                            where is not None and there[1] == where[1]):
                        continue
                    found.append(f"{module} imports {name} from {other}: a "
                                 f"private name of unit {there[1]}")
    return found


def cycles(graph):
    """One cycle through each strongly connected component of more than one
    module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append([*sorted(component), min(component)])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# -- the tests ------------------------------------------------------------


@pytest.fixture(scope="module")
def tree():
    return read_tree()


def test_the_table_names_each_layer():
    table = layer_table()
    assert _modules(table[0]) == {ENGINE} and _modules(table[4]) == {TOP}
    assert "kernelmaps._bags" in BASE and "kernelmaps.sets" in PUBLIC
    assert "kernelmaps._two_sample" in COMPOSITE and "kernelmaps.sklearn" in USERS


def test_layers_hold(tree):
    assert violations(tree) == []


def test_every_layer_is_populated(tree):
    """The rule names real modules: a renamed unit must be renamed here."""
    names = set(tree)
    assert {ENGINE, TOP, *USERS, *PUBLIC, *COMPOSITE, *BASE} <= names
    assert {unit(m)[0] for m in names if unit(m)} == {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize("module, source, expected", [
    # sideways between public units
    ("kernelmaps.histograms._extra", "from ..sets._mean_map import mmd\n",
     "sideways, from unit kernelmaps.histograms into unit kernelmaps.sets"),
    ("kernelmaps.histograms._extra", "from kernelmaps.sets import mmd\n",
     "sideways"),
    # upward: the engine may not import the layers above it
    ("kernelmaps._engine.extra", "from .._validation import check_sets\n",
     "upward (layer 0 -> 1)"),
    ("kernelmaps._engine._extra", "from kernelmaps.sets cimport x\n",
     "upward (layer 0 -> 2)"),
    ("kernelmaps._bags_extra", "x = 1\n", "in no layer"),
    ("kernelmaps.sklearn", "from .sets._divergence import _renyi\n",
     "a private module of kernelmaps.sets"),
    ("kernelmaps.sets._extra", "import kernelmaps.nothing\n", "does not exist"),
    # a unit over several public units: their faces only, and never upward
    ("kernelmaps._nystroem", "from .sets._mean_map import mmd\n",
     "a private module of kernelmaps.sets"),
    ("kernelmaps._nystroem", "from .sklearn import SetKernel\n",
     "upward (layer 3 -> 5)"),
    ("kernelmaps.sets._extra", "from .._nystroem import NystroemMap\n",
     "upward (layer 2 -> 3)"),
    ("kernelmaps._nystroem", "from ._two_sample import mmd_test\n",
     "sideways, from unit kernelmaps._nystroem into unit "
     "kernelmaps._two_sample"),
    # a private name of another unit, even through its face
    ("kernelmaps._two_sample._extra", "from ..sets import _renyi\n",
     "imports _renyi from kernelmaps.sets: a private name of unit "
     "kernelmaps.sets"),
    ("kernelmaps.histograms._extra", "from .._engine.layout import _X\n",
     "a private name of unit kernelmaps._engine"),
])
def test_a_break_of_the_rule_is_found(tree, module, source, expected):
    kind = "cython" if "cimport" in source else "python"
    broken = dict(tree)
    old = broken.get(module, ("", False, kind))
    broken[module] = (old[0] + "\n" + source, old[1], kind)
    found = violations(broken)
    assert any(expected in v and v.startswith(module) for v in found), found


def test_an_import_cycle_is_found(tree):
    broken = dict(tree)
    source, package, kind = broken["kernelmaps._probes"]
    broken["kernelmaps._probes"] = (source + "\nfrom ._bags import Bags\n",
                                    package, kind)
    found = violations(broken)
    cycles = [f for f in found if f.startswith("import cycle: kernelmaps._bags -> ")]
    assert cycles and all("kernelmaps._probes -> kernelmaps._bags" in f
                          for f in cycles), found


def test_relative_imports_resolve():
    known = {"kernelmaps.a", "kernelmaps.a.b", "kernelmaps.a.c", "kernelmaps.d"}
    assert resolve("kernelmaps.a.b", False, 1, "", ["c", "x"], known) == {
        "kernelmaps.a.c", "kernelmaps.a"}
    assert resolve("kernelmaps.a", True, 1, "b", ["f"], known) == {"kernelmaps.a.b"}
    assert resolve("kernelmaps.a.b", False, 2, "d", ["g"], known) == {"kernelmaps.d"}
    assert resolve("kernelmaps.a.b", False, 0, "numpy", ["h"], known) == set()


def test_no_test_module_imports_another():
    here = Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        for level, target, names in raw_imports(path.read_text(), "python"):
            imported = [target] if target else names
            if level or target.startswith("tests"):
                own = [n.rsplit(".", 1)[-1] for n in imported]
                assert not any(n.startswith(("test_", "conftest")) for n in own), (
                    f"{path.name} imports {imported}: share code through "
                    f"tests/_helpers.py"
                )


def test_every_source_module_is_installed(tree):
    """A module missing from meson.build is missing from the installed
    package (the tests would then pass on the source tree only)."""
    for module, (_, _, kind) in tree.items():
        parts = module.split(".")[1:]
        pxd_only = kind == "cython" and not (
            SOURCE.joinpath(*parts).with_suffix(".pyx").exists())
        if not pxd_only:
            assert importlib.util.find_spec(module) is not None, module


_FILE_NAME = re.compile(r"\b([\w.]+\.(?:pyx|pxd|h|py))\b")


def test_comments_name_files_that_exist():
    """File names in the comments and docstrings of the package, the build
    and the benchmarks exist in the repository (no stale references)."""
    existing = {p.name for p in ROOT.rglob("*") if ".git" not in p.parts}
    existing |= {"_version.py"}  # configured by meson from _version.py.in
    texts = [*SOURCE.rglob("*.py"), *SOURCE.rglob("*.py[xd]"), *SOURCE.rglob("*.h"),
             *SOURCE.rglob("meson.build"), *(ROOT / "benchmarks").rglob("*.py")]
    stale = set()
    for path in texts:
        text = path.read_text()
        for name in _FILE_NAME.findall(text):
            if name not in existing and f"<{name}>" not in text:  # system header
                stale.add(f"{path.relative_to(ROOT)}: {name}")
    assert not stale, sorted(stale)
