"""How sure a named cause may be by who recorded what it rests on, the same for every kind of
question (what an `unknown` verdict's confidence means is abstention.py):
- OWNERS_RECORD: the component that acted or holds the state recorded it in words that state
  the class (a memory monitor's kill, the GPU's state as its driver, NVML or the device plugin
  report it, a serving engine's scheduler counting its own queue, cache and preemptions), and
  what would corroborate it is not in the bundle (the kernel's record; the latency histograms);
- ONE_ARTIFACT: one artifact that reports what someone else recorded (a shell's `Killed`, exit
  -9), its confirmation missing from the bundle (issue 24);
- SILENCE_CEILING: a cause that rests in part on what was not heard (a hang told by the waiting
  ranks while others are unheard): never above it (issue 24).
What corroborates a verdict lifts it above these (analysis/failure/corroboration.py)."""

from __future__ import annotations

# Measured before it was set (2026-12-05), when such verdicts were held at ONE_ARTIFACT: on the
# real corpus's decisive entries every one was right, 18 of 18 (nine CUDA errors naming an
# uncorrectable ECC error, four NVML / nvidia-smi / device-plugin records of a lost or
# unhealthy GPU, five kills by the kubelet's or Ray's memory monitor): 95 % Wilson lower bound
# 0.82; and every serving engine's own record of KV-cache preemptions or waiting requests was
# right on the held-out suites (the independent generator's, the real corpus's one).
OWNERS_RECORD = 0.8
ONE_ARTIFACT = 0.6
SILENCE_CEILING = 0.5
