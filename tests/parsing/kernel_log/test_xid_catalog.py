"""Xid catalog: agreement with NVIDIA's published buckets, roles, and Xid 154 actions."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from goodput_agent.core.events import Role
from goodput_agent.parsing.kernel_log.xid_catalog import (
    CATALOG,
    action_for_xid154,
    lookup,
    parse_xid154,
)

SHARED = (Path(__file__).resolve().parents[3] / ".." / "shared").resolve()
XID_CSV = SHARED / "reference" / "xid-actions.csv"

# The CSV (NVSentinel's transcription of NVIDIA's catalog) spells two buckets differently from
# NVIDIA's own page (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), which the
# catalog follows: NVIDIA says CONTACT_SUPPORT where the CSV says UNEXPECTED_ERR_REPORT_ISSUE,
# and XID_154 ("follow the action in the line") where the CSV says FOLLOW_EMBEDDED_ACTION.
SAME_BUCKET = {"UNEXPECTED_ERR_REPORT_ISSUE": "CONTACT_SUPPORT",
               "FOLLOW_EMBEDDED_ACTION": "XID_154"}
# Newer than the CSV (it stops at 162): NVIDIA lists 171/172 as detail records to an Xid 48, so
# the catalog gives them Xid 48's workflow and FATAL.
NOT_IN_CSV = {171, 172}

REQUIRED = ({8, 13, 31, 32, 38, 43, 45, 48, 56, 57, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95,
             109, 110, 119, 120, 121, 122, 123, 136, 137, 140, 143, 151, 154, 155, 156, 171, 172}
            | set(range(144, 151)))
TAXONOMY = {"gpu_hardware", "gpu_oom", "host_oom", "application_error", "network_fault",
            "node_failure", "hang", "time_limit", "preempted"}


def _nvidia_rows() -> dict[int, dict[str, str]]:
    if not XID_CSV.exists():
        pytest.skip(f"{XID_CSV} not available (../shared is only in CI)")
    with XID_CSV.open(newline="") as fh:
        return {int(row["xid"]): row for row in csv.DictReader(fh)}


def test_required_codes_are_covered():
    assert set(CATALOG) >= REQUIRED
    assert all(CATALOG[c].known for c in REQUIRED)


def test_action_and_fatal_agree_with_nvidia():
    rows = _nvidia_rows()
    mismatches = []
    for code, info in sorted(CATALOG.items()):
        if code in NOT_IN_CSV:
            assert code not in rows, f"Xid {code} is in the CSV now: compare it"
            continue
        row = rows[code]
        want = SAME_BUCKET.get(row["immediate_action"], row["immediate_action"])
        if (info.action, info.fatal) != (want, row["severity"] == "FATAL"):
            mismatches.append((code, info.action, info.fatal, want, row["severity"]))
    assert mismatches == []


def test_mnemonics_agree_with_nvidia():
    rows = _nvidia_rows()
    for code, info in CATALOG.items():
        if code in rows and rows[code]["mnemonic"]:
            assert info.name in rows[code]["mnemonic"], code


def test_entries_are_consistent():
    for code, info in CATALOG.items():
        assert info.code == code and 0.0 <= info.weight <= 1.0
        assert info.recommendation.endswith(".") and info.meaning
        if info.role == Role.primary:
            assert info.category in TAXONOMY, code
        assert info.category is None or info.category in TAXONOMY


def test_application_codes():
    for code in (13, 31):
        info = lookup(code)
        assert (info.origin, info.role, info.category) == ("application", Role.primary,
                                                           "application_error")
    # 43 is the GPU stopping the faulting app's channel: primary, but weaker than the fault
    assert lookup(43).role == Role.primary and lookup(43).weight < lookup(31).weight
    assert lookup(45).role == Role.symptom and lookup(45).category is None


def test_hardware_codes():
    for code in (48, 64, 74, 79, 95, 119, 120, 140, 145):
        info = lookup(code)
        assert (info.role, info.category, info.fatal) == (Role.primary, "gpu_hardware", True)
    assert lookup(79).action == "RESTART_BM" and lookup(79).weight == 1.0
    # a pending row remap (NVIDIA: IGNORE) is context, not a failure; a failed remap is one
    assert lookup(63).role == Role.context and lookup(63).weight < lookup(64).weight / 2
    assert lookup(92).role == Role.context  # corrected errors only
    assert lookup(109).origin == "unknown" and lookup(109).weight <= 0.5


def test_unknown_code_is_generic():
    info = lookup(9999)
    assert (info.code, info.origin, info.known) == (9999, "unknown", False)
    assert "9999" in info.recommendation


@pytest.mark.parametrize(("line", "action", "label"), [
    # forms seen in real kernel logs and in gpud / NVSentinel test data
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
     "(GPU Reset Required)", "RESET_GPU", "GPU Reset Required"),
    ("NVRM: Xid (PCI:0000:02:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
     "(Node Reboot Required)", "RESTART_BM", "Node Reboot Required"),
    ("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
     "(OS Reboot)", "RESTART_BM", "OS Reboot"),
    ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
     "(PF FLR)", "RESET_GPU", "PF FLR"),
    ("NVRM: Xid (PCI:0000:9c:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 "
     "(Drain and Reset)", "DRAIN_AND_RESET", "Drain and Reset"),
    ("GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", "DRAIN_P2P", "Drain P2P"),
    ("GPU recovery action changed from (None) to (Node Reboot Required)", "RESTART_BM",
     "Node Reboot Required"),
    ("GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)", "IGNORE",
     "None"),
])
def test_xid154_action(line, action, label):
    assert action_for_xid154(line) == action
    hit = parse_xid154(line)
    assert hit is not None and hit.label == label


@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.",
    "GPU recovery action changed", "", "x" * 100_000,
])
def test_xid154_without_an_action(line):
    assert action_for_xid154(line) is None
