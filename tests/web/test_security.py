import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.core.errors import BadInput
from goodput_agent.web.security import (
    Signer,
    configured_token,
    is_loopback,
    require_token_for,
    token_ok,
)


def test_loopback_hosts() -> None:
    assert all(map(is_loopback, ("127.0.0.1", "::1", "localhost", "127.0.0.2")))
    assert not any(map(is_loopback, ("0.0.0.0", "10.1.2.3", "::", "example.org")))


def test_non_loopback_needs_a_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GOODPUT_SERVE_TOKEN", raising=False)
    with pytest.raises(BadInput, match="not loopback"):
        require_token_for("0.0.0.0", configured_token(None))
    require_token_for("127.0.0.1", None)
    f = tmp_path / "tok"
    f.write_text("short\n")
    with pytest.raises(BadInput, match="at least 16"):
        configured_token(f)
    f.write_text("a-long-enough-token-123\n")
    assert configured_token(f) == "a-long-enough-token-123"
    monkeypatch.setenv("GOODPUT_SERVE_TOKEN", "env-token-0123456789")
    assert configured_token(None) == "env-token-0123456789"
    assert token_ok("env-token-0123456789", "env-token-0123456789")
    assert not token_ok("env-token-0123456789", "env-token-012345678")
    assert not token_ok("env-token-0123456789", None) and token_ok(None, None)


def test_serve_refuses_to_start_beyond_loopback_without_a_token(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GOODPUT_SERVE_TOKEN", raising=False)
    res = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--ledger",
                                   str(tmp_path / "l.duckdb")])
    assert res.exit_code == 2
    assert "is not loopback" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["serve", "--ledger", str(tmp_path / "missing.duckdb")])
    assert res.exit_code == 2 and "no ledger here" in res.output


def test_signed_values() -> None:
    s = Signer.random()
    assert s.csrf_ok("sess", s.csrf("sess"))
    assert not s.csrf_ok("other", s.csrf("sess")) and not s.csrf_ok(None, s.csrf("sess"))
    token = s.shown(7, "sha256:a", "sha256:b", at=1000.0)
    assert s.read_shown(token) == (7, "sha256:a", "sha256:b", 1000.0)
    raw, mac = token.rsplit(".", 1)
    assert s.read_shown(raw + "." + "0" * len(mac)) is None
    assert Signer.random().read_shown(token) is None
    assert s.read_shown(s.shown(7, "h", "d"))[3] == pytest.approx(time.time(), abs=5)
