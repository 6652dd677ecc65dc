"""What `pip install .` ships: every subpackage, tools/prompts/policies inside the package, and
no top-level import package named `tools`."""

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
