from collections.abc import Iterator
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


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """A run stopped by SIGTERM (a CI time limit, `timeout`) tears its servers down as Ctrl-C
    does; a SIGKILLed run's Slurm is cleared by the next cluster's start (servers/slurm.py)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)


@pytest.fixture(autouse=True, scope="session")
def _quiet_logs() -> None:
    from goodput_agent.core.logs import configure

    configure("warning", json_logs=True)


@pytest.fixture(autouse=True)
def _logs_as_they_were() -> Iterator[None]:
    """A test that configures the logs (bound to its captured stderr) leaves them as it found
    them: a later test would log to a closed file (test_untrusted then test_claude_client
    failed in that order, and passed alone)."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


# real clusters, session-scoped, started only by tests that ask for them: two Ray nodes on
# this host, a single-host Slurm, and a small model behind llama.cpp's OpenAI-compatible server
from tests.servers.llama_server import llama_server  # noqa: E402, F401
from tests.servers.ray_cluster import ray_cluster  # noqa: E402, F401
from tests.servers.slurm import slurm_cluster  # noqa: E402, F401
