"""The failure-class table is the one place a class is declared: everything derived from it
agrees with it, and every class has a remedy of its own."""

from typing import get_args

from goodput_agent.analysis.failure.model import FailureVerdict
from goodput_agent.analysis.failure.remedy import remedy
from goodput_agent.approval.policy import RETRY_CATEGORIES, RetryRule
from goodput_agent.core.failure_classes import FAILURE_CLASSES, NAMES, names_where
from goodput_agent.report import ALL_CATEGORIES, CATEGORIES, Category


def test_the_report_schema_names_every_class() -> None:
    assert CATEGORIES["failure"] == NAMES
    assert set(NAMES) <= set(get_args(Category))
    assert set(get_args(Category)) == set(ALL_CATEGORIES)


def test_every_class_has_its_own_remedy() -> None:
    unknown = remedy(FailureVerdict(category="unknown", summary="", confidence=0.3), None, None)
    for c in FAILURE_CLASSES:
        r = remedy(FailureVerdict(category=c.name, summary="", confidence=0.8, node="n1"),
                   "slurm", "1")
        assert r.why != unknown.why, c.name


def test_the_policy_retry_rules_follow_the_table() -> None:
    rule = RetryRule()
    assert RETRY_CATEGORIES == NAMES
    assert set(rule.require_change_for) == {c.name for c in FAILURE_CLASSES
                                            if c.retry_needs == "change"}
    assert names_where(retry_needs="exclusion") == tuple(rule.require_exclusion_for)
    assert not set(rule.require_change_for) & set(rule.require_exclusion_for)
