"""The failure-class table is the one place a class is declared: everything derived from it
agrees with it, every class has a remedy function of its own, and a class added as one row
(plus its remedy function) reaches the report, the policy, fleet accounting and verify."""

import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
import yaml

from goodput_agent.analysis.failure.model import FailureVerdict
from goodput_agent.analysis.failure.remedy import REMEDIES, missing_remedies, remedy
from goodput_agent.approval.policy import RetryRule, load_policy, parse_policy
from goodput_agent.core import failure_classes
from goodput_agent.core.failure_classes import FAILURE_CLASSES, names, names_where
from goodput_agent.report import ALL_CATEGORIES, CATEGORIES, Category

REPO = Path(__file__).resolve().parents[2]


def test_the_report_schema_names_every_class() -> None:
    assert CATEGORIES["failure"] == names()
    assert get_args(Category) == ALL_CATEGORIES
    assert ALL_CATEGORIES[:len(names())] == names()


def test_every_class_has_its_own_remedy_function() -> None:
    assert missing_remedies() == []
    assert set(REMEDIES) == set(names())  # none registered for a class the table lacks
    unknown = remedy(FailureVerdict(category="unknown", summary="", confidence=0.3), None, None)
    for c in FAILURE_CLASSES:
        r = remedy(FailureVerdict(category=c.name, summary="", confidence=0.8, node="n1"),
                   "slurm", "1")
        assert r.why != unknown.why, c.name


def test_the_policy_retry_rules_follow_the_table() -> None:
    rule = RetryRule()
    assert tuple(rule.require_change_for) == names_where(retry_needs="change")
    assert tuple(rule.require_exclusion_for) == failure_classes.node_at_fault()
    assert not set(rule.require_change_for) & set(rule.require_exclusion_for)
    assert load_policy().retry == rule  # the shipped default leaves the rule to the table


@pytest.mark.parametrize("path", sorted([*REPO.glob("policies/*.yaml"),
                                         *REPO.glob("deploy/policy*.yaml")]),
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_shipped_policy_lists_classes_the_table_would_not(path: Path) -> None:
    """A policy file that spells its retry rule out (an override) names only known classes and
    asks at least what the table asks: every class that needs a change or an exclusion."""
    policy = parse_policy(path.read_text(), str(path))
    spelled = (yaml.safe_load(path.read_text()) or {}).get("retry") or {}
    for key, needs in (("require_change_for", names_where(retry_needs="change")),
                       ("require_exclusion_for", failure_classes.node_at_fault())):
        assert set(needs) <= set(getattr(policy.retry, key)), (path, key)
        assert key not in spelled or spelled[key] == list(needs), (
            f"{path}: retry.{key} spells out {spelled[key]}; the table says {list(needs)}")


# A fresh interpreter: one row is added to the table before anything else is imported, so every
# set derived at import time is derived with it.
THROWAWAY = """
from goodput_agent.core import failure_classes as fc
fc.FAILURE_CLASSES = (*fc.FAILURE_CLASSES,
                      fc.FailureClass("bananas_fault", 0.5, 0.5, True, "exclusion"))

from goodput_agent.accounting import fleet
from goodput_agent.analysis.failure import model as failure_model
from goodput_agent.analysis.failure import remedy
from goodput_agent.approval.policy import load_policy
from goodput_agent.report import CATEGORIES, RootCause, report_json_schema
from goodput_agent.verify import failure as verify_failure

NEW = "bananas_fault"
assert CATEGORIES["failure"][-1] == NEW, CATEGORIES
assert RootCause(category=NEW, summary="s", confidence=0.5).category == NEW
enum = report_json_schema()["$defs"]["RootCause"]["properties"]["category"]["enum"]
assert NEW in enum, enum
assert NEW in load_policy().retry.require_exclusion_for
assert NEW not in load_policy().retry.require_change_for
assert NEW in fleet.NODE_CAUSES and NEW in verify_failure.NODE_FAULTS
assert failure_model.STRENGTH[NEW] == 0.5 and NEW in failure_model.ON_NODE

verdict = failure_model.FailureVerdict(category=NEW, summary="s", confidence=0.5, node="n9")
assert remedy.missing_remedies() == [NEW]
try:
    remedy.remedy(verdict, "slurm", "7")
except LookupError as exc:
    print("refused:", exc)
else:
    raise AssertionError("a class without a remedy function got a remedy")

@remedy.remedy_for(NEW)
def bananas(v, scheduler, job):
    return remedy.Remedy(retry_useful=False, why="peel first",
                         proposals=remedy.isolate_node(v.node, scheduler, job, "bananas"))

r = remedy.remedy(verdict, "slurm", "7")
assert r.why == "peel first" and r.proposals[0].args["node"] == "n9", r
assert remedy.missing_remedies() == []
print("flowed")
"""


def test_a_class_added_in_one_row_flows_everywhere() -> None:
    out = subprocess.run([sys.executable, "-c", THROWAWAY], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused: failure class 'bananas_fault' has no remedy function" in out.stdout
    assert "@remedy_for('bananas_fault')" in out.stdout
    assert out.stdout.rstrip().endswith("flowed")


def test_where_a_new_class_goes_names_what_exists() -> None:
    """ARCHITECTURE.md's recipe for a new class and the table's docstring name the files and
    the decorator that exist, and the test that checks the recipe is this one."""
    from goodput_agent.analysis.failure import remedy as remedy_module

    text = (REPO / "ARCHITECTURE.md").read_text()
    bullet = text[text.index("- **A new failure class**"):]
    bullet = bullet[:bullet.index("\n- **")]
    for doc in (bullet, failure_classes.__doc__ or ""):
        paths = re.findall(r"`?((?:goodput_agent/|tests/|analysis/|evals/)[\w/]+\.py)`?", doc)
        assert paths, doc
        for p in paths:
            assert (REPO / p).is_file() or (REPO / "goodput_agent" / p).is_file(), p
        assert "@remedy_for" in doc and callable(remedy_module.remedy_for)
    assert "tests/core/test_failure_classes.py" in bullet
