"""How text reaches a bundle after a person or a pipeline handled it: copied from a terminal
(hard-wrapped at its width, padded to it), passed through rsyslog (control characters escaped
as `#033`), aligned as kubectl prints its tables; and the name-service answers that map an IP
to a host (nslookup, host, getent, /etc/hosts)."""

from __future__ import annotations

import random

COLOURS = ("0;36m", "32m", "1;33m", "0m", "33m", "0;31m")


def hard_wrap(lines: list[str], width: int, pad: bool) -> list[str]:
    """A terminal copy: every line cut at `width` characters, mid-word; the cut pieces padded
    with spaces to the full width when the terminal kept its trailing blanks."""
    out: list[str] = []
    for line in lines:
        pieces = [line[i:i + width] for i in range(0, len(line), width)] or [""]
        if pad:
            pieces = [p.ljust(width) for p in pieces]
        out.extend(pieces)
    return out


def ansi(text: str, colour: str) -> str:
    return f"\x1b[{colour}{text}\x1b[0m"


def syslog_escaped(text: str) -> str:
    """rsyslog's default for control characters received: ESC as #033, TAB as #011."""
    return text.replace("\x1b", "#033").replace("\t", "#011")


def kubectl_table(header: list[str], rows: list[list[str]]) -> str:
    """kubectl's tabwriter: each column as wide as its widest cell plus 3 blanks; the last
    column unpadded."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [cell.ljust(widths[i] + 3) for i, cell in enumerate(row[:-1])]
        out.append("".join(cells) + row[-1])
    return "\n".join(out) + "\n"


def reverse_zone(ip: str) -> str:
    return ".".join(reversed(ip.split("."))) + ".in-addr.arpa"


def name_lookup(rng: random.Random, ip_to_fqdn: dict[str, str], style: str | None = None
                ) -> tuple[str, str]:
    """(file name, text) of one of the ways people map peer IPs to hosts."""
    style = style or rng.choice(("nslookup", "host", "getent", "hosts"))
    dns = f"10.{rng.randint(0, 9)}.0.{rng.randint(2, 9)}"
    if style == "nslookup":
        blocks = [f"Server:\t\t{dns}\nAddress:\t{dns}#53\n\n{reverse_zone(ip)}\tname = {fqdn}.\n"
                  for ip, fqdn in ip_to_fqdn.items()]
        return "nslookup.txt", "\n".join(blocks)
    if style == "host":
        return "host_lookup.txt", "".join(f"{reverse_zone(ip)} domain name pointer {fqdn}.\n"
                                          for ip, fqdn in ip_to_fqdn.items())
    if style == "getent":
        return "getent_hosts.txt", "".join(f"{ip:<15} {fqdn} {fqdn.split('.')[0]}\n"
                                           for ip, fqdn in ip_to_fqdn.items())
    head = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    return "etc_hosts", head + "".join(f"{ip}\t{fqdn}\t{fqdn.split('.')[0]}\n"
                                       for ip, fqdn in ip_to_fqdn.items())


def host_ips(rng: random.Random, hosts: list[str]) -> dict[str, str]:
    """host -> a data-network IP, distinct per host."""
    a, b = rng.randint(0, 40), rng.randint(0, 250)
    last = rng.randint(2, 120)
    out = {}
    for h in hosts:
        out[h] = f"10.{a}.{b}.{last}"
        last += rng.randint(1, 3)
    return out


def age(seconds: float) -> str:
    """kubectl's AGE column."""
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60}m" if s < 36000 else f"{s // 3600}h"
    return f"{s // 86400}d"
