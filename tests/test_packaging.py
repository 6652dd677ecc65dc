"""What `pip install .` ships: every subpackage, tools/prompts/policies inside the package, and
no top-level import package named `tools`."""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_subpackage_is_listed() -> None:
    listed = set(_config()["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts)
             for p in (REPO / "goodput_agent").rglob("__init__.py")}
    assert found <= listed, found - listed


def test_top_level_data_folders_ship_inside_the_package() -> None:
    mapping = _config()["package-dir"]
    assert mapping["goodput_agent.tools"] == "tools"
    assert mapping["goodput_agent.prompts"] == "prompts"
    assert mapping["goodput_agent.policies"] == "policies"
    assert "tools" not in _config()["packages"]


def test_demo_and_cases_are_package_data() -> None:
    data = _config()["package-data"]
    assert any("bundle" in g for g in data["goodput_agent.demo"])
    assert any("cases" in g for g in data["goodput_agent.evals"])
    assert (REPO / "goodput_agent" / "demo" / "bundle" / "incident.yaml").is_file()


def _names(deps: list[str]) -> set[str]:
    return {_normalized(re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0]) for d in deps}


def _declared_runtime_dependencies() -> set[str]:
    return _names(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])


# optional extras a user installs on purpose (goodput[ray]); the one module that imports each
# must turn its absence into a one-line error
OPTIONAL = {"ray": "goodput_agent/core/ray_exec.py"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports() -> dict[str, str]:
    """Every top-level module the product imports (lazy imports included) that is neither the
    standard library nor its own, with one file that imports it."""
    first_party = {"goodput_agent"}
    found: dict[str, str] = {}
    for folder in PRODUCT_SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {n.partition(".")[0] for n in names}:
                    if top not in sys.stdlib_module_names and top not in first_party:
                        found.setdefault(top, str(path.relative_to(REPO)))
    return found


# what ships in the wheel (pyproject's package-dir): the code a user's install runs
PRODUCT_SOURCES = ("goodput_agent", "tools", "prompts", "policies", "evals")


def test_every_third_party_import_of_the_product_is_a_declared_dependency() -> None:
    """`pip install .` installs only [project.dependencies]: a module imported from anything
    else (the test extra, or a dependency of a dependency) is a ModuleNotFoundError for a user."""
    declared = _declared_runtime_dependencies()
    providers = importlib.metadata.packages_distributions()
    imports = _third_party_imports()
    assert {"anthropic", "duckdb", "starlette"} <= set(imports)  # the scan sees real imports
    undeclared = {module: where for module, where in imports.items()
                  if not declared & {_normalized(d) for d in providers.get(module, [module])}
                  and module not in OPTIONAL}
    assert not undeclared, f"imported but not in [project.dependencies]: {undeclared}"


def test_optional_extras_are_declared_and_imported_behind_an_import_guard() -> None:
    """`ray` is imported by ray_exec alone (others reach it through it), each import inside a
    `try: ... except ImportError` there, and the extra is declared (and in the test extra, so
    CI runs the cluster tests)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for module, owner in OPTIONAL.items():
        assert module in _names(extras[module]) and module in _names(extras["test"])
        importers = {str(p.relative_to(REPO)) for folder in PRODUCT_SOURCES
                     for p in (REPO / folder).rglob("*.py") if _imports(p, module)}
        assert importers == {owner}
        tree = ast.parse((REPO / owner).read_text(encoding="utf-8"))
        guarded = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try)
                   and any(isinstance(h.type, ast.Name) and h.type.id == "ImportError"
                           for h in t.handlers) for n in t.body}
        top_level = [n for n in ast.walk(tree) if isinstance(n, ast.Import)
                     and any(a.name == module for a in n.names)]
        assert top_level and all(id(n) in guarded for n in top_level)


def _imports(path: Path, module: str) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.partition(".")[0] == module
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.partition(".")[0] == module:
            return True
    return False
