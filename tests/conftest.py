from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "realworld").is_dir():
        pytest.skip("../shared/ is not beside this checkout (it is in CI)")
    return SHARED


@pytest.fixture
def demo_bundle() -> Path:
    from goodput_agent.demo import demo_bundle_path

    return demo_bundle_path()


@pytest.fixture(autouse=True, scope="session")
def _quiet_logs() -> None:
    from goodput_agent.logs import configure

    configure("warning", json_logs=True)


# the real single-host Slurm cluster (session-scoped; started only by tests that ask for it)
from tests.servers.slurm import slurm_cluster  # noqa: E402, F401
