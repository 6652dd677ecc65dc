"""Review scenarios: incident bundles hand-built by a reviewer in the formats real clusters
write (wording copied from public logs), independent of evals/generator.py, each with an
expected.txt. Regression cases for shapes the generator does not produce."""
# ruff: noqa

import json
import os
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from .helpers import Kit

K = Kit(7)  # the output folder is set by render()
R = K.rng
w, fresh, incident = K.w, K.fresh_text, K.incident


def glog(lvl, t, src="ProcessGroupNCCL.cpp:607"):
    # c10 glog: E0501 10:22:05.123456789 (local time, no year)
    return K.glog(lvl, t, src)


def watchdog(prefix, rank, t, seq, op="ALLREDUCE", numel=262144000, pg="PG ID 0 PG GUID 0(default_pg) "):
    ran = 600000 + R.randint(10, 99)
    return [
        f"{prefix}[{glog('E', t)}] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) "
        f"ran for {ran} milliseconds before timing out.",
        f"{prefix}[{glog('E', t + timedelta(milliseconds=2), 'ProcessGroupNCCL.cpp:1785')}] [{pg}Rank {rank}] "
        f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
        f"{seq + 2}, last completed NCCL work: {seq - 1}.",
        f"{prefix}[{glog('E', t + timedelta(milliseconds=3), 'ProcessGroupNCCL.cpp:630')}] [Rank {rank}] Timeout at NCCL "
        f"work: {seq}, last enqueued NCCL work: {seq + 2}, last completed NCCL work: {seq - 1}.",
        f"{prefix}[{glog('E', t + timedelta(milliseconds=4), 'ProcessGroupNCCL.cpp:636')}] [Rank {rank}] To avoid data "
        f"inconsistency, we are taking the entire process down.",
    ]


def train_lines(prefix, t0, steps, rank, every=60):
    out = []
    for i in range(steps):
        t = t0 + timedelta(seconds=every * i)
        out.append(f"{prefix}{t:%Y-%m-%d %H:%M:%S},{R.randint(100, 999)} - INFO - trainer - "
                   f"step {1200 + i} | loss {2.5 - i * 0.01:.4f} | lr 3.0e-04 | tokens/s {R.randint(9000, 9900)}")
    return out


def child_failed(script, t, host, rank, lrank, code, pid, others=()):
    sig = {-9: "Signal 9 (SIGKILL) received by PID %d", -6: "Signal 6 (SIGABRT) received by PID %d",
           -15: "Signal 15 (SIGTERM) received by PID %d"}
    tb = sig[code] % pid if code in sig else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        f"{script} FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]
    if not others:
        lines.append("  <NO_OTHER_FAILURES>")
    for (ot, orank, olr, ocode, opid) in others:
        otb = sig[ocode] % opid if ocode in sig else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        lines += [f"[{olr}]:", f"  time      : {ot:%Y-%m-%d_%H:%M:%S}", f"  host      : {host}",
                  f"  rank      : {orank} (local_rank: {olr})", f"  exitcode  : {ocode} (pid: {opid})",
                  "  error_file: <N/A>", f"  traceback : {otb}"]
    lines += [
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        f"[0]:",
        f"  time      : {t:%Y-%m-%d_%H:%M:%S}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {lrank})",
        f"  exitcode  : {code} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {tb}",
        "============================================================",
    ]
    return lines


def elastic_failed(t, lrank, code, pid):
    return (f"E{t:%m%d %H:%M:%S}.{t.microsecond:06d} 1402 torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: {code}) local_rank: {lrank} (pid: {pid}) of binary: /opt/conda/bin/python")


def elastic_sigterm(t, pid):
    return (f"W{t:%m%d %H:%M:%S}.{t.microsecond:06d} 1402 torch/distributed/elastic/multiprocessing/api.py:897] "
            f"Sending process {pid} closing signal SIGTERM")


def sacct(job, name, state, code, nodes, start, end, steps_state="FAILED", step_code="1:0", batch_node=None):
    el = end - start
    h, rem = divmod(int(el.total_seconds()), 3600)
    m, s = divmod(rem, 60)
    e = f"{h:02d}:{m:02d}:{s:02d}"
    f = "%Y-%m-%dT%H:%M:%S"
    return "\n".join([
        "JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed",
        f"{job}|{name}|{state}|{code}|0:0|{nodes}|{start:{f}}|{end:{f}}|{e}",
        f"{job}.batch|batch|{steps_state if state != 'TIMEOUT' else 'CANCELLED'}|{step_code if state != 'TIMEOUT' else '0:15'}||{batch_node}|{start:{f}}|{end:{f}}|{e}",
        f"{job}.extern|extern|COMPLETED|0:0||{nodes}|{start:{f}}|{end:{f}}|{e}",
        f"{job}.0|torchrun|{steps_state}|{step_code}||{nodes}|{start + timedelta(seconds=4):{f}}|{end:{f}}|{e}",
    ])


def kern_boot_noise(host_fmt, t, n=5):
    msgs = ["mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
            "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x4f2a1 offset:0x0 grain:32 syndrome:0x0)",
            "nvidia-peermem nv_mem_get_pages: failed to get user pages",
            "audit: type=1400 audit(1714557123.412:812): apparmor=\"DENIED\" operation=\"open\" profile=\"snap.lxd\"",
            "IPv6: ADDRCONF(NETDEV_CHANGE): ibp12s0: link becomes ready",
            "nfs: server fs01 OK"]
    return [host_fmt(t + timedelta(seconds=97 * i), msgs[i % len(msgs)]) for i in range(n)]


# ---------------------------------------------------------------- b01
def b01():
    b = "b01_xid79_journal_chicago_perrank"
    fresh(b, "category: gpu_hardware\nnode: gpu-a03\nrank: 17\n")
    tz = ZoneInfo("America/Chicago")
    nodes = [f"gpu-a0{i}" for i in range(1, 5)]
    start = datetime(2024, 5, 1, 9, 30, 11)
    xid = datetime(2024, 5, 1, 10, 12, 3, 511000)
    end = datetime(2024, 5, 1, 10, 24, 40)
    incident(b, "48213", start - timedelta(minutes=10), end + timedelta(minutes=10), "America/Chicago")
    w(b, "slurm/sacct.txt", sacct("48213", "pretrain", "FAILED", "1:0", "gpu-a[01-04]", start, end, batch_node="gpu-a01"))
    for n in nodes:
        fq = f"{n}.cluster.example.com"
        off = "-0500"
        fmt = lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S}{off} {fq} kernel: {m}"
        lines = kern_boot_noise(fmt, start)
        if n == "gpu-a03":
            lines += [fmt(xid, "NVRM: GPU at PCI:0000:3b:00: GPU-1f2c9a7e-55b1-7a3c-9e0d-8a41c2f0b6d3"),
                      fmt(xid, "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                      fmt(xid + timedelta(seconds=1), "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."),
                      fmt(xid + timedelta(seconds=1), "NVRM: A GPU crash dump has been created. If possible, please run"),
                      fmt(xid + timedelta(seconds=1), "NVRM: nvidia-bug-report.sh as root to collect this data before"),
                      fmt(xid + timedelta(seconds=1), "NVRM: the NVIDIA kernel module is unloaded.")]
        w(b, f"nodes/{n}/kern.log", "\n".join(["-- Logs begin at Mon 2024-04-29 08:01:12 CDT, end at Wed 2024-05-01 11:02:33 CDT. --"] + lines))
    for r in range(32):
        p = f"[rank{r}]:"
        lines = [f"{p}W0501 09:30:40.118000 1402 torch/distributed/distributed_c10d.py:3892] NCCL version 2.21.5+cuda12.4"]
        lines += train_lines("", start + timedelta(minutes=1), 40, r)
        if r == 17:
            lines += [f"{p}Traceback (most recent call last):",
                      f'{p}  File "/workspace/train.py", line 412, in <module>',
                      f"{p}    loss.backward()",
                      f"{p}RuntimeError: CUDA error: unspecified launch failure",
                      f"{p}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."]
        else:
            lines += watchdog(p, r, xid + timedelta(minutes=10, seconds=R.randint(0, 3), microseconds=R.randint(0, 999999)), 81234)
        w(b, f"logs/rank{r}.log", "\n".join(lines))


# ---------------------------------------------------------------- b02
def b02():
    b = "b02_xid48_dmesgT_tee_berlin"
    fresh(b, "category: gpu_hardware\nnode: hpc-n12\nrank: 13  (local 5 on 2nd node)\n")
    nodes = ["hpc-n11", "hpc-n12"]
    start = datetime(2024, 6, 3, 14, 0, 5)
    xid = datetime(2024, 6, 3, 15, 41, 27)
    end = datetime(2024, 6, 3, 15, 52, 0)
    incident(b, "771204", start, end + timedelta(minutes=5), "Europe/Berlin")
    w(b, "slurm/sacct.txt", sacct("771204", "sft-70b", "FAILED", "1:0", "hpc-n[11-12]", start, end, batch_node="hpc-n11"))
    for ni, n in enumerate(nodes):
        fmt = lambda t, m: f"[{t:%a %b} {t.day:2d} {t:%H:%M:%S %Y}] {m}"
        lines = kern_boot_noise(fmt, start)
        if n == "hpc-n12":
            lines += [fmt(xid, "NVRM: Xid (PCI:0000:9c:00): 48, pid=2231187, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."),
                      fmt(xid, "NVRM: Xid (PCI:0000:9c:00): 63, pid=2231187, name=python, Dynamic Page Retirement: New page retired, reboot to activate (0x00000000000a5c31)."),
                      fmt(xid + timedelta(seconds=2), "NVRM: Xid (PCI:0000:9c:00): 45, pid=2231187, name=python, Ch 00000010")]
        w(b, f"nodes/{n}/dmesg.txt", "\n".join(lines))
        tee = []
        for lr in range(8):
            g = ni * 8 + lr
            p = f"[default{lr}]:"
            tee += [f"{p}{l}" for l in train_lines("", start + timedelta(minutes=2), 6, g, every=900)]
        if n == "hpc-n12":
            p = "[default5]:"
            tee += [f"{p}[rank13]: Traceback (most recent call last):",
                    f'{p}[rank13]:   File "/opt/sft/train.py", line 221, in train_step',
                    f"{p}[rank13]:     torch.cuda.synchronize()",
                    f"{p}[rank13]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
                    f"{p}[rank13]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]
        for lr in range(8):
            g = ni * 8 + lr
            if g == 13:
                continue
            tee += watchdog(f"[default{lr}]:[rank{g}]:", g, xid + timedelta(minutes=10, seconds=1), 55120, op="_ALLGATHER_BASE")
        tee.append(elastic_failed(xid + timedelta(minutes=10, seconds=6), 5 if ni else 0, 1 if ni else -6, 2231187 if ni else 881201))
        tee += child_failed("/opt/sft/train.py", xid + timedelta(minutes=10, seconds=6), n, 13 if ni else 0, 5 if ni else 0,
                            1 if ni else -6, 2231187 if ni else 881201)
        w(b, f"nodes/{n}/train.log", "\n".join(tee))


# ---------------------------------------------------------------- b03
def b03():
    b = "b03_xid94_rawdmesg_srunl64"
    fresh(b, "category: gpu_hardware\nnode: dgx-b07\nrank: 42  (gpu at c1:00 = idx 2 on node 5 of 8)\n")
    nodes = [f"dgx-b{i:02d}" for i in range(2, 10)]
    start = datetime(2024, 7, 9, 2, 10, 0)
    fail = datetime(2024, 7, 9, 3, 33, 41)
    end = fail + timedelta(minutes=11)
    incident(b, "5521907", start, end + timedelta(minutes=5))
    w(b, "slurm/sacct.txt", sacct("5521907", "mixtral", "FAILED", "1:0", "dgx-b[02-09]", start, end, batch_node="dgx-b02"))
    boot = start - timedelta(days=3, seconds=411.2)
    for n in nodes:
        up = lambda t: (t - boot).total_seconds()
        lines = [f"[{up(start) + 12.5:12.6f}] mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"]
        if n == "dgx-b07":
            lines += [f"[{up(fail):12.6f}] NVRM: Xid (PCI:0000:c1:00): 94, pid=3318842, name=python3, Contained: CE User Channel (0x9). RST: No, D-RST: No",
                      f"[{up(fail) + 0.002:12.6f}] NVRM: Xid (PCI:0000:c1:00): 94, pid=3318842, name=python3, Contained: CE User Channel (0x9). RST: No, D-RST: No"]
        w(b, f"nodes/{n}/dmesg.txt", "\n".join(lines))
    out = []
    for r in range(64):
        out += [f"{r}: {l}" for l in train_lines("", start + timedelta(minutes=1), 3, r, every=1500)][:1]
    out += ["42: [rank42]:[E709 03:33:41.902151512 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 42] Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered",
            "42: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."]
    for r in range(64):
        if r != 42:
            out += watchdog(f"{r}: [rank{r}]:", r, fail + timedelta(minutes=10, seconds=R.random()), 3012, op="_REDUCE_SCATTER_BASE")
    out += ["srun: error: dgx-b07: task 42: Aborted (core dumped)",
            "srun: launch/slurm: _step_signal: Terminating StepId=5521907.0",
            "slurmstepd: error: *** STEP 5521907.0 ON dgx-b02 CANCELLED AT 2024-07-09T03:44:12 ***",
            "srun: error: dgx-b03: tasks 8-15: Aborted"]
    w(b, "logs/slurm-5521907.out", "\n".join(out))


# ---------------------------------------------------------------- b04
def b04():
    b = "b04_gpu_oom_k8s_pytorchjob"
    fresh(b, "category: gpu_oom\nnode: ip-10-0-4-91.ec2.internal  (worker-2 = 4th pod)\nrank: 27\n")
    start = datetime(2024, 8, 20, 18, 0, 0)
    oom = datetime(2024, 8, 20, 19, 4, 12, 220000)
    incident(b, "llama-ft", start, oom + timedelta(minutes=20), q="why did pytorchjob llama-ft fail?")
    knodes = ["ip-10-0-1-5.ec2.internal", "ip-10-0-2-44.ec2.internal", "ip-10-0-3-17.ec2.internal", "ip-10-0-4-91.ec2.internal"]
    items = []
    for i, kn in enumerate(knodes):
        name = "llama-ft-master-0" if i == 0 else f"llama-ft-worker-{i - 1}"
        fin = oom + timedelta(minutes=10, seconds=8 + i)
        items.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "train", "uid": f"6b1c{i}e-aa",
                         "labels": {"training.kubeflow.org/job-name": "llama-ft",
                                    "training.kubeflow.org/replica-type": "master" if i == 0 else "worker",
                                    "training.kubeflow.org/replica-index": str(0 if i == 0 else i - 1)},
                         "creationTimestamp": f"{start:%Y-%m-%dT%H:%M:%S}Z"},
            "spec": {"nodeName": kn, "containers": [{"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:24.07-py3",
                                                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Failed", "hostIP": f"10.0.{i + 1}.{5 + i}",
                       "containerStatuses": [{"name": "pytorch", "ready": False, "restartCount": 0,
                                              "state": {"terminated": {"exitCode": 1, "reason": "Error",
                                                                       "startedAt": f"{start:%Y-%m-%dT%H:%M:%S}Z",
                                                                       "finishedAt": f"{fin:%Y-%m-%dT%H:%M:%S}Z"}}}]}})
        lines = []
        for lr in range(8):
            g = i * 8 + lr
            lines += [f"[default{lr}]:{l}" for l in train_lines("", start + timedelta(minutes=3), 2, g, every=1800)]
        for lr in range(8):
            g = i * 8 + lr
            if g == 27:
                t = oom
                lines += [f"[default{lr}]:[rank{g}]: Traceback (most recent call last):",
                          f'[default{lr}]:[rank{g}]:   File "/workspace/ft.py", line 188, in <module>',
                          f"[default{lr}]:[rank{g}]:     out = model(**batch)",
                          f"[default{lr}]:[rank{g}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory 74.52 GiB is allocated by PyTorch, and 2.11 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"]
            else:
                lines += watchdog(f"[default{lr}]:[rank{g}]:", g, oom + timedelta(minutes=10, seconds=R.random()), 9911)
        w(b, f"logs/{name}.log", "\n".join(lines))
    w(b, "k8s/pods.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=1))


# ---------------------------------------------------------------- b05
def b05():
    b = "b05_host_oom_tokyo_fqdn"
    fresh(b, "category: host_oom\nnode: gpu-b02\nrank: 11\n")
    start = datetime(2024, 9, 12, 20, 0, 0)
    oomt = datetime(2024, 9, 12, 21, 17, 44)
    end = oomt + timedelta(seconds=30)
    incident(b, "330912", start, end + timedelta(minutes=5), "Asia/Tokyo")
    w(b, "slurm/sacct.txt", sacct("330912", "dpo", "FAILED", "1:0", "gpu-b[01-02]", start, end, batch_node="gpu-b01"))
    for ni, n in enumerate(["gpu-b01", "gpu-b02"]):
        fq = f"{n}.hpc.example.org"
        fmt = lambda t, m: f"{t:%b %d %H:%M:%S} {fq} kernel: {m}"
        lines = kern_boot_noise(fmt, start)
        if ni == 1:
            lines += [fmt(oomt, "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"),
                      fmt(oomt, "CPU: 41 PID: 1880233 Comm: python Tainted: P           OE     5.15.0-105-generic #115-Ubuntu"),
                      fmt(oomt, "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/slurm/uid_1001/job_330912/step_0/user/task_0,task=python,pid=1880236,uid=1001"),
                      fmt(oomt, "Out of memory: Killed process 1880236 (python) total-vm:1203948512kB, anon-rss:972001888kB, file-rss:102400kB, shmem-rss:40960kB, UID:1001 pgtables:1900456kB oom_score_adj:0"),
                      fmt(oomt + timedelta(seconds=2), "oom_reaper: reaped process 1880236 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:40960kB")]
        w(b, f"nodes/{n}/kern.log", "\n".join(lines))
    out = []
    for r in range(16):
        out += train_lines(f"[rank{r}]: ", start + timedelta(minutes=1), 2, r, every=2400)
    # victims: NCCL errors after peer died (connection reset), culprit silent
    for r in range(16):
        if r == 11:
            continue
        t = oomt + timedelta(seconds=3, milliseconds=r * 13)
        out.append(f"[rank{r}]:[{glog('E', t, 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5")
        out.append(f"[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.")
    w(b, "logs/slurm-330912.out", "\n".join(out))
    agent = [elastic_sigterm(oomt + timedelta(seconds=4), 1880230 + k) for k in range(7)]
    agent.append(elastic_failed(oomt + timedelta(seconds=5), 3, -9, 1880236))
    agent += child_failed("dpo_train.py", oomt + timedelta(seconds=1), "gpu-b02.hpc.example.org", 11, 3, -9, 1880236)
    w(b, "nodes/gpu-b02/torchrun.log", "\n".join(agent))


# ---------------------------------------------------------------- b06
def b06():
    b = "b06_app_error_quiet_culprit_old_xid"
    fresh(b, "category: application_error\nnode: gpu-c04\nrank: 29\n")
    start = datetime(2024, 10, 2, 8, 0, 0)
    err = datetime(2024, 10, 2, 9, 47, 3, 900000)
    end = err + timedelta(minutes=10, seconds=9)
    incident(b, "660001", start, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", sacct("660001", "vit-g", "FAILED", "1:0", "gpu-c[01-06]", start, end, batch_node="gpu-c01"))
    for i in range(1, 7):
        n = f"gpu-c0{i}"
        fmt = lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S.%f}+0000 {n} kernel: {m}"
        lines = []
        if n == "gpu-c02":   # a previous job's Xid, hours before this job started
            old = start - timedelta(hours=5, minutes=12)
            lines += [fmt(old, "NVRM: Xid (PCI:0000:1b:00): 13, pid=99121, name=python, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address"),
                      fmt(old, "NVRM: Xid (PCI:0000:1b:00): 13, pid=99121, name=python, Graphics Exception: ESR 0x50e730=0x201000e 0x50e734=0x24 0x50e728=0x4c1eb72 0x50e72c=0x174")]
        lines += kern_boot_noise(fmt, start)
        w(b, f"nodes/{n}/kern.log", "\n".join(lines))
    for r in range(48):
        p = f"[rank{r}]:"
        if r == 29:
            lines = [f"{p}[rank29]: Traceback (most recent call last):",
                     f'{p}[rank29]:   File "/src/data/loader.py", line 77, in __getitem__',
                     f"{p}[rank29]: KeyError: 'pixel_values'"]
        else:
            lines = train_lines("", start + timedelta(minutes=1), 100, r)
            lines.append(f"{p}[W{err:%m%d %H:%M:%S}.{R.randint(100000, 999999)} socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).") if r == 0 else None
            lines += watchdog(p, r, err + timedelta(minutes=10, milliseconds=r * 7), 44012, op="BROADCAST", numel=1)
            lines.append(f"{p}[{glog('F', err + timedelta(minutes=10, seconds=1), 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=44012, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.")
        w(b, f"logs/vit-g-660001.rank{r:02d}.err", "\n".join(lines))
    # culprit node's launcher (timestamped) tells when it died
    agent = [elastic_failed(err + timedelta(seconds=1), 5, 1, 412903)]
    agent += child_failed("/src/train.py", err, "gpu-c04", 29, 5, 1, 412903)
    w(b, "nodes/gpu-c04/torchrun-agent.log", "\n".join(agent))


# ---------------------------------------------------------------- b07
def b07():
    b = "b07_network_ib_linkdown_tee"
    fresh(b, "category: network_fault\nnode: gpu-d03\nrank: 18 (local 2, NIC mlx5_2)\n")
    start = datetime(2024, 11, 5, 1, 0, 0)
    ld = datetime(2024, 11, 5, 2, 12, 30, 100000)
    end = ld + timedelta(minutes=2)
    incident(b, "918273", start, end + timedelta(minutes=3), "America/Los_Angeles")
    w(b, "slurm/sacct.txt", sacct("918273", "gpt-neox", "FAILED", "1:0", "gpu-d[01-04]", start, end, batch_node="gpu-d01"))
    ips = {f"gpu-d0{i}": f"10.12.0.{10 + i}" for i in range(1, 5)}
    for i in range(1, 5):
        n = f"gpu-d0{i}"
        fmt = lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S}-0800 {n}.ib.example.net kernel: {m}"
        lines = kern_boot_noise(fmt, start)
        if n == "gpu-d03":
            lines += [fmt(ld, "mlx5_core 0000:5a:00.0 mlx5_2: Port: 1 Link DOWN"),
                      fmt(ld, "mlx5_core 0000:5a:00.0 ibp90s0: Link down"),
                      fmt(ld + timedelta(seconds=31), "mlx5_core 0000:5a:00.0 mlx5_2: Port: 1 Link INIT"),
                      fmt(ld + timedelta(seconds=33), "mlx5_core 0000:5a:00.0 mlx5_2: Port: 1 Link ACTIVE")]
        w(b, f"nodes/{n}/kern.log", "\n".join(lines))
        tee = []
        for lr in range(8):
            g = (i - 1) * 8 + lr
            tee += [f"[default{lr}]:{n}:{48200 + lr}:{48200 + lr} [{lr}] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1,mlx5_2,mlx5_3"]
            tee += [f"[default{lr}]:{l}" for l in train_lines("", start + timedelta(minutes=5), 2, g, every=3000)]
        # remote side (d02, ranks 10) sees the error first (a hair earlier), culprit d03 rank 18 too
        if n == "gpu-d02":
            tee += [f"[default2]:{n}:48202:48390 [2] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer {ips['gpu-d03']}<48202> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{ips[n]} remoteGids::ffff:{ips['gpu-d03']}",
                    f"[default2]:{n}:48202:48390 [2] NCCL INFO transport/net.cc:1302 -> 6",
                    f"[default2]:{n}:48202:48390 [2] NCCL INFO proxy.cc:698 -> 6",
                    f"[default2]:{n}:48202:48390 [2] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]
        if n == "gpu-d03":
            tee += [f"[default2]:{n}:48202:48391 [2] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer {ips['gpu-d04']}<48202> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:{ips[n]} remoteGids::ffff:{ips['gpu-d04']}",
                    f"[default2]:{n}:48202:48391 [2] NCCL INFO transport/net.cc:1302 -> 6"]
        for lr in range(8):
            g = (i - 1) * 8 + lr
            tee += [f"[default{lr}]:[rank{g}]:[{glog('E', ld + timedelta(seconds=2, milliseconds=g), 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {g}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
                    f"[default{lr}]:[rank{g}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                    f"[default{lr}]:[rank{g}]: Last error:",
                    f"[default{lr}]:[rank{g}]: NET/IB : Got completion from peer {ips['gpu-d03'] if n != 'gpu-d03' else ips['gpu-d04']}<48202> with status=12 opcode=0 len=0 vendor err 129 (Recv)"]
        w(b, f"nodes/{n}/train.log", "\n".join(tee))


# ---------------------------------------------------------------- b08
def b08():
    b = "b08_node_fail_newyork"
    fresh(b, "category: node_failure\nnode: gpu-e04\nrank: - (ranks 24-31 on that node)\n")
    start = datetime(2024, 12, 10, 22, 0, 0)
    dead = datetime(2024, 12, 10, 23, 5, 12)
    noticed = dead + timedelta(minutes=4, seconds=40)
    end = noticed + timedelta(seconds=5)
    incident(b, "1200345", start, end + timedelta(minutes=10), "America/New_York")
    f = "%Y-%m-%dT%H:%M:%S"
    w(b, "slurm/sacct.txt", "\n".join([
        "JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed",
        f"1200345|rlhf|NODE_FAIL|0:0|0:0|gpu-e[01-06]|{start:{f}}|{end:{f}}|01:09:57",
        f"1200345.batch|batch|CANCELLED|0:15||gpu-e01|{start:{f}}|{end:{f}}|01:09:57",
        f"1200345.extern|extern|CANCELLED||gpu-e[01-06]|{start:{f}}|{end:{f}}|01:09:57",
        f"1200345.0|python|CANCELLED||gpu-e[01-06]|{start + timedelta(seconds=3):{f}}|{end:{f}}|01:09:54"]))
    w(b, "slurm/scontrol_job.txt", f"""JobId=1200345 JobName=rlhf
   UserId=mlops(1007) GroupId=mlops(1007) MCS_label=N/A
   Priority=4294901720 Nice=0 Account=research QOS=normal
   JobState=NODE_FAIL Reason=NodeFail Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=01:09:57 TimeLimit=2-00:00:00 TimeMin=N/A
   SubmitTime={start - timedelta(minutes=3):{f}} EligibleTime={start - timedelta(minutes=3):{f}}
   StartTime={start:{f}} EndTime={end:{f}} Deadline=N/A
   Partition=h100 AllocNode:Sid=login01:88123
   NodeList=gpu-e[01-06]
   BatchHost=gpu-e01
   NumNodes=6 NumCPUs=672 NumTasks=48 CPUs/Task=14 ReqB:S:C:T=0:0:*:*
   TRES=cpu=672,mem=6000G,node=6,billing=672,gres/gpu=48
   Command=/home/mlops/rlhf/launch.sbatch
   StdErr=/home/mlops/rlhf/logs/rlhf-1200345.out
   StdOut=/home/mlops/rlhf/logs/rlhf-1200345.out
""")
    w(b, "slurm/sinfo_R.txt", f"REASON               USER      TIMESTAMP           NODELIST\nNot responding       slurm     {noticed:{f}} gpu-e04\n")
    for i in range(1, 7):
        n = f"gpu-e0{i}"
        fmt = lambda t, m: f"{t:%b %d %H:%M:%S} {n} kernel: {m}"
        lines = kern_boot_noise(fmt, start, n=6 if n != "gpu-e04" else 3)
        if n == "gpu-e04":
            lines += [fmt(dead - timedelta(seconds=20), "mce: [Hardware Error]: Machine check events logged"),
                      fmt(dead, "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 0")]
        else:
            lines += [fmt(noticed + timedelta(seconds=120), "nfs: server fs01 not responding, still trying")]
        w(b, f"nodes/{n}/kern.log", "\n".join(lines))
    out = []
    for r in range(48):
        out += [f"{r}: {l}" for l in train_lines("", start + timedelta(minutes=2), 2, r, every=1800)]
    for r in range(48):
        if 24 <= r < 32:
            continue
        t = dead + timedelta(seconds=20, milliseconds=r)
        out.append(f"{r}: [rank{r}]:[{glog('E', t, 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5")
        out.append(f"{r}: [rank{r}]: Last error:")
        out.append(f"{r}: [rank{r}]: socketProgress: Connection closed by remote peer gpu-e04<52113>")
    out += ["srun: error: Node failure on gpu-e04",
            f"slurmstepd: error: *** JOB 1200345 ON gpu-e01 CANCELLED AT {noticed:{f}} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]
    w(b, "logs/rlhf-1200345.out", "\n".join(out))


# ---------------------------------------------------------------- b09
def b09():
    b = "b09_hang_srunl_torchrun_tee"
    fresh(b, "category: hang\nnode: gpu-g02\nrank: 11 (local 3 on node task 1)\n")
    start = datetime(2025, 1, 14, 3, 0, 0)
    stuck = datetime(2025, 1, 14, 4, 20, 0)
    to = stuck + timedelta(minutes=10)
    end = to + timedelta(seconds=40)
    incident(b, "77340", start, end + timedelta(minutes=5))
    w(b, "slurm/sacct.txt", sacct("77340", "llm-pt", "FAILED", "1:0", "gpu-g[01-02]", start, end, batch_node="gpu-g01"))
    out = []
    for ni in range(2):
        for lr in range(8):
            g = ni * 8 + lr
            out += [f"{ni}: [default{lr}]:{l}" for l in train_lines("", start + timedelta(minutes=1), 2, g, every=2400)]
    out.append("0: [default3]:/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.")
    for ni in range(2):
        for lr in range(8):
            g = ni * 8 + lr
            if g == 11:
                continue
            out += watchdog(f"{ni}: [default{lr}]:[rank{g}]:", g, to + timedelta(milliseconds=g * 31), 1580, numel=466119168)
    for ni, n in enumerate(["gpu-g01", "gpu-g02"]):
        out.append(f"{ni}: " + elastic_failed(to + timedelta(seconds=30), 0, -6, 51000 + ni * 10))
        out += [f"{ni}: {l}" for l in child_failed("pretrain.py", to + timedelta(seconds=30), n, ni * 8, 0, -6, 51000 + ni * 10)]
    out.append("srun: error: gpu-g01: task 0: Exited with exit code 1")
    out.append("srun: error: gpu-g02: task 1: Exited with exit code 1")
    w(b, "logs/slurm-77340.out", "\n".join(out))


# ---------------------------------------------------------------- b10
def b10():
    b = "b10_time_limit_london_xid43_after"
    fresh(b, "category: time_limit\nnode: -\nrank: -\n")
    start = datetime(2024, 7, 1, 0, 0, 4)
    tl = datetime(2024, 7, 3, 0, 0, 7)
    end = tl + timedelta(seconds=35)
    incident(b, "400222", start, end + timedelta(minutes=5), "Europe/London")
    f = "%Y-%m-%dT%H:%M:%S"
    w(b, "slurm/sacct.txt", "\n".join([
        "JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed|Timelimit",
        f"400222|long-pt|TIMEOUT|0:0|0:0|gpu-f[01-02]|{start:{f}}|{end:{f}}|2-00:00:38|2-00:00:00",
        f"400222.batch|batch|CANCELLED|0:15||gpu-f01|{start:{f}}|{end:{f}}|2-00:00:38|",
        f"400222.extern|extern|COMPLETED|0:0||gpu-f[01-02]|{start:{f}}|{end:{f}}|2-00:00:38|",
        f"400222.0|python|CANCELLED|0:15||gpu-f[01-02]|{start:{f}}|{end:{f}}|2-00:00:34|"]))
    for i in (1, 2):
        n = f"gpu-f0{i}"
        fmt = lambda t, m: f"[{t:%a %b} {t.day:2d} {t:%H:%M:%S %Y}] {m}"
        lines = kern_boot_noise(fmt, tl - timedelta(hours=1))
        if i == 2:
            lines += [fmt(tl + timedelta(seconds=6), "NVRM: Xid (PCI:0000:41:00): 43, pid=661902, name=python, Ch 00000008"),
                      fmt(tl + timedelta(seconds=6), "NVRM: Xid (PCI:0000:41:00): 43, pid=661903, name=python, Ch 00000010")]
        w(b, f"nodes/{n}/dmesg.txt", "\n".join(lines))
    out = []
    for r in range(16):
        out += [f"{r}: {l}" for l in train_lines("", tl - timedelta(minutes=3), 2, r)]
    out += [f"slurmstepd: error: *** JOB 400222 ON gpu-f01 CANCELLED AT {tl:{f}} DUE TO TIME LIMIT ***",
            f"slurmstepd: error: *** STEP 400222.0 ON gpu-f01 CANCELLED AT {tl:{f}} DUE TO TIME LIMIT ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]
    for r in range(16):
        out.append(f"{r}: [rank{r}]:[{glog('E', tl + timedelta(seconds=5, milliseconds=r), 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5")
    out += ["srun: error: gpu-f02: tasks 8-15: Killed", "srun: error: gpu-f01: tasks 0-7: Terminated"]
    w(b, "logs/slurm-400222.out", "\n".join(out))


# ---------------------------------------------------------------- b11
def b11():
    b = "b11_app_error_elastic_names_victim"
    fresh(b, "category: application_error\nnode: gpu-h05\nrank: 37\n")
    start = datetime(2024, 4, 2, 13, 0, 0)
    err = datetime(2024, 4, 2, 14, 31, 55)
    end = err + timedelta(minutes=10, seconds=20)
    incident(b, "99102", start, end + timedelta(minutes=5), "America/Chicago")
    nodes = [f"gpu-h0{i}" for i in range(1, 9)]
    w(b, "slurm/sacct.txt", sacct("99102", "moe", "FAILED", "1:0", "gpu-h[01-08]", start, end, batch_node="gpu-h01"))
    for ni, n in enumerate(nodes):
        tee = []
        for lr in range(8):
            g = ni * 8 + lr
            tee += [f"[default{lr}]:{l}" for l in train_lines("", start + timedelta(minutes=1), 20, g, every=240)]
            if g == 37:
                tee += [f"[default{lr}]:[rank{g}]: Traceback (most recent call last):",
                        f'[default{lr}]:[rank{g}]:   File "/work/moe/router.py", line 140, in forward',
                        f"[default{lr}]:[rank{g}]:     expert_out = torch.cat(chunks, dim=0).view(bsz, seq, -1)",
                        f"[default{lr}]:[rank{g}]: RuntimeError: shape '[8, 4096, -1]' is invalid for input of size 33423360"]
            else:
                tee += watchdog(f"[default{lr}]:[rank{g}]:", g, err + timedelta(minutes=10, milliseconds=g), 120455, op="ALLTOALL_BASE")
        if n == "gpu-h05":
            tee.append(elastic_failed(err + timedelta(seconds=2), 5, 1, 700037))
            tee += child_failed("moe_train.py", err + timedelta(seconds=2), n, 37, 5, 1, 700037)
        else:
            tee.append(elastic_failed(err + timedelta(minutes=10, seconds=3), 0, -6, 700000 + ni))
            tee += child_failed("moe_train.py", err + timedelta(minutes=10, seconds=3), n, ni * 8, 0, -6, 700000 + ni)
        w(b, f"nodes/{n}/moe_train.log", "\n".join(tee))
    # the first node's summary is also copied as the job's main output: names rank 0 (a victim)
    w(b, "logs/slurm-99102.out", "\n".join(child_failed("moe_train.py", err + timedelta(minutes=10, seconds=3), "gpu-h01", 0, 0, -6, 700000)))


# ---------------------------------------------------------------- b12
def b12():
    b = "b12_gpu_oom_with_later_host_oom_decoy"
    fresh(b, "category: gpu_oom\nnode: gpu-k02\nrank: 9\n")
    start = datetime(2024, 3, 20, 6, 0, 0)
    oom = datetime(2024, 3, 20, 7, 15, 2)
    end = oom + timedelta(minutes=10, seconds=30)
    incident(b, "314159", start, end + timedelta(minutes=5), "Australia/Sydney")
    w(b, "slurm/sacct.txt", sacct("314159", "diffusion", "FAILED", "1:0", "gpu-k[01-04]", start, end, batch_node="gpu-k01"))
    for i in range(1, 5):
        n = f"gpu-k0{i}"
        fmt = lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S}+1100 {n}.syd.example.com kernel: {m}"
        lines = kern_boot_noise(fmt, start)
        if n == "gpu-k04":  # decoy: after the job died, the host reaps a leaked dataloader
            t = oom + timedelta(minutes=10, seconds=20)
            lines += [fmt(t, "pt_data_worker invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"),
                      fmt(t, "Out of memory: Killed process 99812 (pt_data_worker) total-vm:402112344kB, anon-rss:380120004kB, file-rss:1024kB, shmem-rss:0kB, UID:1003 pgtables:760112kB oom_score_adj:0")]
        w(b, f"nodes/{n}/kern.log", "\n".join(lines))
    for r in range(32):
        p = f"[rank{r}]:"
        if r == 9:
            lines = [f"{p}[rank9]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 has a total capacity of 79.11 GiB of which 6.50 MiB is free. Including non-PyTorch memory, this process has 79.09 GiB memory in use. Of the allocated memory 77.9 GiB is allocated by PyTorch, and 410.2 MiB is reserved by PyTorch but unallocated."]
        else:
            lines = train_lines("", start + timedelta(minutes=1), 75, r)
            lines += watchdog(p, r, oom + timedelta(minutes=10, milliseconds=r * 3), 7007)
        w(b, f"logs/rank{r}.log", "\n".join(lines))


def render(out: Path) -> None:
    """Write every scenario bundle (each with expected.txt) under `out`."""
    global R
    _, R = K.start(out, 7)
    for fn in (b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12):
        fn()


if __name__ == "__main__":
    import sys

    render(Path(sys.argv[1]))
