"""Kernel logs: dmesg, journalctl -k, syslog / kern.log, and the Xid lines that monitors repeat.

Each line is read as <time prefix> <message>; a file can mix prefixes. Prefixes understood:
journalctl `short` ("May 15 23:09:27 host kernel: msg"), `short-precise` (".123456"),
`short-iso` ("2024-05-15T23:09:27+0000 host kernel: msg"), `short-monotonic` ("[ 5.1] host
kernel: msg"), syslog files with the kernel's uptime after the tag ("kernel: [680111.646286]"),
dmesg raw ("[  170.053881] msg"), dmesg -T ("[Sun Jan 11 09:52:01 2026] msg"), dmesg
--time-format iso ("2025-01-21T04:41:44,283302+00:00 msg"), dmesg --decode ("kern  :warn  : "),
/dev/kmsg records, gpud ("[XID found] (54 minutes ago) \"NVRM: ...\""), the k8s device plugin
(Go log / klog), a bare "kernel: " tag, a syslog line quoted inside other text, and no time.

Only lines that carry one of MARKERS are decoded (scan_lines); of those, the messages below
become Events, everything else is skipped: NVIDIA Xid / SXid lines, GPU fallen off the bus,
GSP "reset required", RmInitAdapter failures, device-plugin XidCriticalError, OOM kills (global
and memory cgroup; oom-kill / Killed process / oom_reaper lines of one kill merge into one
Event), segfaults and traps, NIC link / module / watchdog faults, kernel panics, machine checks,
EDAC uncorrected errors, hung tasks and lockups (context). The driver's faults that carry no
Xid number (GPU fallen off the bus in its own words, GSP heartbeat / RPC timeouts, memory-
subsystem errors, NVLink training failures), Xid 45 "caused by previous Xid N", and PCIe AER
errors the GPU cannot recover from are read by kernel_vocab.

Clocks: wall-clock prefixes are placed with the ClockPolicy. Lines that carry only the uptime
(raw dmesg) are placed with a boot anchor (wall - uptime) when the same file has lines with
both; a file spanning reboots gets one anchor per boot. Otherwise they stay Clock.none with
detail["uptime_s"].

Modules: prefixes (the time prefixes), finding (what a message says), gpu_messages and
host_messages (the matchers), classify (the matchers in order), builder (a file's events, boot
anchors), parser (what the registry calls).
"""

from goodput_agent.parsing.kernel_log.classify import classify
from goodput_agent.parsing.kernel_log.finding import Finding, norm_pci
from goodput_agent.parsing.kernel_log.gpu_messages import match_xid
from goodput_agent.parsing.kernel_log.parser import PARSER, KernelLogParser
from goodput_agent.parsing.kernel_log.prefixes import FORMAT, LinePrefix, split_prefix

__all__ = ["FORMAT", "PARSER", "Finding", "KernelLogParser", "LinePrefix", "classify",
           "match_xid", "norm_pci", "split_prefix"]
