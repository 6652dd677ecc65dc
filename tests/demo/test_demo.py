"""The demo bundle is a generated case, reproducible from the generator."""

from pathlib import Path

from goodput_agent.evals.generator import demo_spec, render_case, tree_digest


def test_shipped_demo_matches_the_generator(tmp_path: Path, demo_bundle: Path) -> None:
    render_case(demo_spec(), tmp_path / "demo", with_expected=False)
    assert tree_digest(tmp_path / "demo") == tree_digest(demo_bundle)
