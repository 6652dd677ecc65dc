"""A peer that refused the connection is where to look, named through a DNS lookup of its
address (issue 24, classes 5 and 7)."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger


def test_a_refused_peer_is_located_by_its_address(tmp_path: Path) -> None:
    b = tmp_path / "b"
    (b / "logs").mkdir(parents=True)
    (b / "logs" / "rank0.log").write_text(
        "gpu-01:4100:4200 [0] NCCL INFO Bootstrap : Using ib0:10.1.2.1<0>\n"
        "gpu-01:4100:4200 [0] misc/socket.cc:484 NCCL WARN Connect to 10.1.2.17<41221> "
        "failed : Connection refused\n")
    (b / "nslookup.txt").write_text("Server:  10.0.0.2\nAddress: 10.0.0.2#53\n\n"
                                    "Name:   gpu-17\nAddress: 10.1.2.17\n")
    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(b, led, pictures_dir=tmp_path / "p").root_cause
    assert (rc.category, rc.node) == ("network_fault", "gpu-17")
    assert rc.confidence <= 0.6 and "10.1.2.17 is gpu-17" in rc.summary
