"""Debian packages for the real servers the tests start (Prometheus, Slurm, Chromium, ...):
installed with apt-get when their binaries are absent, never by hand.

Nothing here reaches beyond loopback except apt-get, on a machine that lacks the package.
Several test processes may install at once: dpkg's lock is waited for, not failed on.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

APT_TIMEOUT_S = 900
LOCK_WAIT_S = 600


class PackageUnavailable(RuntimeError):
    """The package is absent and this user may not install it (not root, no sudo). A failing
    install where installing is allowed is a plain RuntimeError: that fails the tests."""


def _installer() -> list[str] | None:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                               capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def _missing(binaries: Sequence[str]) -> list[str]:
    return [b for b in binaries if not (shutil.which(b) or Path(b).is_file())]


def ensure_packages(packages: Sequence[str], binaries: Sequence[str]) -> dict[str, Path]:
    """Paths of `binaries` (names on PATH, or absolute paths), installing `packages` with
    apt-get when any is absent."""
    if _missing(binaries):
        prefix = _installer()
        if prefix is None or not shutil.which("apt-get"):
            raise PackageUnavailable(
                f"{', '.join(packages)} not installed and this user cannot install it "
                f"(run as root, or: sudo apt-get install {' '.join(packages)})")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = [*prefix, "apt-get", "-o", f"DPkg::Lock::Timeout={LOCK_WAIT_S}", "install",
                   "-y", "-q", "--no-install-recommends", *packages]
        if subprocess.run(install, capture_output=True, env=env,
                          timeout=APT_TIMEOUT_S).returncode != 0:
            subprocess.run([*prefix, "apt-get", "-o", f"DPkg::Lock::Timeout={LOCK_WAIT_S}",
                            "update", "-q"], capture_output=True, env=env,
                           timeout=APT_TIMEOUT_S, check=False)
            proc = subprocess.run(install, capture_output=True, text=True, env=env,
                                  timeout=APT_TIMEOUT_S)
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                raise RuntimeError(f"apt-get install {' '.join(packages)} failed: {tail[0]}")
        missing = _missing(binaries)
        if missing:
            raise RuntimeError(f"apt-get installed {' '.join(packages)} but {missing} are absent")
    return {b: Path(shutil.which(b) or b) for b in binaries}


# below Linux's ephemeral range (32768-60999): a port chosen here is never also taken by an
# outgoing connection between the choice and the server's bind; random, so that test runs side
# by side rarely draw the same one
_PORTS = (20000, 32767)


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports that were free a moment ago (held together while chosen)."""
    import random

    held: list[socket.socket] = []
    try:
        while len(held) < n:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", random.randint(*_PORTS)))
            except OSError:
                s.close()
                continue
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]
