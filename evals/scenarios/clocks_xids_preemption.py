"""Review scenarios, fourth round: clocks (short-precise, two boots, +0530), Xid 154/31/43/45, PyTorchJob
master/workers, preemption on Kubernetes, requeued Slurm jobs, metrics-only evidence; hand-built by a reviewer in
real formats, independent of evals/generator.py (see each_class_many_clocks.py)."""
# ruff: noqa
import json, random, shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from .helpers import F, HDR, Kit, jiso, kernel_noise, sacct_rows

UTC = timezone.utc
BUS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]
PCI = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
K = Kit(0, lists_as="json")
ROOT, R = K.root, K.rng
w, fresh, incident, glog, train, wd = K.w, K.fresh, K.incident, K.glog, K.train, K.wd
noise = kernel_noise


def nccl_init(host, pid, lr, rank, n):
    return K.nccl_init(host, pid, lr, rank, n, BUS[lr])


def jprecise(host):  # journalctl -k -o short-precise
    return lambda t, m: f"{t:%b %d %H:%M:%S}.{t.microsecond:06d} {host} kernel: {m}"


def cuda_tb(rank, msg, where="loss.backward()"):
    return [f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/workspace/train.py", line 412, in <module>',
            f"[rank{rank}]:     main()",
            f'[rank{rank}]:   File "/workspace/train.py", line 371, in main',
            f"[rank{rank}]:     {where}",
            f"[rank{rank}]: {msg}"]


def ranklogs(b, nodes, gpn, t0, tfail, culprit_lines=None, victim_seq=88213, skip=(), every=300):
    """Per-rank files with [rankN]: prefixes; non-culprits time out 10 min after tfail."""
    n = len(nodes) * gpn
    for r in range(n):
        h = nodes[r // gpn]; lr = r % gpn
        L = nccl_init(h, 41000 + r, lr, r, n) + train(t0 + timedelta(minutes=1), 3, every)
        L = [f"[rank{r}]:{x}" for x in L]
        if culprit_lines and r in culprit_lines:
            L += culprit_lines[r]
        elif r not in skip:
            L += [f"[rank{r}]:{x}" for x in wd(r, tfail + timedelta(minutes=10, milliseconds=3 * r), victim_seq)]
        w(b, f"logs/rank{r}.log", "\n".join(L))


# ---------------------------------------------------------------- 1
def j01():  # journalctl -o short-precise, Xid 79 then Xid 154 Node Reboot Required; Chicago tz
    b = "j01_precise_xid79_xid154_chicago"
    fresh(b, "gpu_hardware", "gpu-c02", "13")
    tz = ZoneInfo("America/Chicago")
    st = datetime(2024, 10, 3, 8, 0, 0); x = datetime(2024, 10, 3, 9, 41, 7, 318221)  # local
    incident(b, "611402", st, x + timedelta(minutes=30), tz="America/Chicago")
    end = x + timedelta(minutes=10, seconds=20)
    nodes = ["gpu-c01", "gpu-c02"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("611402", "pt-llm", "FAILED", "1:0", "gpu-c[01-02]", st, end, batch="gpu-c01")))
    # kernel host clock local (journalctl prints local time)
    for h in nodes:
        fmt = jprecise(h); K = noise(fmt, st)
        if h == "gpu-c02":
            K += [fmt(x, "NVRM: GPU at PCI:0000:ab:00: GPU-5a0b7c1e-2f44-9d1e-81a3-0c3f0c1b2d77"),
                  fmt(x, "NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                  fmt(x + timedelta(microseconds=812), "NVRM: GPU 0000:ab:00.0: GPU has fallen off the bus."),
                  fmt(x + timedelta(seconds=1), "NVRM: Xid (PCI:0000:ab:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    # rank logs in local time too (python logging), glog local
    ranklogs(b, nodes, 8, st, x, culprit_lines={13: cuda_tb(13, "RuntimeError: CUDA error: unspecified launch failure")})


# ---------------------------------------------------------------- 2
def k02():  # /var/log/kern.log: syslog + [uptime], then reboot, raw dmesg lines appended (no syslog prefix)
    b = "k02_kernlog_two_boots_raw_after_reboot"
    fresh(b, "gpu_hardware", "gpu-b04", "11")
    st = datetime(2024, 7, 9, 1, 0, 0); x = datetime(2024, 7, 9, 2, 17, 44)
    end = x + timedelta(minutes=10, seconds=5)
    incident(b, "88120", st, end + timedelta(minutes=30))
    nodes = ["gpu-b03", "gpu-b04"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("88120", "ft", "FAILED", "1:0", "gpu-b[03-04]", st, end, batch="gpu-b03")))
    up0 = 1812233.0  # uptime at st
    def sl(t, m, h="gpu-b04"):
        up = up0 + (t - st).total_seconds()
        return f"{t:%b %e %H:%M:%S} {h} kernel: [{up:13.6f}] {m}"
    K = [sl(st + timedelta(minutes=3), "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"),
         sl(x, "NVRM: Xid (PCI:0000:5d:00): 48, pid=77120, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."),
         sl(x + timedelta(seconds=1), "NVRM: Xid (PCI:0000:5d:00): 95, pid=77120, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No")]
    # reboot 40 min later; post-reboot messages reached the file as raw console lines (rsyslog imklog w/o template)
    K += ["[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) #115-Ubuntu SMP",
          "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-5.15.0-105-generic root=UUID=3f1c ro",
          "[   41.221902] nvidia-nvlink: Nvlink Core is being initialized, major device number 511",
          "[   58.002113] Out of memory: Killed process 4412 (dcgm-diag) total-vm:81220412kB, anon-rss:60120004kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:120012kB oom_score_adj:0"]
    w(b, "nodes/gpu-b04/kern.log", "\n".join(K))
    w(b, "nodes/gpu-b03/kern.log", "\n".join([f"{st + timedelta(minutes=5):%b %e %H:%M:%S} gpu-b03 kernel: [{up0+300:13.6f}] hrtimer: interrupt took 30211 ns"]))
    ranklogs(b, nodes, 8, st, x, skip=set(range(8, 16)))


# ---------------------------------------------------------------- 3
def d03():  # dmesg --time-format iso with +05:30: Xid 79 local 15:42 IST = 10:12 UTC; later OOM decoy in UTC rank log
    b = "d03_dmesg_iso_ist_vs_later_oom"
    fresh(b, "gpu_hardware", "gpu-i02", "10")
    st = datetime(2024, 9, 2, 9, 0, 0)  # UTC
    x_local = datetime(2024, 9, 2, 15, 42, 10, 221981)  # IST
    x = x_local - timedelta(hours=5, minutes=30)
    oom = x + timedelta(minutes=6)
    end = oom + timedelta(minutes=1)
    incident(b, "33017", st, end + timedelta(minutes=20))
    nodes = ["gpu-i01", "gpu-i02"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("33017", "train", "FAILED", "1:0", "gpu-i[01-02]", st, end, batch="gpu-i01")))
    def di(t, m): return f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+05:30 {m}"
    w(b, "nodes/gpu-i02/dmesg.txt", "\n".join([
        di(x_local - timedelta(hours=2), "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"),
        di(x_local, "NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
        di(x_local, "NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.")]))
    w(b, "nodes/gpu-i01/dmesg.txt", di(x_local - timedelta(hours=1), "hrtimer: interrupt took 30211 ns"))
    oom_tb = [f"[rank3]:{l}" for l in train(oom - timedelta(seconds=1), 1)] + cuda_tb(3,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.19 GiB is free. Including non-PyTorch memory, this process has 77.90 GiB memory in use.")
    # rank 3 on gpu-i01 OOMs while its collectives are stuck (rank 10 of gpu-i02 gone)
    ranklogs(b, nodes, 8, st, x, culprit_lines={3: oom_tb}, skip={10})


# ---------------------------------------------------------------- 4
def x04():  # Xid 31 MMU fault naming python + Xid 43; illegal memory access traceback rank 21
    b = "x04_xid31_mmu_then_43_app"
    fresh(b, "application_error", "gpu-x03", "21")
    st = datetime(2024, 4, 22, 6, 0, 0); x = datetime(2024, 4, 22, 6, 51, 30, 120000)
    end = x + timedelta(minutes=10, seconds=5)
    incident(b, "72011", st, end + timedelta(minutes=10))
    nodes = ["gpu-x01", "gpu-x02", "gpu-x03"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("72011", "moe", "FAILED", "1:0", "gpu-x[01-03]", st, end, batch="gpu-x01")))
    for h in nodes:
        fmt = jiso(h); K = noise(fmt, st)
        if h == "gpu-x03":
            K += [fmt(x, "NVRM: Xid (PCI:0000:ab:00): 31, pid=52021, name=python3, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f2a_5c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"),
                  fmt(x + timedelta(seconds=1), "NVRM: Xid (PCI:0000:ab:00): 43, pid=52021, name=python3, Ch 00000010")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    tb = [f"[rank21]:{l}" for l in train(x - timedelta(seconds=2), 1)] + cuda_tb(21,
        "RuntimeError: CUDA error: an illegal memory access was encountered\n[rank21]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n[rank21]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1", where="out = moe_dispatch(x, topk_idx)")
    ranklogs(b, nodes, 8, st, x, culprit_lines={21: tb})


# ---------------------------------------------------------------- 5
def x05():  # Xid 79 on gpu-y03, then Xid 45 on every node (teardown) some within 1 s, gpu-y01 first in listing
    b = "x05_xid79_then_xid45_everywhere"
    fresh(b, "gpu_hardware", "gpu-y03", "18")
    st = datetime(2024, 6, 11, 20, 0, 0); x = datetime(2024, 6, 11, 22, 3, 12, 500000)
    end = x + timedelta(minutes=10, seconds=9)
    incident(b, "50410", st, end + timedelta(minutes=10))
    nodes = ["gpu-y01", "gpu-y02", "gpu-y03", "gpu-y04"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("50410", "run", "FAILED", "1:0", "gpu-y[01-04]", st, end, batch="gpu-y01")))
    for i, h in enumerate(nodes):
        fmt = jiso(h); K = noise(fmt, st)
        if h == "gpu-y03":
            K += [fmt(x, "NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")]
        # teardown at job kill: every GPU on every node prints Xid 45 (incl. y03's healthy GPUs)
        tk = end + timedelta(seconds=2)
        for g in range(8):
            if h == "gpu-y03" and g == 2:
                continue
            K.append(fmt(tk, f"NVRM: Xid (PCI:0000:{PCI[g]}:00): 45, pid={60000+i*100+g}, name=python, Ch 0000000{g}"))
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    ranklogs(b, nodes, 8, st, x, skip={18})


# ---------------------------------------------------------------- 6
def pod(name, node, rtype, idx, job, cstatus, phase="Failed", ns="train"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                         "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": rtype.lower(),
                                    "training.kubeflow.org/replica-index": str(idx), "training.kubeflow.org/operator-name": "pytorchjob-controller"},
                         "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job, "uid": "job-uid", "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:24.07-py3",
                     "env": [{"name": "MASTER_PORT", "value": "23456"}, {"name": "MASTER_ADDR", "value": f"{job}-master-0"},
                             {"name": "WORLD_SIZE", "value": "4"}, {"name": "PET_NPROC_PER_NODE", "value": "1"}],
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": phase, "containerStatuses": [cstatus]}}


def k06():  # PyTorchJob Master + 3 Workers; worker-1 (rank 2) restarted, lastState Error exit 1
    b = "k06_pytorchjob_master_worker_restart"
    fresh(b, "application_error", "gke-a3-pool-2", "2")
    job = "gpt-ft"; nodes = ["gke-a3-pool-0", "gke-a3-pool-1", "gke-a3-pool-2", "gke-a3-pool-3"]
    t0 = datetime(2024, 8, 20, 3, 0, 0, tzinfo=UTC); tf = datetime(2024, 8, 20, 3, 44, 2, tzinfo=UTC)
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
    items = []
    for i, (rt, idx) in enumerate([("Master", 0), ("Worker", 0), ("Worker", 1), ("Worker", 2)]):
        name = f"{job}-{rt.lower()}-{idx}"
        if (rt, idx) == ("Worker", 1):
            cs = {"name": "pytorch", "ready": False, "restartCount": 1,
                  "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": iso(tf + timedelta(seconds=20)), "finishedAt": iso(tf + timedelta(minutes=11))}},
                  "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": iso(t0), "finishedAt": iso(tf + timedelta(seconds=3)),
                                               "message": "ValueError: Tokenizer returned empty sequence for sample 188213"}}}
        else:
            cs = {"name": "pytorch", "ready": False, "restartCount": 0,
                  "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": iso(t0), "finishedAt": iso(tf + timedelta(minutes=10, seconds=4 + i))}}}
        items.append(pod(name, nodes[i], rt, idx, job, cs))
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
    ev = [{"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-1.17e1", "namespace": "train"},
           "involvedObject": {"kind": "Pod", "namespace": "train", "name": f"{job}-worker-1"}, "reason": "BackOff",
           "message": f"Back-off restarting failed container pytorch in pod {job}-worker-1_train(uid-{job}-worker-1)", "type": "Warning",
           "firstTimestamp": iso(tf + timedelta(seconds=5)), "lastTimestamp": iso(tf + timedelta(seconds=5)), "count": 1}]
    w(b, "k8s/events.json", {"apiVersion": "v1", "kind": "List", "items": ev})
    # kubectl logs --previous for worker-1 (no prefix), others current logs
    def tsl(t, s): return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}000Z {s}"
    prev = [tsl(t0 + timedelta(minutes=1), l) for l in train(t0 + timedelta(minutes=1), 2)] + [
        tsl(tf, "Traceback (most recent call last):"),
        tsl(tf, '  File "/workspace/train.py", line 212, in <module>'),
        tsl(tf, "    batch = next(it)"),
        tsl(tf, '  File "/workspace/data.py", line 88, in __iter__'),
        tsl(tf, "    raise ValueError(f\"Tokenizer returned empty sequence for sample {idx}\")"),
        tsl(tf, "ValueError: Tokenizer returned empty sequence for sample 188213")]
    w(b, f"logs/{job}-worker-1.previous.log", "\n".join(prev))
    for i, nm in enumerate([f"{job}-master-0", f"{job}-worker-0", f"{job}-worker-2"]):
        r = [0, 1, 3][i]
        L = [tsl(t0 + timedelta(minutes=1), l) for l in train(t0 + timedelta(minutes=1), 2)]
        L += [tsl(tf + timedelta(minutes=10), x) for x in wd(r, (tf + timedelta(minutes=10)).replace(tzinfo=None), 5521)]
        w(b, f"logs/{nm}.log", "\n".join(L))


# ---------------------------------------------------------------- 7
def k07():  # our pods fail with app error; the namespace's events also list Preempted victims of OTHER jobs
    b = "k07_app_error_other_pods_preempted"
    fresh(b, "application_error", "gke-h100-7", "1")
    job = "sft"; nodes = ["gke-h100-6", "gke-h100-7"]
    t0 = datetime(2024, 12, 2, 14, 0, 0, tzinfo=UTC); tf = datetime(2024, 12, 2, 14, 30, 9, tzinfo=UTC)
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
    items = []
    for i in range(2):
        rt, idx = ("Master", 0) if i == 0 else ("Worker", 0)
        code = 1
        term = {"exitCode": code, "reason": "Error", "startedAt": iso(t0), "finishedAt": iso(tf + timedelta(seconds=1 if i else 600))}
        if i == 1:
            term["message"] = "KeyError: 'input_ids'"
        items.append(pod(f"{job}-{rt.lower()}-{idx}", nodes[i], rt, idx, job, {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"terminated": term}}))
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "List", "items": items})
    ev = []
    # before our job started, its scheduling preempted low-priority batch pods (kube-scheduler wording)
    for j in range(3):
        victim = f"eval-sweep-{j}-x7k2p"
        ev.append({"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{victim}.181a", "namespace": "train"},
                   "involvedObject": {"kind": "Pod", "namespace": "train", "name": victim, "uid": f"v{j}"},
                   "reason": "Preempted", "message": f"Preempted by pod uid-{job}-worker-0 on node {nodes[1]}",
                   "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler", "type": "Normal",
                   "firstTimestamp": iso(t0 - timedelta(seconds=40)), "lastTimestamp": iso(t0 - timedelta(seconds=40)), "count": 1})
    ev.append({"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-0.1", "namespace": "train"},
               "involvedObject": {"kind": "Pod", "namespace": "train", "name": f"{job}-worker-0"}, "reason": "Scheduled",
               "message": f"Successfully assigned train/{job}-worker-0 to {nodes[1]}", "type": "Normal",
               "firstTimestamp": iso(t0 - timedelta(seconds=30)), "lastTimestamp": iso(t0 - timedelta(seconds=30))})
    w(b, "k8s/events.json", {"apiVersion": "v1", "kind": "List", "items": ev})
    def tsl(t, s): return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}000Z {s}"
    w(b, f"logs/{job}-worker-0.log", "\n".join([tsl(t0 + timedelta(minutes=2), l) for l in train(t0 + timedelta(minutes=2), 2)] + [
        tsl(tf, "Traceback (most recent call last):"), tsl(tf, '  File "/app/sft.py", line 90, in collate'),
        tsl(tf, "    ids = [ex['input_ids'] for ex in batch]"), tsl(tf, "KeyError: 'input_ids'")]))
    w(b, f"logs/{job}-master-0.log", "\n".join([tsl(t0 + timedelta(minutes=2), l) for l in train(t0 + timedelta(minutes=2), 2)] +
        [tsl(tf + timedelta(minutes=10), x) for x in wd(0, (tf + timedelta(minutes=10)).replace(tzinfo=None), 902)]))


# ---------------------------------------------------------------- 8
def s08():  # scontrol TIMEOUT Reason=TimeLimit, Slurm local IST, kernel UTC +0000: Xid 43 at teardown after limit
    b = "s08_scontrol_timeout_ist_kernel_utc"
    fresh(b, "time_limit", "-", "-")
    tz = ZoneInfo("Asia/Kolkata")
    st_l = datetime(2024, 3, 5, 6, 0, 0); end_l = datetime(2024, 3, 5, 12, 0, 3)
    end_u = end_l - timedelta(hours=5, minutes=30)
    incident(b, "412233", st_l - timedelta(minutes=5), end_l + timedelta(minutes=30), tz="Asia/Kolkata")
    w(b, "slurm/scontrol_job.txt", "\n".join([
        "JobId=412233 JobName=pretrain-13b",
        "   UserId=ml(1021) GroupId=ml(1021) MCS_label=N/A",
        "   Priority=4294901711 Nice=0 Account=research QOS=normal",
        "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)",
        "   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15",
        "   RunTime=06:00:03 TimeLimit=06:00:00 TimeMin=N/A",
        f"   SubmitTime={st_l - timedelta(minutes=2):{F}} EligibleTime={st_l - timedelta(minutes=2):{F}}",
        f"   AccrueTime={st_l - timedelta(minutes=2):{F}}",
        f"   StartTime={st_l:{F}} EndTime={end_l:{F}} Deadline=N/A",
        "   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2024-03-05T06:00:00",
        "   Partition=gpu AllocNode:Sid=login01:1882",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        "   NodeList=gpu-k[01-02]",
        "   BatchHost=gpu-k01",
        "   NumNodes=2 NumCPUs=192 NumTasks=2 CPUs/Task=96 ReqB:S:C:T=0:0:*:*",
        "   TRES=cpu=192,mem=1600G,node=2,billing=192,gres/gpu=16",
        "   Command=/home/ml/run.sbatch",
        "   WorkDir=/home/ml",
        "   StdErr=/home/ml/logs/412233.err",
        "   StdOut=/home/ml/logs/412233.out"]))
    # kernel logs in UTC; Xid 43 after the SIGTERM (process killed mid-kernel), 40s after limit
    for h in ("gpu-k01", "gpu-k02"):
        fmt = jiso(h); K = noise(fmt, end_u - timedelta(hours=3))
        if h == "gpu-k02":
            K += [fmt(end_u + timedelta(seconds=40), "NVRM: Xid (PCI:0000:9a:00): 43, pid=88123, name=python, Ch 00000018"),
                  fmt(end_u + timedelta(seconds=41), "NVRM: Xid (PCI:0000:9a:00): 31, pid=88123, name=python, Ch 00000018, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f11_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    # srun -l combined log in local time
    L = []
    for r in range(4):
        L += [f"{r}: {l}" for l in train(st_l + timedelta(minutes=1), 2, 3600)]
    L += [f"slurmstepd: error: *** STEP 412233.0 ON gpu-k01 CANCELLED AT {end_l:{F}} DUE TO TIME LIMIT ***",
          f"slurmstepd: error: *** JOB 412233 ON gpu-k01 CANCELLED AT {end_l:{F}} DUE TO TIME LIMIT ***",
          "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]
    w(b, "logs/412233.out", "\n".join(L))


# ---------------------------------------------------------------- 9
def s09():  # sacct -D: job 123 twice (PREEMPTED then requeued, FAILED); the failed run's culprit is rank 5 on gpu-r02
    b = "s09_sacct_requeued_preempt_then_fail"
    fresh(b, "application_error", "gpu-r02", "5")
    r1s = datetime(2024, 2, 1, 0, 10, 0); r1e = datetime(2024, 2, 1, 3, 22, 41)
    r2s = datetime(2024, 2, 1, 3, 30, 12); tf = datetime(2024, 2, 1, 5, 12, 7); r2e = tf + timedelta(minutes=10, seconds=8)
    incident(b, "123", r1s, r2e + timedelta(minutes=10))
    rows = [HDR,
            f"123|llm|PREEMPTED|0:0|0:0|gpu-r[01-02]|{r1s:{F}}|{r1e:{F}}|03:12:41",
            f"123.batch|batch|CANCELLED|0:15||gpu-r01|{r1s:{F}}|{r1e:{F}}|03:12:41",
            f"123.extern|extern|COMPLETED|0:0||gpu-r[01-02]|{r1s:{F}}|{r1e:{F}}|03:12:41",
            f"123.0|python|CANCELLED|0:15||gpu-r[01-02]|{r1s:{F}}|{r1e:{F}}|03:12:41"]
    rows += sacct_rows("123", "llm", "FAILED", "1:0", "gpu-r[02-03]", r2s, r2e, batch="gpu-r02")
    w(b, "slurm/sacct.txt", "\n".join(rows))
    w(b, "slurm/scontrol_job.txt", "\n".join([
        "JobId=123 JobName=llm", "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)",
        "   Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=1:0",
        f"   StartTime={r2s:{F}} EndTime={r2e:{F}} Deadline=N/A", "   NodeList=gpu-r[02-03]", "   BatchHost=gpu-r02"]))
    tb = [f"[rank5]:{l}" for l in train(tf - timedelta(seconds=30), 1)] + cuda_tb(5,
        "FileNotFoundError: [Errno 2] No such file or directory: '/lustre/ds/shard-01187.arrow'", where="sample = self.ds[idx]")
    ranklogs(b, ["gpu-r02", "gpu-r03"], 8, r2s, tf, culprit_lines={5: tb})


# ---------------------------------------------------------------- 10
def r10():  # rank 0 dies in checkpoint save; torchelastic on each node names another local rank as root cause
    b = "r10_rank0_ckpt_elastic_blames_others"
    fresh(b, "application_error", "gpu-e01", "0")
    st = datetime(2024, 5, 14, 10, 0, 0); tf = datetime(2024, 5, 14, 11, 0, 4, 551000)
    end = tf + timedelta(minutes=10, seconds=30)
    incident(b, "77001", st, end + timedelta(minutes=10))
    nodes = ["gpu-e01", "gpu-e02"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("77001", "ckpt", "FAILED", "1:0", "gpu-e[01-02]", st, end, batch="gpu-e01")))
    tb = [f"[rank0]:{l}" for l in train(tf - timedelta(seconds=5), 1)] + [
        f"[rank0]:{tf:%Y-%m-%d %H:%M:%S},{tf.microsecond//1000:03d} - INFO - train - saving checkpoint to /ckpt/step_3003",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/workspace/train.py", line 501, in save_checkpoint',
        "[rank0]:     torch.save(state, path)",
        '[rank0]:   File "/usr/local/lib/python3.10/dist-packages/torch/serialization.py", line 651, in save',
        "[rank0]:     with _open_zipfile_writer(f) as opened_zipfile:",
        "[rank0]: RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 2883623872 vs 2883623764"]
    ranklogs(b, nodes, 8, st, tf, culprit_lines={0: tb})
    # torchrun agent logs per node, naming the local rank whose watchdog abort came first
    for ni, h in enumerate(nodes):
        blame = 3 if ni == 0 else 6
        t = tf + timedelta(minutes=10, seconds=1)
        lines = [f"E{t:%m%d %H:%M:%S}.{t.microsecond:06d} 1402 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: {blame} (pid: {5100+blame}) of binary: /usr/bin/python",
                 "Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
                 "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                 "============================================================", "train.py FAILED",
                 "------------------------------------------------------------", "Failures:"]
        for lr in range(8):
            if lr == blame:
                continue
            code = 1 if (ni == 0 and lr == 0) else -6
            lines += [f"[{lr+1}]:", f"  time      : {t:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}", f"  rank      : {ni*8+lr} (local_rank: {lr})",
                      f"  exitcode  : {code} (pid: {5100+lr})", "  error_file: <N/A>",
                      "  traceback : " + ("To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" if code == 1 else f"Signal 6 (SIGABRT) received by PID {5100+lr}")]
        lines += ["------------------------------------------------------------", "Root Cause (first observed failure):", "[0]:",
                  f"  time      : {t:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}", f"  rank      : {ni*8+blame} (local_rank: {blame})",
                  f"  exitcode  : -6 (pid: {5100+blame})", "  error_file: <N/A>", f"  traceback : Signal 6 (SIGABRT) received by PID {5100+blame}",
                  "============================================================"]
        w(b, f"logs/torchrun_{h}.log", "\n".join(lines))


# ---------------------------------------------------------------- 11
def n11():  # NCCL WARN Cuda failure 'unspecified launch failure' + ncclInternalError on rank 13; Xid 79 on gpu-n02 same second
    b = "n11_nccl_cuda_failure_with_xid79"
    fresh(b, "gpu_hardware", "gpu-n02", "13")
    st = datetime(2024, 11, 19, 2, 0, 0); x = datetime(2024, 11, 19, 3, 33, 50, 100000)
    end = x + timedelta(minutes=1)
    incident(b, "90113", st, end + timedelta(minutes=10))
    nodes = ["gpu-n01", "gpu-n02"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("90113", "pt", "FAILED", "1:0", "gpu-n[01-02]", st, end, batch="gpu-n01")))
    for h in nodes:
        fmt = jiso(h); K = noise(fmt, st)
        if h == "gpu-n02":
            K += [fmt(x + timedelta(seconds=1), "NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    p = 41013
    cul = [f"[rank13]:{l}" for l in train(x - timedelta(seconds=10), 1)] + [
        f"[rank13]:gpu-n02:{p}:{p+61} [5] enqueue.cc:1556 NCCL WARN Cuda failure 'unspecified launch failure'",
        f"[rank13]:gpu-n02:{p}:{p+61} [5] NCCL INFO group.cc:231 -> 1",
        f"[rank13]:gpu-n02:{p}:{p+61} [5] NCCL INFO group.cc:486 -> 1",
        f"[rank13]: Traceback (most recent call last):",
        f'[rank13]:   File "/workspace/train.py", line 290, in step',
        f"[rank13]:     dist.all_reduce(grad, group=dp_group)",
        f"[rank13]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version 2.20.5",
        f"[rank13]: ncclInternalError: Internal check failed.",
        f"[rank13]: Last error:",
        f"[rank13]: Cuda failure 'unspecified launch failure'"]
    others = {}
    for r in range(16):
        if r == 13:
            continue
        h = nodes[r // 8]; pr = 41000 + r
        others[r] = [f"[rank{r}]:{h}:{pr}:{pr+61} [{r%8}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<41813> with status=12 opcode=129 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGidsfe80::1",
                     f"[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.20.5",
                     f"[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."]
    # remote errors land 3s after on everyone: prepend a time by placing a train line at x+3
    for r in others:
        others[r] = [f"[rank{r}]:{l}" for l in train(x + timedelta(seconds=3), 1)] + others[r]
    ranklogs(b, nodes, 8, st, x, culprit_lines={13: cul, **others})


# ---------------------------------------------------------------- 12
def m12():  # metrics only: DCGM exporter OpenMetrics with XID_ERRORS 79 on gpu-07 GPU 3, plus sacct FAILED
    b = "m12_dcgm_openmetrics_only"
    fresh(b, "gpu_hardware", "gpu-07", "-")
    st = datetime(2024, 1, 17, 4, 0, 0, tzinfo=UTC); x = datetime(2024, 1, 17, 5, 2, 30, tzinfo=UTC)
    end = x + timedelta(minutes=10, seconds=11)
    incident(b, "5520", st.replace(tzinfo=None), end.replace(tzinfo=None) + timedelta(minutes=10))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("5520", "train", "FAILED", "1:0", "gpu-[06-07]", st.replace(tzinfo=None), end.replace(tzinfo=None), batch="gpu-06")))
    L = ["# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.", "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    ts0 = int(st.timestamp())
    for k in range(0, int((end - st).total_seconds()) + 60, 30):
        tsv = ts0 + k
        for h in ("gpu-06", "gpu-07"):
            for g in range(8):
                v = 79 if (h == "gpu-07" and g == 3 and tsv >= x.timestamp()) else 0
                L.append(f'DCGM_FI_DEV_XID_ERRORS{{gpu="{g}",UUID="GPU-{g:02d}{h[-2:]}aa1c-7e3b-4c1d-9f0e-{g:04d}5b2c9a1e",pci_bus_id="00000000:{PCI[g].upper()}:00.0",device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="{h}",DCGM_FI_DRIVER_VERSION="535.161.08"}} {v} {tsv}')
    L.append("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).")
    L.append("# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
    for k in range(0, int((end - st).total_seconds()) + 60, 60):
        tsv = ts0 + k
        for h in ("gpu-06", "gpu-07"):
            for g in range(8):
                L.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-x{g}",Hostname="{h}"}} {0 if tsv > x.timestamp() else 97} {tsv}')
    L.append("# EOF")
    w(b, "metrics/dcgm.om", "\n".join(L))


# ---------------------------------------------------------------- 13
def s13():  # sinfo -R only, with NHC reason naming Xid on the bad node; culprit ranks print nothing
    b = "s13_sinfoR_nhc_xid_only"
    fresh(b, "gpu_hardware", "gpu-06", "-")
    st = datetime(2024, 8, 1, 0, 0, 0); x = datetime(2024, 8, 1, 1, 30, 0); end = x + timedelta(minutes=10, seconds=4)
    incident(b, "66120", st, end + timedelta(minutes=10))
    nodes = ["gpu-05", "gpu-06"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("66120", "tr", "FAILED", "1:0", "gpu-[05-06]", st, end, batch="gpu-05")))
    w(b, "slurm/sinfo_R.txt", "REASON               USER      TIMESTAMP           NODELIST\n"
      f"NHC: check_nv_smi_x root      {x + timedelta(minutes=2):{F}} gpu-06")
    ranklogs(b, nodes, 8, st, x, skip=set(range(8, 16)))


def k14():  # real k8s preemption of our worker pod
    b = "k14_k8s_our_pod_preempted"
    fresh(b, "preempted", "gke-h100-3", "1")
    job = "pre"; nodes = ["gke-h100-2", "gke-h100-3"]
    t0 = datetime(2024, 12, 5, 9, 0, 0, tzinfo=UTC); tf = datetime(2024, 12, 5, 9, 47, 31, tzinfo=UTC)
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
    items = []
    for i in range(2):
        rt, idx = ("Master", 0) if i == 0 else ("Worker", 0)
        if i == 1:
            term = {"exitCode": 143, "reason": "Error", "startedAt": iso(t0), "finishedAt": iso(tf + timedelta(seconds=30))}
        else:
            term = {"exitCode": 1, "reason": "Error", "startedAt": iso(t0), "finishedAt": iso(tf + timedelta(minutes=10))}
        p = pod(f"{job}-{rt.lower()}-{idx}", nodes[i], rt, idx, job, {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"terminated": term}})
        if i == 1:
            p["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                                          "message": "default-scheduler: preempting to accommodate a higher priority pod", "lastTransitionTime": iso(tf)}]
        items.append(p)
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "List", "items": items})
    ev = [{"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-0.1", "namespace": "train"},
           "involvedObject": {"kind": "Pod", "namespace": "train", "name": f"{job}-worker-0"}, "reason": "Preempted",
           "message": f"Preempted by pod 7c1e2a90-1b2c-4d5e-9f00-aa11bb22cc33 on node {nodes[1]}", "source": {"component": "default-scheduler"},
           "type": "Normal", "firstTimestamp": iso(tf), "lastTimestamp": iso(tf), "count": 1},
          {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-0.2", "namespace": "train"},
           "involvedObject": {"kind": "Pod", "namespace": "train", "name": f"{job}-worker-0"}, "reason": "Killing",
           "message": "Stopping container pytorch", "type": "Normal", "firstTimestamp": iso(tf), "lastTimestamp": iso(tf)}]
    w(b, "k8s/events.json", {"apiVersion": "v1", "kind": "List", "items": ev})
    def tsl(t, s): return f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}000Z {s}"
    w(b, f"logs/{job}-master-0.log", "\n".join([tsl(t0 + timedelta(minutes=2), l) for l in train(t0 + timedelta(minutes=2), 2)] +
        [tsl(tf + timedelta(minutes=10), x) for x in wd(0, (tf + timedelta(minutes=10)).replace(tzinfo=None), 1902)]))


def d15():  # dmesg iso with +0530 (no colon), like %z; OOM decoy 6 min later in UTC
    b = "d15_dmesg_iso_plus0530_nocolon"
    fresh(b, "gpu_hardware", "gpu-i02", "10")
    st = datetime(2024, 9, 2, 9, 0, 0)
    x_local = datetime(2024, 9, 2, 15, 42, 10, 221981); x = x_local - timedelta(hours=5, minutes=30)
    oom = x + timedelta(minutes=6); end = oom + timedelta(minutes=1)
    incident(b, "33018", st, end + timedelta(minutes=20))
    nodes = ["gpu-i01", "gpu-i02"]
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("33018", "train", "FAILED", "1:0", "gpu-i[01-02]", st, end, batch="gpu-i01")))
    def di(t, m): return f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+0530 {m}"
    w(b, "nodes/gpu-i02/dmesg.txt", "\n".join([di(x_local - timedelta(hours=2), "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"),
        di(x_local, "NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")]))
    oom_tb = [f"[rank3]:{l}" for l in train(oom - timedelta(seconds=1), 1)] + cuda_tb(3,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.19 GiB is free.")
    ranklogs(b, nodes, 8, st, x, culprit_lines={3: oom_tb}, skip={10})


_ALL = (j01, k02, d03, x04, x05, k06, k07, s08, s09, r10, n11, m12, s13, k14, d15)


def render(out: Path) -> None:
    global ROOT, R
    ROOT, R = K.start(out, 4044)
    for f in _ALL:
        f()


if __name__ == "__main__":
    import sys
    render(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/adv4/b"))
