"""What `goodput serve` is told: the ledger, where it listens, the token, the policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from goodput_agent.approval.policy import Policy, load_policy
from goodput_agent.web import security
from goodput_agent.web.security import Signer


@dataclass(slots=True)
class ServeConfig:
    ledger: Path
    host: str = "127.0.0.1"
    token: str | None = None
    policy_path: Path | None = None
    signer: Signer = field(default_factory=Signer.random)
    cwd: Path = field(default_factory=Path.cwd)

    def policy(self) -> Policy:
        return load_policy(self.policy_path)

    def allowed_hosts(self) -> list[str]:
        """Host headers answered: on loopback only loopback names, so that a web page whose
        name was rebound to 127.0.0.1 (DNS rebinding) gets nothing; beyond loopback, any
        (the access token guards every request there)."""
        if security.is_loopback(self.host):
            return ["127.0.0.1", "localhost", "::1", "[::1]"]
        return ["*"]
