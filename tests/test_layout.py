"""The layout rules of the product code (goodput_agent/, tools/): no module over 400 lines, no
function over 80 lines, no import cycle among goodput_agent modules (module-level imports).

A module may be longer when its first line says why (a comment starting "# long module:");
other exceptions are named in tests/layout_allowlist.txt, each with its reason. An entry that
no longer names a breach fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("goodput_agent", "tools")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
LONG_MODULE_MARK = "# long module:"
ALLOWLIST = REPO / "tests" / "layout_allowlist.txt"


def product_files() -> list[Path]:
    return sorted(p for top in PRODUCT for p in (REPO / top).rglob("*.py")
                  if "__pycache__" not in p.parts)


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def allowlist() -> dict[str, str]:
    """<path>[::<function>] -> why, from the allow-list file (a reason is required)."""
    out: dict[str, str] = {}
    for n, raw in enumerate(ALLOWLIST.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        target, sep, why = line.partition("|")
        assert sep and why.strip(), f"{rel(ALLOWLIST)}:{n}: an entry needs '| why'"
        out[target.strip()] = why.strip()
    return out


def long_modules() -> set[str]:
    out = set()
    for path in product_files():
        text = path.read_text()
        first = text.split("\n", 1)[0]
        if text.count("\n") > MAX_MODULE_LINES and not first.startswith(LONG_MODULE_MARK):
            out.add(rel(path))
    return out


def long_functions() -> dict[str, int]:
    out: dict[str, int] = {}
    for path in product_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out[f"{rel(path)}::{node.name}"] = length
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level_imports(tree: ast.Module, type_only: bool = False
                          ) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported: top level, and inside top-level try / if
    blocks, except `if TYPE_CHECKING:` (never run; counted with type_only)."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        elif isinstance(node, ast.If):
            if type_only or "TYPE_CHECKING" not in ast.unparse(node.test):
                stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody
                         + [s for h in node.handlers for s in h.body])
    return out


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    paths = {module_name(p): p for p in product_files() if p.parts[len(REPO.parts)] ==
             "goodput_agent"}
    graph: dict[str, set[str]] = {m: set() for m in paths}
    for mod, path in paths.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _module_level_imports(ast.parse(path.read_text()), type_only):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            graph[mod] |= {t for t in targets if t in paths and t != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_over_400_lines_unless_it_says_why() -> None:
    allowed = allowlist()
    over = long_modules()
    assert sorted(over - set(allowed)) == [], \
        f"modules over {MAX_MODULE_LINES} lines: split them, or say why in their first line"


def test_no_function_over_80_lines() -> None:
    allowed = allowlist()
    over = long_functions()
    assert {k: v for k, v in over.items() if k not in allowed} == {}, \
        f"functions over {MAX_FUNCTION_LINES} lines"


def test_the_allowlist_names_only_real_breaches() -> None:
    stale = set(allowlist()) - long_modules() - set(long_functions())
    assert sorted(stale) == [], f"no longer needed in {rel(ALLOWLIST)}: remove them"


def test_no_import_cycle_among_goodput_agent_modules() -> None:
    assert cycles(import_graph()) == []


def test_no_import_cycle_even_through_type_only_imports() -> None:
    """A cycle hidden behind `if TYPE_CHECKING:` is still two modules that need each other."""
    assert cycles(import_graph(type_only=True)) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# test folders that mirror no package folder, with why
CROSS_CUTTING_TESTS = {
    "metamorphic": "properties of every parser and analysis at once (a harmless change to the "
                   "files, the same answer)",
    "servers": "the real servers the tests start on 127.0.0.1, and their own checks",
}
# top-level folders of the repository that ship inside the package
SHIPPED_TOPS = ("tools", "evals", "policies", "prompts")


def test_the_tests_mirror_the_package_layout() -> None:
    """tests/<folder>/ holds the tests of goodput_agent/<folder>/ (or of a shipped top-level
    folder); a test named after a package sits in that package's test folder."""
    tests = REPO / "tests"
    wrong = []
    for folder in sorted({p.parent for p in tests.rglob("test_*.py")} - {tests}):
        sub = folder.relative_to(tests)
        if sub.parts[0] in CROSS_CUTTING_TESTS:
            continue
        if not ((REPO / "goodput_agent" / sub).is_dir()
                or (sub.parts[0] in SHIPPED_TOPS and (REPO / sub).is_dir())):
            wrong.append(f"{rel(folder)}/: no such package folder")
    for test in sorted(tests.rglob("test_*.py")):
        package = REPO / "goodput_agent" / test.parent.relative_to(tests) / \
            test.stem.removeprefix("test_")
        if (package / "__init__.py").is_file():
            wrong.append(f"{rel(test)}: belongs in {rel(test.parent)}/{package.name}/")
    assert wrong == []
