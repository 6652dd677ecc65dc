"""Pages of `goodput serve` while `goodput investigate` writes the same ledger: how long a
page takes on the file itself and on a snapshot, how many pages saw a snapshot, and whether
the writer was slowed. Usage: python benchmarks/serve_while_writing.py [RUNS]"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from starlette.testclient import TestClient

from goodput_agent.core.logs import configure
from goodput_agent.demo import demo_bundle_path
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.reader import read_ledger
from goodput_agent.web.app import ServeConfig, create_app


def _investigate(bundle: Path, ledger: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "goodput_agent.cli", "investigate", str(bundle),
                    "--ledger", str(ledger), "--json"], check=True, capture_output=True)
    return time.perf_counter() - t


def main(runs: int = 5) -> None:
    configure("warning", json_logs=True)
    bundle = demo_bundle_path()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger.duckdb"
        with Ledger(ledger) as led:
            inv = investigate_bundle(bundle, led).investigation_id
        client = TestClient(create_app(ServeConfig(ledger=ledger)), base_url="http://127.0.0.1")
        alone = [_investigate(bundle, ledger) for _ in range(runs)]
        direct, snap, busy, pages, seen = [], [], [], 0, 0
        for _ in range(runs):
            proc = subprocess.Popen([sys.executable, "-m", "goodput_agent.cli", "investigate",
                                     str(bundle), "--ledger", str(ledger), "--json"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t0 = time.perf_counter()
            while proc.poll() is None:
                t = time.perf_counter()
                res = client.get(f"/inv/{inv}")
                assert res.status_code == 200
                took = time.perf_counter() - t
                pages += 1
                if 'id="snapshot"' in res.text:
                    seen += 1
                    snap.append(took)
                else:
                    direct.append(took)
            proc.wait()
            busy.append(time.perf_counter() - t0)
            assert proc.returncode == 0
        direct_open = []
        for _ in range(20):
            with read_ledger(ledger) as (_, info):
                direct_open.append(info.open_ms)
        ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms" if xs else "—"  # noqa: E731
        print(f"investigate alone: median {statistics.median(alone):.2f} s; with pages read "
              f"meanwhile: median {statistics.median(busy):.2f} s")
        print(f"pages while writing: {pages}, {seen} from a snapshot; page median on the file "
              f"{ms(direct)}, on a snapshot {ms(snap)}")
        print(f"opening the file read-only: median {statistics.median(direct_open):.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
