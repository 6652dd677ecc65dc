"""One module per failure class, named by the class (goodput_agent/core/failure_classes.py): how
that class plays out on the cluster (`sc_<class>`) and its recipes (`RECIPES`). The generator
and the suite plan find them by the table's names: a new class's cases are one module here (and
a maker in evals/independent/suite.py); tests/evals/test_generator.py checks every class has
both."""

from __future__ import annotations

import importlib
from types import ModuleType


def of_class(name: str) -> ModuleType:
    """The module of failure class `name`."""
    return importlib.import_module(f"{__name__}.{name}")
