"""The bundled demo incident: one generated case (evals generator, demo_spec), shipped as data."""

from importlib import resources
from pathlib import Path


def demo_bundle_path() -> Path:
    return Path(str(resources.files("goodput_agent.demo").joinpath("bundle")))
