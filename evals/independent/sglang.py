"""Issue 24, class 9: serving incidents of SGLang, known only from its scheduler's log lines
(`Decode batch, #running-req: …, token usage: …, gen throughput (token/s): …, #queue-req: …`,
`Prefill batch, …`, `Decode out of memory happened. #retracted_reqs: …`) and from
`sglang.bench_serving` result blocks."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import yaml

from .case import Case, Expected

QUESTIONS = ("why did latency of our sglang server go up?", "TTFT of the {m} endpoint on "
             "sglang got much worse this afternoon, why?", "users report slow responses from "
             "{m} (sglang), root cause?")
MODELS = ("Qwen2.5-72B-Instruct", "Llama-3.3-70B-Instruct", "DeepSeek-V3")


def _stamp(t: datetime, tp: bool) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S}{' TP0' if tp else ''}]"


def _decode(t: datetime, new: bool, running: int, tokens: int, usage: float, gen: float,
            queue: int) -> str:
    sep, graph = (",", " cuda graph: True,") if new else (".", "")
    return (f"{_stamp(t, True)} Decode batch{sep} #running-req: {running}, #token: {tokens}, "
            f"token usage: {usage:.2f},{graph} gen throughput (token/s): {gen:.2f}, "
            f"#queue-req: {queue}{',' if new else ''}")


def _prefill(t: datetime, new: bool, seqs: int, tokens: int, usage: float, running: int,
             queue: int) -> str:
    sep = "," if new else "."
    return (f"{_stamp(t, True)} Prefill batch{sep} #new-seq: {seqs}, #new-token: {tokens}, "
            f"#cached-token: {tokens // 7}, token usage: {usage:.2f}, #running-req: {running}, "
            f"#queue-req: {queue}{',' if new else ''}")


def _state(cause: str, after: bool, k: int, rng: random.Random) -> dict:
    """One scheduler interval's numbers, before or after the planted change."""
    base = {"running": rng.randint(30, 48), "usage": rng.uniform(0.35, 0.55),
            "gen": rng.uniform(1900, 2300), "queue": 0, "burst": 0}
    if not after:
        return base
    if cause == "kv_cache_pressure":
        return base | {"running": rng.randint(60, 72), "usage": min(1.0, rng.uniform(0.97, 1.02)),
                       "gen": rng.uniform(1500, 1800), "queue": rng.randint(18, 70)}
    if cause == "stuck":
        return base | {"running": 64, "usage": 0.61, "gen": rng.uniform(0.0, 0.4),
                       "queue": 20 + k // 3}
    burst = k % 6 == 0
    return base | {"gen": rng.uniform(300, 450) if burst else base["gen"],
                   "burst": rng.randint(3, 8) if burst else 0}


def _server_log(rng: random.Random, cause: str, start: datetime, minutes: int, change: int,
                new: bool) -> str:
    out = [f"[{start:%Y-%m-%d %H:%M:%S}] server_args=ServerArgs(model_path='/models/x', tp_size="
           f"{rng.choice((4, 8))}, mem_fraction_static=0.88, max_running_requests=None, "
           "chunked_prefill_size=8192, schedule_policy='fcfs')",
           f"[{start:%Y-%m-%d %H:%M:%S} TP0] max_total_num_tokens=412160, chunked_prefill_size="
           "8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768"]
    stuck_tokens = 0
    for k in range(minutes * 4):
        t = start + timedelta(seconds=15 * k)
        s = _state(cause, k >= change * 4, k, rng)
        tokens = int(412160 * s["usage"])
        if cause == "stuck" and k >= change * 4:
            stuck_tokens = stuck_tokens or tokens
            tokens = stuck_tokens
        for _ in range(s["burst"]):
            out.append(_prefill(t, new, 1, rng.randint(7000, 8192), s["usage"], s["running"], 0))
        if s["burst"] == 0 and (cause != "stuck" or k < change * 4):
            out.append(_prefill(t, new, rng.randint(1, 3), rng.randint(600, 2400), s["usage"],
                                s["running"], s["queue"]))
        out.append(_decode(t + timedelta(seconds=7), new, s["running"], tokens, s["usage"],
                           s["gen"], s["queue"]))
        if cause == "kv_cache_pressure" and k >= change * 4 and k % 3 == 0:
            old = rng.uniform(0.3, 0.5)
            out.append(f"{_stamp(t + timedelta(seconds=9), True)} Decode out of memory happened. "
                       f"#retracted_reqs: {rng.randint(1, 4)}, #new_token_ratio: {old:.4f} -> "
                       f"{min(1.0, old + 0.2):.4f}")
        if cause != "stuck" or k < change * 4:
            out.append(f"[{t + timedelta(seconds=11):%Y-%m-%d %H:%M:%S}] INFO:     10.12.0."
                       f"{rng.randint(2, 250)}:{rng.randint(30000, 60000)} - \"POST "
                       "/v1/chat/completions HTTP/1.1\" 200 OK")
    return "\n".join(out) + "\n"


def sglang_log(rng: random.Random, case_id: str, variant: int) -> Case:
    cause = ("kv_cache_pressure", "stuck", "prefill")[variant % 3]
    model = rng.choice(MODELS)
    start = datetime(2026, rng.randint(1, 11), rng.randint(1, 27), rng.randint(6, 14),
                     tzinfo=UTC)
    minutes = rng.choice((120, 150))
    change = rng.randint(minutes // 3, minutes // 2)
    files = {rng.choice(("logs/sglang_server.log", "sglang.log")):
             _server_log(rng, cause, start, minutes, change, new=variant % 2 == 0),
             "incident.yaml": yaml.safe_dump({"question": rng.choice(QUESTIONS).format(m=model),
                                              "service": model})}
    change_at = (start + timedelta(minutes=change)).isoformat().replace("+00:00", "Z")
    if cause == "kv_cache_pressure":
        exp = Expected(case_id=case_id, kind="latency", category=cause, change_at=change_at,
                       notes="from the change on, token usage sits at 0.97-1.00, the scheduler "
                             "retracts requests (Decode out of memory happened) and #queue-req "
                             "grows: the KV cache is the limit")
    elif cause == "stuck":
        exp = Expected(case_id=case_id, kind="latency", category="unknown", max_confidence=0.5,
                       notes="from the change on, #running-req stays at 64 with #token frozen "
                             "and gen throughput near 0 tok/s for an hour while #queue-req "
                             "climbs and no request completes: a stuck engine, not load; no "
                             "latency class of the taxonomy fits, so unknown (never queueing)")
    else:
        exp = Expected(case_id=case_id, kind="latency", category="prompt_length",
                       change_at=change_at, max_confidence=0.65,
                       notes="from the change on, bursts of long prompts (several 7-8k token "
                             "prefill batches) collapse decode throughput from ~2000 to ~400 "
                             "tok/s with nothing queued and the cache half empty: prefill "
                             "interference from long prompts, not load")
    return Case(expected=exp, files=files)


def _bench_block(rng: random.Random, n: int, input_len: int, ttft: float, itl: float) -> str:
    out_tok = n * rng.randint(180, 260)
    dur = n / rng.uniform(3.8, 4.1)
    rows = [("Backend:", "sglang"), ("Traffic request rate:", "4.0"),
            ("Max request concurrency:", "not set"), ("Successful requests:", str(n)),
            ("Benchmark duration (s):", f"{dur:.2f}"), ("Total input tokens:", str(n * input_len)),
            ("Total generated tokens:", str(out_tok)),
            ("Total generated tokens (retokenized):", str(out_tok - 17)),
            ("Request throughput (req/s):", f"{n / dur:.2f}"),
            ("Input token throughput (tok/s):", f"{n * input_len / dur:.2f}"),
            ("Output token throughput (tok/s):", f"{out_tok / dur:.2f}"),
            ("Total token throughput (tok/s):", f"{(n * input_len + out_tok) / dur:.2f}"),
            ("Concurrency:", f"{rng.uniform(8, 14):.2f}"),
            "----------------End-to-End Latency----------------",
            ("Mean E2E Latency (ms):", f"{ttft + itl * 220:.2f}"),
            ("Median E2E Latency (ms):", f"{ttft * 0.9 + itl * 200:.2f}"),
            "---------------Time to First Token----------------",
            ("Mean TTFT (ms):", f"{ttft:.2f}"), ("Median TTFT (ms):", f"{ttft * 0.88:.2f}"),
            ("P99 TTFT (ms):", f"{ttft * 2.7:.2f}"),
            "---------------Inter-Token Latency----------------",
            ("Mean ITL (ms):", f"{itl:.2f}"), ("Median ITL (ms):", f"{itl * 0.97:.2f}"),
            ("P95 ITL (ms):", f"{itl * 1.4:.2f}"), ("P99 ITL (ms):", f"{itl * 2.2:.2f}"),
            ("Max ITL (ms):", f"{itl * 9.1:.2f}")]
    lines = ["============ Serving Benchmark Result ============"]
    lines += [r if isinstance(r, str) else f"{r[0]:<41}{r[1]:<10}" for r in rows]
    lines.append("==================================================")
    return "\n".join(lines) + "\n"


def bench_serving(rng: random.Random, case_id: str, variant: int) -> Case:
    n = rng.choice((500, 1000, 1200))
    ilen = rng.randint(900, 1400)
    itl = rng.uniform(18, 26)
    q = "TTFT looks high on our sglang deployment, why? (bench_serving output attached)"
    if variant % 2 == 0:
        files = {"bench_serving.txt": _bench_block(rng, n, ilen, rng.uniform(900, 1400), itl),
                 "incident.yaml": yaml.safe_dump({"question": q})}
        return Case(expected=Expected(
            case_id=case_id, kind="latency", category="unknown", max_confidence=0.5,
            notes="one bench_serving result block, no earlier run, no server log or metrics: "
                  "a latency question with nothing to compare against"), files=files)
    before = _bench_block(rng, n, ilen, rng.uniform(60, 90), itl)
    after = _bench_block(rng, n, ilen * 3, rng.uniform(260, 360), itl * rng.uniform(0.97, 1.05))
    files = {"bench/before.txt": before, "bench/after.txt": after,
             "incident.yaml": yaml.safe_dump({"question": "TTFT tripled between these two "
                                              "bench_serving runs, why?"})}
    return Case(expected=Expected(
        case_id=case_id, kind="latency", category="prompt_length", max_confidence=0.65,
        notes="two bench_serving blocks at the same request rate: total input tokens per request "
              "x3, TTFT x3-4, ITL unchanged, output the same: longer prompts"), files=files)
