"""Smoke-test every entry point of an installed Goodput, with only its runtime dependencies.

Run by the python of a fresh virtual environment made by the README's first command
(`pip install -e .`, no test extra) or by installing the built wheel (`--wheel`, a shorter set:
demo, one investigation, a page of `serve`). Data comes from the installed package (the shipped
cases and demo), so a file missing from the wheel fails here. Everything listens on 127.0.0.1;
the servers started are stopped on exit. Exit 1 with one line per failed step."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAILED: list[str] = []


def goodput_exe() -> str:
    exe = Path(sys.executable).with_name("goodput")
    if not exe.is_file():
        sys.exit(f"smoke: no goodput entry point beside {sys.executable}")
    return str(exe)


def run(step: str, args: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,),
        stdin: str | None = None) -> str:
    """One CLI call; a failed step is recorded with the tail of what it printed."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([goodput_exe(), *args], env=env, input=stdin, capture_output=True,
                           text=True, timeout=180)
    except subprocess.TimeoutExpired:
        print(f"FAIL {step} (still running after 180 s)", flush=True)
        FAILED.append(f"{step}: still running after 180 s")
        return ""
    took = time.monotonic() - t0
    bad = p.returncode not in ok or "Traceback" in p.stderr or "internal error" in p.stderr
    print(f"{'FAIL' if bad else 'ok  '} {step} (exit {p.returncode}, {took:.1f} s)", flush=True)
    if bad:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-5:]
        FAILED.append(f"{step}: exit {p.returncode}: " + " | ".join(tail))
    return p.stdout


def check(step: str, fn: Callable[[], None]) -> None:
    try:
        fn()
        print(f"ok   {step}", flush=True)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, then the next step
        print(f"FAIL {step}: {exc!r}", flush=True)
        FAILED.append(f"{step}: {exc!r}")


def default_ledger(env: dict[str, str]) -> Path:
    """Where every command without --ledger writes: the README's default, under XDG_DATA_HOME."""
    return Path(env["XDG_DATA_HOME"]) / "goodput" / "ledger.duckdb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shipped_cases() -> dict[str, Path]:
    """The first shipped case of each kind, found in the installed package, not the checkout."""
    import goodput_agent.evals as evals

    root = Path(evals.__file__).parent
    found = {}
    for kind, folder in (("failure", "cases"), ("slowdown", "slowdown_cases"),
                         ("latency", "latency_cases")):
        cases = sorted(p.parent for p in (root / folder).glob("*/expected.json"))
        if not cases:
            FAILED.append(f"no shipped {kind} case under {root / folder}")
            continue
        found[kind] = cases[0]
    return found


def investigate(kind: str, case: Path, env: dict[str, str]) -> str | None:
    """Text and --json; the id of the JSON run (exit 3, not enough evidence, is a report too)."""
    run(f"investigate {kind} {case.name}", ["investigate", str(case)], env, ok=(0, 3))
    out = run(f"investigate {kind} {case.name} --json", ["investigate", str(case), "--json"],
              env, ok=(0, 3))
    try:
        report = json.loads(out)
        assert report["schema"].startswith("goodput.report/"), report.get("schema")
        return str(report["investigation_id"])
    except Exception as exc:  # noqa: BLE001
        FAILED.append(f"investigate {kind} --json: not a report: {exc!r}")
        return None


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def crawl(base: str, limit: int = 400) -> int:
    """GET / and every same-site link and source it leads to; each must answer 200."""
    seen, todo = set(), ["/"]
    while todo and len(seen) < limit:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        status, body = get(base + path)
        if status != 200:
            raise AssertionError(f"GET {path} answered {status}")
        for link in re.findall(r'(?:href|src)="(/[^"#?]*)', body):
            if link not in seen:
                todo.append(link)
    return len(seen)


def serve(env: dict[str, str], ledger: Path, pages: Callable[[str], None]) -> None:
    port = free_port()
    proc = subprocess.Popen([goodput_exe(), "serve", "--ledger", str(ledger), "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            if proc.poll() is not None:
                raise AssertionError(f"serve exited {proc.returncode}: "
                                     f"{proc.stderr.read()[-400:] if proc.stderr else ''}")
            try:
                get(base + "/")
                break
            except OSError:
                time.sleep(0.2)
        pages(base)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def claude_steps(env: dict[str, str], ledger: Path, demo: Path) -> None:
    """`--planner claude` and one chat turn against the scripted Messages API (a fixture)."""
    sys.path.insert(0, str(REPO))
    from tests.planner.claude_fixtures import FIXTURE_KEY, happy_script
    from tests.servers.messages_api import FixtureReply, scripted_messages_api, text

    script = [*happy_script(), FixtureReply([text("The first failure is the Xid on one node.")])]
    with scripted_messages_api(script) as api:
        claude_env = {**env, "ANTHROPIC_API_KEY": FIXTURE_KEY, "ANTHROPIC_BASE_URL": api.url}
        run("investigate --planner claude", ["investigate", str(demo), "--planner", "claude",
                                             "--ledger", str(ledger)], claude_env, ok=(0, 3))
        out = run("chat (one turn)", ["chat", str(demo), "--ledger", str(ledger)], claude_env,
                  stdin="what failed first?\n/quit\n")
        if "Xid" not in out:
            FAILED.append(f"chat: the scripted answer is not shown: {out[-300:]!r}")


def openai_steps(env: dict[str, str], ledger: Path, demo: Path) -> None:
    """`--planner openai-compatible` (streamed and whole) and one chat turn against the scripted
    chat-completions server (a fixture): what a site running vLLM, SGLang or Ollama uses."""
    sys.path.insert(0, str(REPO))
    from tests.planner.openai_fixtures import chat_script, happy_script
    from tests.servers.chat_completions import scripted_chat_completions

    with scripted_chat_completions([*happy_script(), *happy_script(), *chat_script()]) as api:
        model = ["--base-url", api.url, "--model", "fixture-model"]
        for extra in ([], ["--stream"]):
            out = run(f"investigate --planner openai-compatible {' '.join(extra)}".strip(),
                      ["investigate", str(demo), "--planner", "openai-compatible", *model,
                       *extra, "--json", "--ledger", str(ledger)], env)
            # the scripted model concluded what the failure analysis did: its verdict stands
            if "model planner: agreed" not in out:
                FAILED.append(f"openai-compatible: the model's verdict did not meet the "
                              f"analysis': {out[:300]!r}")
        out = run("chat --openai-compatible (one turn)",
                  ["chat", str(demo), "--openai-compatible", *model, "--ledger", str(ledger)],
                  env, stdin="what failed first?\n/quit\n")
        if "came first [E" not in out:
            FAILED.append(f"chat --openai-compatible: the answer is not shown: {out[-300:]!r}")


def full(env: dict[str, str], tmp: Path) -> None:
    ledger = default_ledger(env)
    run("demo", ["demo"], env, ok=(0, 3))
    ids = [i for kind, case in shipped_cases().items()
           if (i := investigate(kind, case, env))]
    run("ledger list", ["ledger", "list"], env)
    for inv in ids:
        run(f"ledger show {inv}", ["ledger", "show", inv], env)
    traces = sorted(shipped_cases()["slowdown"].rglob("*.json*"))
    traces = [t for t in traces if t.name != "expected.json"]
    if traces:
        run("trace summary", ["trace", "summary", str(traces[0])], env)
    else:
        FAILED.append("trace summary: no shipped trace")
    import goodput_agent.demo as demo_pkg

    check("the Claude steps ran", lambda: claude_steps(env, ledger,
                                                      Path(demo_pkg.__file__).parent / "bundle"))
    check("the OpenAI-compatible steps ran",
          lambda: openai_steps(env, ledger, Path(demo_pkg.__file__).parent / "bundle"))
    run("collect --help", ["collect", "--help"], env)
    run(f"account {shipped_cases()['failure'].name} --json",
        ["account", str(shipped_cases()["failure"]), "--json"], env)
    run("fleet --json (over this ledger)", ["fleet", "--json"], env)
    dead = f"http://127.0.0.1:{free_port()}"
    run("watch --prometheus (down) --once: a down source, exit 4",
        ["watch", "--prometheus", dead, "--once", "--timeout", "2"], env, ok=(4,))
    run("watch status --json (the source shows down, exit 4)", ["watch", "status", "--json"],
        env, ok=(4,))
    run("check --slurm-job without a reachable Slurm: one line, exit 2",
        ["check", "--slurm-job", "1", "--timeout", "5"], env, ok=(2,))
    run("watch --slurm --live --once without a reachable Slurm: a down source, exit 4",
        ["watch", "--slurm", "--live", "--once", "--timeout", "2"], env, ok=(4,))
    run("investigate --ray without ray installed: one line, exit 2",
        ["investigate", str(shipped_cases()["failure"]), "--ray", "auto"], env, ok=(2,))
    run("node-health (no GPU)", ["node-health", "--no-kernel-log"], env, ok=(0, 2, 3))
    run("token create --person alice", ["token", "create", "--person", "alice", "--expires",
                                        "1h"], env)
    run("token list", ["token", "list"], env)
    proposed = json.loads(run("actions --json (the failure case)",
                              ["actions", *ids[:1], "--json"], env) or "{}")
    first = next((a["action_id"] for a in proposed.get("actions", [])), None)
    if first is None:
        FAILED.append("actions --json: no proposed action to approve")
    else:
        run("approve as someone else: refused, exit 2",
            ["approve", str(first), "--as", "mallory-smoke", "--yes"], env, ok=(2,))
    run("policy init --approver (the tools this ledger's investigations proposed)",
        ["policy", "init", "--approver", "smoke-approver"], env)
    run("policy check (the one beside the ledger)", ["policy", "check"], env)
    run("actions --pending --json (the queue)", ["actions", "--pending", "--json"], env)

    def every_page(base: str) -> None:
        n = crawl(base)
        print(f"     serve: {n} pages and files answered 200", flush=True)
        if n < 2 + len(ids):
            raise AssertionError(f"only {n} pages reached from /")

    check("serve: every page linked from /", lambda: serve(env, ledger, every_page))


def shipped_prompts() -> None:
    from importlib import resources

    prompts = resources.files("goodput_agent.prompts")
    for name in ("system_claude.md", "system_chat.md"):
        assert prompts.joinpath(name).read_text(encoding="utf-8").strip(), name
    assert any(p.name.endswith(".md") for p in prompts.joinpath("tools").iterdir())


def wheel(env: dict[str, str], tmp: Path) -> None:
    ledger = default_ledger(env)
    run("demo", ["demo"], env, ok=(0, 3))
    ids = [i for kind, case in shipped_cases().items() if (i := investigate(kind, case, env))]
    run("policy check (the shipped default)", ["policy", "check"], env)
    run("tools (every shipped tool)", ["tools"], env)
    run("completion bash", ["completion", "bash"], env)
    run("fleet --json", ["fleet", "--json"], env)
    run(f"account {shipped_cases()['failure'].name}",
        ["account", str(shipped_cases()["failure"])], env)
    check("prompts ship", shipped_prompts)

    def pages(base: str) -> None:
        for path in ["/", *(f"/inv/{i}" for i in ids)]:
            status, body = get(base + path)
            assert status == 200, f"GET {path} answered {status}"
        css = re.findall(r'href="(/static/[^"]+)"', get(base + "/")[1])
        assert css and all(get(base + c)[0] == 200 for c in css), f"static files: {css}"

    check("serve: index, each investigation, static files", lambda: serve(env, ledger, pages))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--wheel", action="store_true", help="the shorter set, for the wheel")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="goodput-smoke-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "GOODPUT_"))}
    env |= {"XDG_DATA_HOME": str(tmp / "data"), "XDG_CONFIG_HOME": str(tmp / "config"),
            "NO_COLOR": "1", "COLUMNS": "120"}
    try:
        (wheel if args.wheel else full)(env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILED:
        print(f"\nsmoke: {len(FAILED)} step(s) failed:", *FAILED, sep="\n  ", file=sys.stderr)
        return 1
    print("smoke: every step passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
