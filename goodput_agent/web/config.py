"""What `goodput serve` is told: the ledger, where it listens, the token, the policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from goodput_agent.approval.policy import Policy, load_policy, site_policy_path
from goodput_agent.web import security
from goodput_agent.web.security import Signer


@dataclass(slots=True)
class ServeConfig:
    ledger: Path
    host: str = "127.0.0.1"
    token: str | None = None  # the shared access token: it lets a client read, not approve
    policy_path: Path | None = None
    signer: Signer = field(default_factory=Signer.random)
    cwd: Path = field(default_factory=Path.cwd)
    # an authenticating proxy in front (people.py): how a request proves it came through it
    proxy_secret: str | None = None
    trusted_proxies: list[str] = field(default_factory=list)  # CIDRs
    proxy_user_header: str = "X-Forwarded-User"
    proxy_groups_header: str = "X-Forwarded-Groups"
    # the clusters an approved action acts on
    slurm_conf: Path | None = None
    kubeconfig: Path | None = None

    def policy(self) -> Policy:
        """The policy given, else the one beside the ledger (read on each call: an edit, or a
        `goodput policy init` while serving, takes effect at once), else the shipped one."""
        beside = site_policy_path(self.ledger)
        return load_policy(self.policy_path or (beside if beside.is_file() else None))

    def allowed_hosts(self) -> list[str]:
        """Host headers answered: on loopback only loopback names, so that a web page whose
        name was rebound to 127.0.0.1 (DNS rebinding) gets nothing; beyond loopback, any
        (the access token guards every request there)."""
        if security.is_loopback(self.host):
            return ["127.0.0.1", "localhost", "::1", "[::1]"]
        return ["*"]
