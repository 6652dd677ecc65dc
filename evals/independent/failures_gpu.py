"""GPU failures: the driver reports a hardware fault (several Xids and driver wordings), or a
rank runs out of GPU memory."""

from __future__ import annotations

import random

from .case import Case, Expected
from .model import later, make_job
from .run_story import Story
from .scheduler import record_end

PCI = ("0000:1b:00", "0000:3d:00", "0000:9b:00", "0000:b3:00", "0000:db:00")


def _xid(pci: str, code: int, pid: int, text: str) -> str:
    return f"NVRM: Xid (PCI:{pci}): {code}, pid={pid}, name=python, {text}"


def _hw_lines(variant: int, pci: str, pid: int) -> tuple[list[str], str, str]:
    """Kernel lines, the rank's own last error, and what the fault is, per driver wording."""
    if variant == 0:
        return ([_xid(pci, 79, pid, "GPU has fallen off the bus."),
                 f"NVRM: GPU {pci}.0: GPU has fallen off the bus."],
                "RuntimeError: CUDA error: unknown error", "Xid 79, GPU fell off the bus")
    if variant == 1:
        return ([f"NVRM: The NVIDIA GPU {pci}.0 (PCI ID: 10de:2330) installed in this system has "
                 "fallen off the bus and is not responding to commands.",
                 f"pcieport 0000:16:02.0: AER: Uncorrected (Fatal) error received: {pci}.0"],
                "RuntimeError: CUDA error: unspecified launch failure",
                "GPU fell off the bus (driver wording without an Xid number)")
    if variant == 2:
        return ([_xid(pci, 48, pid, "An uncorrectable double bit error (DBE) has been detected "
                      "on GPU in the framebuffer at partition 6, subpartition 0."),
                 _xid(pci, 63, pid, "Row Remapper: New row (0x0000000000a3f0c0) was marked for "
                      "remapping, reset gpu to activate.")],
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                "Xid 48 double-bit ECC error")
    if variant == 3:
        return ([_xid(pci, 119, pid, "Timeout after 45s of waiting for RPC response from GPU2 "
                      "GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4)."),
                 "NVRM: GPU2 _kgspLogXid119: ********************************* GSP Timeout "
                 "**********************************",
                 "NVRM: GPU2 _kgspIsHeartbeatTimedOut: Heartbeat timed out"],
                "RuntimeError: CUDA error: unspecified launch failure", "Xid 119 GSP timeout")
    if variant == 4:
        return ([_xid(pci, 95, pid, "Uncontained: FBHUB. RST: Yes, D-RST: No")],
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                "Xid 95 uncontained ECC error")
    return ([_xid(pci, 74, pid, "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, "
                  "0x0, 0x0, 0x0, 0x0)")],
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "Xid 74 NVLink fatal error")


def gpu_hardware(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    host = job.host_of(culprit)
    t_fail = later(job.start, rng.uniform(3, 7) * 3600)
    story.progress(t_fail)
    kern, own_error, what = _hw_lines(variant, rng.choice(PCI), job.pids[culprit])
    for k, text in enumerate(kern):
        story.kern(host, later(t_fail, k * 0.4), text)
    story.glog(culprit, later(t_fail, 2), "E", "CUDAGuardImpl.h:119", "Warning: CUDA error")
    story.say(culprit, later(t_fail, 2.1), own_error)
    story.victims({culprit}, t_fail)
    notes = [f"{what} on {host}, pid {job.pids[culprit]} is rank {culprit}'s process "
             "(its NCCL init line), and that rank's own last line is a CUDA error; every other "
             "rank times out in the collective ~10 min later (symptoms)."]
    if rng.random() < 0.6:
        other = rng.choice([h for h in job.hosts if h != host])
        story.kern(other, later(job.start, 1800), _xid(rng.choice(PCI), rng.choice((13, 43)),
                   rng.randint(100, 9999), "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 1):"
                   " Out Of Range Address"))
        notes.append(f"Decoy: an Xid 13/43 of another process on {other} hours earlier; the job "
                     "kept stepping afterwards, so it did not stop the job.")
    end = later(t_fail, 640)
    record_end(story, "FAILED", "1:0", end)
    story.finish(question=rng.random() < 0.7)
    return Case(expected=Expected(case_id=case_id, category="gpu_hardware", node=host,
                                  rank=culprit, notes=" ".join(notes)), files=story.files)


def _oom_text(rng: random.Random, local_gpu: int) -> str:
    if rng.random() < 0.5:
        return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU "
                f"{local_gpu} has a total capacity of 79.11 GiB of which 1.87 GiB is free. "
                "Including non-PyTorch memory, this process has 77.22 GiB memory in use. Of the "
                "allocated memory 71.90 GiB is allocated by PyTorch, and 4.13 GiB is reserved "
                "by PyTorch but unallocated. If reserved but unallocated memory is large try "
                "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
    return (f"RuntimeError: CUDA out of memory. Tried to allocate 1.53 GiB (GPU {local_gpu}; "
            "39.39 GiB total capacity; 36.20 GiB already allocated; 1.01 GiB free; 37.02 GiB "
            "reserved in total by PyTorch)")


def gpu_oom(rng: random.Random, case_id: str, variant: int) -> Case:
    job = make_job(rng)
    story = Story(job, rng)
    culprit = rng.randrange(job.world)
    t_fail = later(job.start, rng.uniform(0.2, 3) * 3600)
    story.progress(t_fail)
    tb = ["Traceback (most recent call last):",
          '  File "/workspace/train.py", line 231, in <module>', "    main(cfg)",
          '  File "/workspace/train.py", line 197, in train_step',
          "    logits = model(input_ids, attention_mask=mask)",
          '  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line '
          "1553, in _wrapped_call_impl", "    return self._call_impl(*args, **kwargs)",
          _oom_text(rng, job.local_rank(culprit))]
    story.say_block(culprit, t_fail, tb)
    story.victims({culprit}, t_fail)
    notes = (f"Rank {culprit} ({job.host_of(culprit)}) raised a CUDA OOM first; the other "
             "ranks' watchdog timeouts date the stuck collective to that moment.")
    if variant % 2:
        decoy = rng.choice([r for r in range(job.world) if r != culprit])
        story.py(decoy, later(t_fail, 300), "WARNING: CUDA memory usage 92% of 80 GiB on this "
                 "rank (reserved 74.1 GiB); consider a smaller micro-batch")
        notes += f" Decoy: rank {decoy} warns about high memory later but never fails on it."
    record_end(story, "FAILED", "1:0", later(t_fail, 630))
    story.finish(question=rng.random() < 0.6)
    return Case(expected=Expected(case_id=case_id, category="gpu_oom", node=job.host_of(culprit),
                                  rank=culprit, notes=notes), files=story.files)
