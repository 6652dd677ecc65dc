"""The layers of ARCHITECTURE.md hold: no module imports from a layer below its own (lazy
imports inside functions count too), and the serve layer's packages cross only where the page
says. The table is read from ARCHITECTURE.md, so the page and the rule cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVE_CROSSINGS = {("cli", "web"), ("cli", "watch"), ("web", "watch")}


def layers() -> dict[str, int]:
    text = (REPO / "ARCHITECTURE.md").read_text()
    section = text[text.index("## Layers and imports"):text.index("## Where new things go")]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "`" in ln]
    return {name: depth for depth, row in enumerate(rows)
            for name in re.findall(r"`([a-z_]+)`", row.split("|")[2])}


def part_of(module: str) -> str:
    """goodput_agent.parsing.kinds -> parsing; goodput_agent.tools.x / tools.x -> tools."""
    parts = module.split(".")
    if parts[0] == "tools":
        return "tools"
    return parts[1] if len(parts) > 1 else "goodput_agent"


def imports() -> list[tuple[str, str, str]]:
    """(file, importing part, imported part) for every goodput_agent import in the product."""
    out = []
    files = [*(REPO / "goodput_agent").rglob("*.py"), *(REPO / "tools").glob("*.py")]
    for path in files:
        rel = path.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
        here = part_of(rel)
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                name = name.replace("goodput_agent.tools", "tools", 1)
                if name.split(".")[0] in ("goodput_agent", "tools"):
                    out.append((path.relative_to(REPO).as_posix(), here, part_of(name)))
    return out


def test_every_part_of_the_package_has_a_layer() -> None:
    table = layers()
    parts = {p.stem if p.is_file() else p.name for p in (REPO / "goodput_agent").iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    parts |= {"tools"}
    assert parts - set(table) == set(), "add them to ARCHITECTURE.md's layer table"


def test_no_import_reaches_down_a_layer() -> None:
    table = layers()
    table["goodput_agent"] = 0  # the package itself: its version
    wrong = sorted({(f, a, b) for f, a, b in imports()
                    if a != b and table[b] > table[a]})
    assert wrong == []


def test_the_serve_layer_crosses_only_where_the_page_says() -> None:
    table = layers()
    serve = max(table.values())
    crossing = sorted({(f, a, b) for f, a, b in imports() if a != b
                       and table.get(a) == table.get(b) == serve
                       and (a, b) not in SERVE_CROSSINGS})
    assert crossing == []


# SQL text: a call whose first argument is a statement, on whatever object
_SQL = re.compile(r"^\s*(SELECT\s.*\bFROM\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|"
                  r"DELETE\s+FROM\b|CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+)?(TABLE|SEQUENCE|"
                  r"INDEX)\b|WITH\s+\w+\s+AS\b|BEGIN\s+TRANSACTION|COMMIT$|ROLLBACK$|"
                  r"DROP\s+TABLE|CHECKPOINT$|ATTACH\s)", re.S)


def _sql_uses(path: Path) -> list[str]:
    """SQL statements passed to a call, `.con` attributes and duckdb imports in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr == "con":
            out.append(f"{path.name}:{node.lineno}: .con")
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], (ast.Constant, ast.JoinedStr)):
            first = node.args[0]
            text = first.value if isinstance(first, ast.Constant) else "".join(
                v.value for v in first.values if isinstance(v, ast.Constant))
            if isinstance(text, str) and _SQL.match(text):
                out.append(f"{path.name}:{node.lineno}: {text.strip()[:40]}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""]
            out += [f"{path.name}:{node.lineno}: import duckdb" for n in names
                    if n.split(".")[0] == "duckdb"]
    return out


def test_only_the_ledger_package_speaks_sql_to_the_ledger() -> None:
    """The ledger's vocabulary is goodput_agent/ledger/ (typed queries, short sessions): no
    other product module holds a connection or sends it SQL."""
    files = [*(REPO / "goodput_agent").rglob("*.py"), *(REPO / "tools").glob("*.py"),
             *(REPO / "evals").rglob("*.py")]
    ledger = REPO / "goodput_agent" / "ledger"
    found = [use for f in files if ledger not in f.parents for use in _sql_uses(f)]
    assert found == [], "\n".join(found)


def test_the_map_names_every_package() -> None:
    """Every package folder under goodput_agent/ is on ARCHITECTURE.md's map (`folder/`)."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    text = text[text.index("## The map"):text.index("## Layers and imports")]
    package = REPO / "goodput_agent"
    folders = {p.parent.relative_to(package).as_posix() for p in package.rglob("__init__.py")
               if p.parent != package}
    assert sorted(f for f in folders if f"`{f}/`" not in text) == []


def test_every_path_the_page_names_exists() -> None:
    """A path ARCHITECTURE.md names (a module, a folder, a glob; from the repository or from
    goodput_agent/) is there: the page moves when the code does."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    paths = {t for t in re.findall(r"(?<![\w/.<>-])((?:[\w.-]+/)+[\w.*-]*)(?![\w<>])", text)
             if t.endswith((".py", "/", ".md", ".yaml"))}
    bases = (REPO, REPO / "goodput_agent")
    missing = sorted(t for t in paths if not any(
        any(b.glob(t)) if "*" in t else (b / t).exists() for b in bases))
    assert len(paths) > 40 and missing == []
