"""Every failure class the product concludes has eval cases: its module in evals/failure_cases/
(a scenario and recipes, found by the class's name) and its maker in the independent suite."""

from __future__ import annotations

from goodput_agent.core.failure_classes import names
from goodput_agent.evals.cluster.spec import CATEGORIES
from goodput_agent.evals.failure_cases import of_class
from goodput_agent.evals.failure_cases.plan import RECIPES_BY_CLASS
from goodput_agent.evals.generator import SCENARIOS
from goodput_agent.evals.independent.suite import FAILURES


def test_every_class_has_its_generated_and_independent_cases() -> None:
    assert names() == CATEGORIES
    for name in names():
        module = of_class(name)
        assert SCENARIOS[name] is getattr(module, f"sc_{name}"), name
        assert RECIPES_BY_CLASS[name] is module.RECIPES and module.RECIPES, name
        assert all(r.category == name for r in module.RECIPES), name
    assert list(SCENARIOS) == list(RECIPES_BY_CLASS) == list(names())
    assert set(FAILURES) == set(names()), set(FAILURES) ^ set(names())
