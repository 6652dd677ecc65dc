"""Escape sequences planted in every artifact type a bundle holds never reach the terminal raw:
each command's stdout and stderr hold the visible escape instead. The bundles are the shipped
cases with hostile text added to their logs, job records, JSON objects, traces and metrics."""

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.evals.scorer import suite_dir
from tests.terminal_text import raw_controls

OSC_TITLE = "\x1b]0;pwned\x07"
PAYLOAD = (f"{OSC_TITLE} \x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\ \x9b31m \u202e"
           "rev [link=http://x]click[/link]")
SHOWN = "\\x1b]0;pwned"  # how the start of the payload reads on the terminal


def _plant_lines(path: Path) -> None:
    """A log: the payload at the end of every line (times and fields stay parseable)."""
    lines = path.read_text(errors="surrogateescape").splitlines()
    path.write_text("".join(f"{ln} {PAYLOAD}\n" if ln.strip() else "\n" for ln in lines),
                    errors="surrogateescape")


def _plant_sacct(path: Path) -> None:
    """`sacct -P`: the payload in the job name (the second field) of every record."""
    lines = path.read_text().splitlines()
    out = [lines[0]] + ["|".join([f[0], f[1] + PAYLOAD, *f[2:]])
                        for f in (ln.split("|") for ln in lines[1:])]
    path.write_text("\n".join(out) + "\n")


def _walk(doc: Any, edit: Callable[[dict], None]) -> None:  # noqa: ANN401 - any JSON
    if isinstance(doc, dict):
        edit(doc)
        for v in doc.values():
            _walk(v, edit)
    elif isinstance(doc, list):
        for v in doc:
            _walk(v, edit)


def _plant_json(path: Path, edit: Callable[[dict], None]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    _walk(doc, edit)
    with opener(path, "wt") as f:
        json.dump(doc, f)


def _messages(obj: dict) -> None:
    """kubectl objects and torchelastic error files: their messages and reasons."""
    for key in ("message", "reason"):
        if isinstance(obj.get(key), str):
            obj[key] += PAYLOAD


def _kernel_names(obj: dict) -> None:
    """A Kineto trace: the names of its compute kernels, prefixed without a space (the kernel
    family keeps the start of a name; NCCL kernels keep theirs, which mark communication)."""
    name = obj.get("name")
    if obj.get("cat") == "kernel" and isinstance(name, str) and not name.startswith("nccl"):
        obj["name"] = f"{OSC_TITLE}\x9b\u202e{name}"


def _plant_metrics(path: Path) -> None:
    """OpenMetrics text: the payload in a label value of every sample that has labels."""
    text = gzip.decompress(path.read_bytes()).decode()
    label = PAYLOAD.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace('model_name="', f'model_name="{label}')
    path.write_bytes(gzip.compress(text.encode()))


def _plant_engine_args(path: Path) -> None:
    """Engine arguments: the served model's name, in the last revision (a config change)."""
    doc = yaml.safe_load(path.read_text())
    args = doc["revisions"][-1]["args"]
    args[2] += PAYLOAD
    path.write_text(yaml.safe_dump(doc))


def plant(bundle: Path) -> None:
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        name = path.name
        if name in ("expected.json", "incident.yaml"):
            continue
        if name.startswith("sacct") and name.endswith(".txt"):
            _plant_sacct(path)
        elif name.endswith((".log", ".out", "dmesg.txt", "kern.log", "journal.txt")):
            _plant_lines(path)
        elif name.endswith(".pt.trace.json.gz") or name.endswith(".pt.trace.json"):
            _plant_json(path, _kernel_names)
        elif name.endswith(".json"):
            _plant_json(path, _messages)
        elif name.endswith(".om.gz"):
            _plant_metrics(path)
        elif name == "engine_args.yaml":
            _plant_engine_args(path)


def hostile_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json"))
    plant(dst)
    return dst


def run(*args: str, width: int = 300) -> tuple[str, int]:
    """stdout and stderr of one command, decoded; none of them may hold a raw control."""
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(width)})
    out = result.stdout_bytes.decode() + result.stderr_bytes.decode()
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert not raw_controls(out), (
        f"raw control characters {raw_controls(out)!r} in `goodput {' '.join(args)}`")
    return out, result.exit_code


CASES = {  # artifact types → a shipped case whose verdict rests on them, and whether the
    # planted text surfaces in its report (a report names kernel families, which keep no
    # payload; `trace summary` shows the planted kernel names, tested below)
    "kernel log, rank logs, sacct text": ("demo", None, True),
    "kubectl JSON, dmesg": ("failure", "c12-host-oom-k8s-oomkilled", True),
    "torchelastic error.json": ("failure", "c04-application-error-dataset-keyerror", True),
    "Kineto traces": ("slowdown", "s01-input-stall", False),
    "OpenMetrics labels, engine config": ("latency", "l09-kv-gpu-memory-lowered-args", True),
}


@pytest.mark.parametrize("what", list(CASES))
def test_planted_escapes_reach_no_terminal_raw(what: str, tmp_path: Path,
                                               demo_bundle: Path) -> None:
    suite, case, surfaces = CASES[what]
    src = demo_bundle if case is None else suite_dir(suite) / case
    bundle = hostile_copy(src, tmp_path / "bundle")
    ledger = str(tmp_path / "l.duckdb")
    report, code = run("investigate", str(bundle), "--ledger", ledger)
    assert code in (0, 3)
    shown, _ = run("ledger", "show", "--ledger", ledger)
    assert (SHOWN in report + shown) is surfaces  # the planted text, as visible escapes
    run("ledger", "list", "--ledger", ledger)
    run("actions", "--ledger", ledger)
    run("actions", "--pending", "--ledger", ledger)
    for json_cmd in (("investigate", str(bundle)), ("ledger", "show"), ("ledger", "list"),
                     ("actions",), ("actions", "--pending")):
        out, _ = run(*json_cmd, "--json", "--ledger", ledger)
        assert not _decoded_controls(json.loads(out)), json_cmd  # what `jq -r` would print


def _decoded_controls(doc: Any) -> list[str]:  # noqa: ANN401 - any JSON
    """Strings of a parsed JSON document that hold control characters once decoded."""
    if isinstance(doc, str):
        return [doc] if raw_controls(doc) else []
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in _decoded_controls(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _decoded_controls(v)]
    return []


def test_a_trace_summary_shows_kernel_names_escaped(tmp_path: Path) -> None:
    traces = suite_dir("slowdown") / "s01-input-stall" / "traces" / "incident"
    one = sorted(traces.glob("*.json.gz"))[0]
    planted = tmp_path / one.name
    shutil.copy(one, planted)
    _plant_json(planted, _kernel_names)
    out, code = run("trace", "summary", str(planted))
    assert code == 0 and SHOWN in out
    run("trace", "summary", str(planted), "--json")
    run("trace", "diff", str(planted), str(planted))


def test_an_error_line_quoting_a_file_is_one_visible_line(tmp_path: Path) -> None:
    bad = tmp_path / f"trace{OSC_TITLE}\nforged line.json"
    bad.write_text("not json")
    out, code = run("trace", "summary", str(bad))
    assert code == 2
    assert out.count("\n") == 1 and SHOWN in out
