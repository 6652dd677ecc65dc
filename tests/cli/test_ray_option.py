"""`--ray` where Ray cannot be used: one line on stderr naming the problem, exit 2, no traceback
(the cluster itself: tests/core/test_ray_exec.py)."""

import sys

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli


@pytest.mark.parametrize("args", [["investigate", "{bundle}"],
                                  ["trace", "summary", "{trace}"],
                                  ["collect", "--slurm-job", "1", "-o", "{out}"]])
def test_without_ray_installed_ray_is_one_line_and_exit_2(args, monkeypatch, demo_bundle,
                                                          tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    trace = next(demo_bundle.rglob("*.json*"), demo_bundle)
    argv = [a.format(bundle=demo_bundle, trace=trace, out=tmp_path / "b") for a in args]
    result = CliRunner().invoke(cli, [*argv, "--ray", "auto"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "goodput[ray]" in lines[0]


def test_ray_goes_with_a_bundle_not_a_live_source():
    result = CliRunner().invoke(cli, ["investigate", "--prometheus", "http://127.0.0.1:9",
                                      "--ray", "auto"])
    assert result.exit_code == 2 and "--ray goes with a bundle" in result.stderr
