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


def _declared_runtime_dependencies() -> set[str]:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_normalized(re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0]) for d in deps}


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
                  if not declared & {_normalized(d) for d in providers.get(module, [module])}}
    assert not undeclared, f"imported but not in [project.dependencies]: {undeclared}"
