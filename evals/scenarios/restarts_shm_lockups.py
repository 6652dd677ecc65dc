"""Review scenarios, fifth round: torchelastic restarts, shared-memory bus errors, one-sided link faults,
late NodeNotReady, soft lockups, ECC storms, Tokyo asctime logs, a completed job with scary warnings;
hand-built by a reviewer in real formats, independent of evals/generator.py (see each_class_many_clocks.py)."""
# ruff: noqa
import json, random, shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from .helpers import F, HDR, Kit, jiso, kernel_noise, sacct_rows

UTC = timezone.utc
BUS = ["18000", "2a000", "3b000", "5d000", "9a000", "ab000", "ba000", "db000"]
K = Kit(0, glog="tid")
ROOT, R = K.root, K.rng
w, fresh, incident, glog, wd = K.w, K.fresh, K.incident, K.glog, K.wd
noise = kernel_noise


def nccl_init(host, pid, lr, rank, n):
    return K.nccl_init(host, pid, lr, rank, n, BUS[lr])

def pyl(t, lvl, msg, name="train"):
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond//1000:03d} - {lvl} - {name} - {msg}"

def ela(t, lvl, mod, msg):  # torchelastic's own logger format (PT 2.1-2.3)
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond//1000:03d}] {mod}: [{lvl}] {msg}"

def train(t0, n, every=60, step0=3000):
    return [pyl(t0 + timedelta(seconds=every*i, milliseconds=R.randint(1, 999)), "INFO", f"step {step0+i} | loss {2.1-i*0.003:.4f} | tokens/s {R.randint(9000,9900)}") for i in range(n)]

def oom_text(gpu):
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU {gpu} has a total capacity of 79.15 GiB of which 2.19 GiB is free. "
            "Including non-PyTorch memory, this process has 76.94 GiB memory in use. Of the allocated memory 71.20 GiB is allocated by PyTorch, and 4.21 GiB is reserved by PyTorch but unallocated. "
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")

def tb(msg, where="loss.backward()"):
    return ["Traceback (most recent call last):", '  File "/workspace/train.py", line 412, in <module>', "    main()",
            '  File "/workspace/train.py", line 371, in main', f"    {where}", msg]

# ---------------------------------------------------------------- 1 torchelastic restarts, two attempts in one file
def e01():
    b = "e01_elastic_restart_oom_twice"; fresh(b, "gpu_oom", "gpu-t02", "11")
    st = datetime(2024, 5, 1, 9, 0, 0); job = "77120"
    incident(b, job, st, st + timedelta(hours=2))
    nodes = ["gpu-t01", "gpu-t02"]; n = 16
    end = st + timedelta(minutes=47)
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "pretrain", "FAILED", "1:0", "gpu-t[01-02]", st, end, batch="gpu-t01"))
    for ni, h in enumerate(nodes):
        L = []
        attempts = [(st + timedelta(minutes=1), st + timedelta(minutes=20, seconds=13, microseconds=412000)),
                    (st + timedelta(minutes=21, seconds=30), st + timedelta(minutes=45, seconds=2, microseconds=118000))]
        L.append(ela(st, "WARNING", "torch.distributed.run", "\n*****************************************\nSetting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. \n*****************************************"))
        for ai, (a0, af) in enumerate(attempts):
            L.append(ela(a0 - timedelta(seconds=5), "INFO", "torch.distributed.elastic.agent.server.api", f"[default] Starting worker group"))
            pids = {lr: 40100 + ai * 100 + lr for lr in range(8)}
            for lr in range(8):
                r = ni * 8 + lr; p = f"[default{lr}]:"
                L += [p + x for x in nccl_init(h, pids[lr], lr, r, n)]
                L += [p + x for x in train(a0 + timedelta(seconds=30), 3, every=120, step0=1000 if ai == 0 else 950)]
            if h == "gpu-t02":
                L += [f"[default3]:{x}" for x in [pyl(af - timedelta(milliseconds=40), "INFO", "step 1163 | loss 1.9112 | tokens/s 9420")] + tb(oom_text(3))]
                culprit_pid = pids[3]
                L.append(ela(af + timedelta(seconds=2), "WARNING", "torch.distributed.elastic.multiprocessing.api", f"Sending process {pids[0]} closing signal SIGTERM"))
                L.append(ela(af + timedelta(seconds=3), "ERROR", "torch.distributed.elastic.multiprocessing.api", f"failed (exitcode: 1) local_rank: 3 (pid: {culprit_pid}) of binary: /usr/bin/python"))
            else:
                for lr in range(8):
                    r = lr
                    L += [f"[default{lr}]:{x}" for x in wd(r, af + timedelta(minutes=0, seconds=1 + lr), 24012 if ai == 0 else 21077)]
                L.append(ela(af + timedelta(seconds=12), "WARNING", "torch.distributed.elastic.multiprocessing.api", f"Sending process {pids[1]} closing signal SIGTERM"))
                L.append(ela(af + timedelta(seconds=13), "ERROR", "torch.distributed.elastic.multiprocessing.api", f"failed (exitcode: -6) local_rank: 0 (pid: {pids[0]}) of binary: /usr/bin/python"))
            if ai == 0:
                L.append(ela(af + timedelta(seconds=14), "INFO", "torch.distributed.elastic.agent.server.api", "[default] Worker group FAILED. 2/2 attempts left; will restart worker group"))
                L.append(ela(af + timedelta(seconds=14), "INFO", "torch.distributed.elastic.agent.server.api", "[default] Stopping worker group"))
                L.append(ela(af + timedelta(seconds=15), "INFO", "torch.distributed.elastic.agent.server.api", "[default] Rendezvous'ing worker group"))
        lr0 = 3 if h == "gpu-t02" else 0; rr = ni * 8 + lr0; code = 1 if h == "gpu-t02" else -6
        ft = attempts[1][1] + timedelta(seconds=3 if h == "gpu-t02" else 13)
        L += ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
              "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "============================================================",
              "train.py FAILED", "------------------------------------------------------------", "Failures:", "  <NO_OTHER_FAILURES>",
              "------------------------------------------------------------", "Root Cause (first observed failure):", "[0]:",
              f"  time      : {ft:%Y-%m-%d_%H:%M:%S}", f"  host      : {h}", f"  rank      : {rr} (local_rank: {lr0})",
              f"  exitcode  : {code} ({'pid' if code == 1 else 'pid'}: {40200 + lr0})", "  error_file: <N/A>",
              "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "============================================================"]
        w(b, f"logs/torchrun-{h}.log", L)

# ---------------------------------------------------------------- 2 DataLoader bus error (shm)
def d02():
    b = "d02_dataloader_bus_error_shm"; fresh(b, "host_oom", "dgx-s02", "9")
    st = datetime(2024, 7, 9, 14, 0, 0); job = "310044"
    incident(b, job, st, st + timedelta(hours=1))
    nodes = ["dgx-s01", "dgx-s02"]; n = 16; tf = st + timedelta(minutes=18, seconds=4, microseconds=220000)
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "vit", "FAILED", "1:0", "dgx-s[01-02]", st, tf + timedelta(minutes=11), batch="dgx-s01"))
    for h in nodes: w(b, f"nodes/{h}/kern.log", noise(jiso(h), st))
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8; p = f"[rank{r}]:"
        L = nccl_init(h, 51000 + r, lr, r, n) + train(st + timedelta(minutes=1), 4, every=240)
        if r == 9:
            L += ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
                  "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
                  "Traceback (most recent call last):",
                  '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line 1132, in _try_get_data',
                  "    data = self._data_queue.get(timeout=timeout)",
                  '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler',
                  "    _error_if_any_worker_fails()",
                  "RuntimeError: DataLoader worker (pid 61733) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
                  "", "The above exception was the direct cause of the following exception:", "",
                  "Traceback (most recent call last):", '  File "/workspace/train.py", line 288, in <module>', "    main()",
                  '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line 1145, in _try_get_data',
                  "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e",
                  "RuntimeError: DataLoader worker (pid(s) 61733) exited unexpectedly"]
            L.insert(-20, pyl(tf, "INFO", "epoch 3 begins"))
        else:
            L += wd(r, tf + timedelta(minutes=10, milliseconds=5 * r), 40991)
        w(b, f"logs/rank{r}.log", [p + x for x in L])

# ---------------------------------------------------------------- 3 network partition: IB retry exceeded from two nodes, link down on one
def n03():
    b = "n03_ib_retry_exc_link_down_one_side"; fresh(b, "network_fault", "gpu-n02", "-")
    st = datetime(2024, 8, 2, 3, 0, 0); job = "88412"
    incident(b, job, st, st + timedelta(hours=1))
    nodes = ["gpu-n01", "gpu-n02", "gpu-n03"]; ips = {"gpu-n01": "10.40.1.11", "gpu-n02": "10.40.1.12", "gpu-n03": "10.40.1.13"}
    n = 24; tl = st + timedelta(minutes=27, seconds=10, microseconds=500000); te = tl + timedelta(seconds=3, microseconds=100000)
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "moe", "FAILED", "1:0", "gpu-n[01-03]", st, te + timedelta(minutes=2), batch="gpu-n01"))
    for h in nodes:
        K = noise(jiso(h), st)
        if h == "gpu-n02":
            K += [jiso(h)(tl, "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN"),
                  jiso(h)(tl + timedelta(microseconds=300), "mlx5_core 0000:0c:00.0: mlx5_cmd_out_err:838:(pid 0): Port 1 link down"),
                  jiso(h)(tl + timedelta(milliseconds=2), "ib0: carrier lost")]
        w(b, f"nodes/{h}/kern.log", K)
    # srun -l combined log
    L = []
    for r in range(n):
        h = nodes[r // 8]; L += [f"{r}: {x}" for x in nccl_init(h, 62000 + r, r % 8, r, n)]
    for r in range(n):
        L += [f"{r}: {x}" for x in train(st + timedelta(minutes=2), 3, every=300)[:1]]
    pairs = [(8, "gpu-n01", "gpu-n02"), (0, "gpu-n02", "gpu-n01")]  # rank on node A names peer on node B
    for r, peer_of, me in [(0, "gpu-n02", "gpu-n01"), (8, "gpu-n01", "gpu-n02")]:
        pid = 62000 + r; t = te + timedelta(milliseconds=10 if r == 0 else 30)
        L += [f"{r}: {me}:{pid}:{pid+70} [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer {ips[peer_of]}<{40000+r}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{ips[me]} remoteGids::ffff:{ips[peer_of]} hca mlx5_0",
              f"{r}: {me}:{pid}:{pid+70} [0] NCCL INFO transport/net.cc:1302 -> 6",
              f"{r}: {me}:{pid}:{pid+70} [0] NCCL INFO proxy.cc:698 -> 6",
              f"{r}: {me}:{pid}:{pid+70} [0] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]
        L += [f"{r}: [{glog('E', t + timedelta(seconds=1), 'ProcessGroupNCCL.cpp:1413')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
              f"{r}: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
              f"{r}: Last error:", f"{r}: NET/IB : Got completion from peer {ips[peer_of]}<{40000+r}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{ips[me]} remoteGids::ffff:{ips[peer_of]} hca mlx5_0"]
    for r in range(n):
        if r in (0, 8): continue
        L += [f"{r}: {x}" for x in wd(r, te + timedelta(minutes=10, milliseconds=4 * r), 71233)]
    w(b, "logs/job-88412.out", L)

# ---------------------------------------------------------------- 4 k8s node lost; Ready=Unknown 40 s after pods go silent
def k04():
    b = "k04_k8s_node_unknown_after_silence"; fresh(b, "node_failure", "gke-a3-pool-3", "-")
    job = "llama-sft"; ns = "train"
    nodes = [f"gke-a3-pool-{i}" for i in range(4)]
    st = datetime(2024, 9, 12, 6, 0, 0, tzinfo=UTC); last = st + timedelta(minutes=33, seconds=12, microseconds=340000)
    unk = last + timedelta(seconds=40)
    w(b, "incident.yaml", f'question: "why did pytorchjob {job} fail?"\njob: "{job}"\nwindow:\n  start: "{st:{F}}Z"\n  end: "{(st+timedelta(hours=1)):{F}}Z"\n')
    pods = []
    for i, h in enumerate(nodes):
        rtype = "Master" if i == 0 else "Worker"; idx = 0 if i == 0 else i - 1
        name = f"{job}-{rtype.lower()}-{idx}"
        if i == 3:
            cs = {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"running": {"startedAt": f"{st:{F}}Z"}}}
            phase = "Running"
        else:
            cs = {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": f"{st:{F}}Z", "finishedAt": f"{(last+timedelta(minutes=10, seconds=20)):{F}}Z"}}}
            phase = "Failed"
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                     "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": rtype.lower(), "training.kubeflow.org/replica-index": str(idx)},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job, "uid": "jobuid", "controller": True}]},
                     "spec": {"nodeName": h, "containers": [{"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:24.07-py3", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
                     "status": {"phase": phase, "hostIP": f"10.128.0.{10+i}", "podIP": f"10.4.{i}.5", "containerStatuses": [cs],
                                **({"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": f"{unk:{F}}Z"}]} if i == 3 else {})}})
        # pod logs with --timestamps, torchrun tee prefixes, ranks i*8..i*8+7
        L = []
        for lr in range(8):
            r = i * 8 + lr
            for x in nccl_init(f"{name}", 100 + lr, lr, r, 32):
                L.append(f"{(st+timedelta(seconds=40)).strftime(F)}.{R.randint(0,999999):06d}000Z [default{lr}]:{x}")
        tt = st + timedelta(minutes=1)
        while tt < last:
            L.append(f"{tt:{F}}.{tt.microsecond:06d}000Z [default0]:" + pyl(tt, "INFO", f"step {int((tt-st).total_seconds()//30)} | loss 1.73"))
            tt += timedelta(seconds=30)
        if i == 3:
            L.append(f"{last:{F}}.{last.microsecond:06d}000Z [default0]:" + pyl(last, "INFO", "step 67 | loss 1.72"))
        else:
            for lr in range(8):
                r = i * 8 + lr; t = last + timedelta(minutes=10, milliseconds=7 * r)
                L += [f"{t:{F}}.{t.microsecond:06d}000Z [default{lr}]:{x}" for x in wd(r, t, 8811)]
        w(b, f"logs/{name}.log", L)
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "List", "items": pods})
    nl = []
    for i, h in enumerate(nodes):
        if i == 3:
            conds = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
                      "lastHeartbeatTime": f"{(last - timedelta(seconds=2)):{F}}Z", "lastTransitionTime": f"{unk:{F}}Z"},
                     {"type": "MemoryPressure", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.",
                      "lastHeartbeatTime": f"{(last - timedelta(seconds=2)):{F}}Z", "lastTransitionTime": f"{unk:{F}}Z"}]
            taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": f"{unk:{F}}Z"},
                      {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": f"{(unk+timedelta(seconds=5)):{F}}Z"}]
        else:
            conds = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                      "lastHeartbeatTime": f"{(unk+timedelta(minutes=12)):{F}}Z", "lastTransitionTime": f"{(st-timedelta(days=3)):{F}}Z"}]
            taints = []
        nl.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": h, "labels": {"kubernetes.io/hostname": h}},
                   "spec": {"taints": taints} if taints else {},
                   "status": {"conditions": conds, "addresses": [{"type": "InternalIP", "address": f"10.128.0.{10+i}"}, {"type": "Hostname", "address": h}]}})
    w(b, "k8s/nodes.json", {"apiVersion": "v1", "kind": "List", "items": nl})
    ev = [{"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{nodes[3]}.17f1", "namespace": "default"},
           "involvedObject": {"kind": "Node", "name": nodes[3], "uid": nodes[3]}, "reason": "NodeNotReady", "message": f"Node {nodes[3]} status is now: NodeNotReady",
           "source": {"component": "node-controller"}, "firstTimestamp": f"{unk:{F}}Z", "lastTimestamp": f"{unk:{F}}Z", "count": 1, "type": "Normal"},
          {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-2.17f2", "namespace": ns},
           "involvedObject": {"kind": "Pod", "name": f"{job}-worker-2", "namespace": ns}, "reason": "NodeNotReady", "message": "Node is not ready",
           "source": {"component": "node-controller"}, "firstTimestamp": f"{(unk+timedelta(seconds=1)):{F}}Z", "lastTimestamp": f"{(unk+timedelta(seconds=1)):{F}}Z", "count": 1, "type": "Warning"},
          {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{job}-worker-2.17f3", "namespace": ns},
           "involvedObject": {"kind": "Pod", "name": f"{job}-worker-2", "namespace": ns}, "reason": "TaintManagerEviction", "message": f"Marking for deletion Pod {ns}/{job}-worker-2",
           "source": {"component": "taint-controller"}, "firstTimestamp": f"{(unk+timedelta(minutes=5, seconds=5)):{F}}Z", "lastTimestamp": f"{(unk+timedelta(minutes=5, seconds=5)):{F}}Z", "count": 1, "type": "Normal"}]
    w(b, "k8s/events.json", {"apiVersion": "v1", "kind": "List", "items": ev})

# ---------------------------------------------------------------- 5 soft lockup then silence + NODE_FAIL
def s05():
    b = "s05_soft_lockup_silence_node_fail"; fresh(b, "node_failure", "cn-h07", "-")
    st = datetime(2024, 3, 4, 20, 0, 0); job = "5590121"
    incident(b, job, st, st + timedelta(hours=3))
    nodes = ["cn-h05", "cn-h06", "cn-h07", "cn-h08"]; n = 32
    tl = st + timedelta(hours=1, minutes=12, seconds=31, microseconds=204000)
    nf = tl + timedelta(minutes=6, seconds=40)
    rows = [HDR, f"{job}|gpt-neox|NODE_FAIL|0:0|0:0|cn-h[05-08]|{st:{F}}|{nf:{F}}|01:19:11",
            f"{job}.batch|batch|CANCELLED|0:15||cn-h05|{st:{F}}|{nf:{F}}|01:19:11",
            f"{job}.extern|extern|CANCELLED||cn-h[05-08]|{st:{F}}|{nf:{F}}|01:19:11",
            f"{job}.0|python|CANCELLED|0:15||cn-h[05-08]|{(st+timedelta(seconds=4)):{F}}|{nf:{F}}|01:19:07"]
    w(b, "slurm/sacct.txt", rows)
    w(b, "slurm/sinfo_R.txt", ["REASON               USER      TIMESTAMP           NODELIST", f"Not responding       slurm     {nf:{F}} cn-h07"])
    for h in nodes:
        K = noise(jiso(h), st)
        if h == "cn-h07":
            fm = jiso(h)
            K += [fm(tl, "watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python:88123]"),
                  fm(tl, "Modules linked in: nvidia_uvm(POE) nvidia_drm(POE) nvidia_modeset(POE) mlx5_ib ib_uverbs mlx5_core nvidia(POE)"),
                  fm(tl, "CPU: 12 PID: 88123 Comm: python Tainted: P           OE     5.15.0-105-generic #115-Ubuntu"),
                  fm(tl, "RIP: 0010:native_queued_spin_lock_slowpath+0x13e/0x2a0"),
                  fm(tl + timedelta(seconds=28), "watchdog: BUG: soft lockup - CPU#12 stuck for 48s! [python:88123]"),
                  fm(tl + timedelta(seconds=40), "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:")]
        w(b, f"nodes/{h}/kern.log", K)
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8
        L = nccl_init(h, 30000 + r, lr, r, n) + train(st + timedelta(minutes=1), 10, every=420)
        if h != "cn-h07":
            L += wd(r, tl + timedelta(minutes=10, seconds=2, milliseconds=3 * r), 130554)
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:{x}" for x in L])

# ---------------------------------------------------------------- 6 ECC DBE Xid 48 on one GPU, Xid 13 on another node later
def x06():
    b = "x06_xid48_dbe_then_xid13_elsewhere"; fresh(b, "gpu_hardware", "gpu-e03", "18")
    st = datetime(2024, 11, 20, 1, 0, 0); job = "901200"
    incident(b, job, st, st + timedelta(hours=2))
    nodes = ["gpu-e01", "gpu-e02", "gpu-e03", "gpu-e04"]; n = 32
    tx = st + timedelta(minutes=52, seconds=8, microseconds=111000)
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "llm", "FAILED", "1:0", "gpu-e[01-04]", st, tx + timedelta(minutes=11), batch="gpu-e01"))
    for h in nodes:
        fm = jiso(h); K = noise(fm, st)
        if h == "gpu-e03":
            for k in range(6):
                K.append(fm(tx + timedelta(milliseconds=150 * k), f"NVRM: Xid (PCI:0000:3b:00): 48, pid=7{7100+k}, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."))
            K.append(fm(tx + timedelta(seconds=1), "NVRM: Xid (PCI:0000:3b:00): 63, pid=77100, name=python, Row Remapper: New row (0x00000000000a5c31) marked for remapping, reset gpu to activate."))
        if h == "gpu-e01":
            K.append(fm(tx + timedelta(seconds=4), "NVRM: Xid (PCI:0000:5d:00): 13, pid=70003, name=python, Graphics SM Warp Exception on (GPC 4, TPC 1, SM 1): Out Of Range Address"))
            K.append(fm(tx + timedelta(seconds=4), "NVRM: Xid (PCI:0000:5d:00): 13, pid=70003, name=python, Graphics Exception: ESR 0x524730=0x201000e 0x524734=0x24"))
        w(b, f"nodes/{h}/kern.log", K)
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8
        L = nccl_init(h, 70000 + r, lr, r, n) + train(st + timedelta(minutes=1), 6, every=480)
        if r == 18:
            L += [pyl(tx - timedelta(seconds=1), "INFO", "step 3104")] + tb("RuntimeError: CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
        elif r == 3:
            L += [pyl(tx + timedelta(seconds=4, milliseconds=500), "INFO", "step 3104")] + tb("RuntimeError: CUDA error: an illegal memory access was encountered")
        else:
            L += wd(r, tx + timedelta(minutes=10, milliseconds=4 * r), 77012)
        out = []
        for x in L: out += [f"[rank{r}]:{y}" for y in x.split("\n")]
        w(b, f"logs/rank{r}.log", out)

# ---------------------------------------------------------------- 7 .out files <job>.<node>.<rank>.out, asctime default, Asia/Tokyo
def t07():
    b = "t07_out_files_tokyo_asctime"; fresh(b, "application_error", "a100-k02", "13")
    tz = ZoneInfo("Asia/Tokyo"); job = "240501"
    st = datetime(2024, 5, 1, 10, 0, 0)  # local JST
    tf = st + timedelta(minutes=42, seconds=7, microseconds=123000)
    incident(b, job, st, st + timedelta(hours=2), tz="Asia/Tokyo")
    nodes = ["a100-k01", "a100-k02"]; n = 16
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "sft", "FAILED", "1:0", "a100-k[01-02]", st, tf + timedelta(minutes=10, seconds=30), batch="a100-k01"))
    # kernel logs in UTC with +0000; decoy host OOM on a100-k01 at 01:50Z (= 10:50 JST, AFTER the 10:42 JST error)
    for h in nodes:
        fm = jiso(h); su = st.replace(tzinfo=tz).astimezone(UTC).replace(tzinfo=None); K = noise(fm, su)
        if h == "a100-k01":
            d = (tf + timedelta(minutes=8)).replace(tzinfo=tz).astimezone(UTC).replace(tzinfo=None)
            K += [fm(d, "python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"),
                  fm(d, "Out of memory: Killed process 99120 (python) total-vm:812331220kB, anon-rss:502341232kB, file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:1001232kB oom_score_adj:0")]
        w(b, f"nodes/{h}/kern.log", K)
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8
        L = [f"{st + timedelta(seconds=3):%Y-%m-%d %H:%M:%S},{R.randint(100,999)} - root - INFO - rank {r} on {h} local_rank {lr}"]
        L += nccl_init(h, 20000 + r, lr, r, n)
        for i in range(5):
            t = st + timedelta(minutes=1 + 8 * i, milliseconds=R.randint(0, 999))
            L.append(f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond//1000:03d} - __main__ - INFO - step {200+i*50} loss {1.9-i*0.01:.3f}")
        if r == 13:
            L.append(f"{tf:%Y-%m-%d %H:%M:%S},{tf.microsecond//1000:03d} - __main__ - ERROR - failed to load batch from shard /data/shards/train-00412.arrow")
            L += tb("KeyError: 'input_ids'", where="batch = next(it)")
        else:
            t = tf + timedelta(minutes=10, milliseconds=5 * r)
            L += wd(r, t, 5521)  # glog prints local time too
        w(b, f"logs/{job}.{h}.{r}.out", L)

# ---------------------------------------------------------------- 8 COMPLETED with scary warnings
def c08():
    b = "c08_completed_with_scary_warnings"; fresh(b, "unknown", "-", "-")
    st = datetime(2024, 6, 14, 2, 0, 0); job = "612300"; end = st + timedelta(hours=5, minutes=3)
    incident(b, job, st, end + timedelta(minutes=5))
    nodes = ["gpu-w01", "gpu-w02"]; n = 16
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "finetune", "COMPLETED", "0:0", "gpu-w[01-02]", st, end, step_state="COMPLETED", step_code="0:0", batch="gpu-w01"))
    for h in nodes:
        fm = jiso(h); K = noise(fm, st)
        K.append(fm(st + timedelta(hours=2), "NVRM: Xid (PCI:0000:2a:00): 63, pid=1, name=nvidia-smi, Row Remapper: New row (0x0000000000012af0) marked for remapping, reset gpu to activate."))
        K.append(fm(end + timedelta(seconds=3), "python[21101]: segfault at 0 ip 00007f3a2b1c4e10 sp 00007ffd1c0d2a28 error 4 in libnccl-net.so[7f3a2b1a0000+40000] likely on CPU 33 (core 5, socket 0)") if h == "gpu-w02" else fm(end, "hrtimer: interrupt took 11022 ns"))
        w(b, f"nodes/{h}/kern.log", K)
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8
        L = nccl_init(h, 21000 + r, lr, r, n)
        L.append(f"/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.")
        L += train(st + timedelta(minutes=1), 5, every=3600)
        if r == 0:
            t = st + timedelta(hours=1, minutes=3)
            L += [pyl(t, "WARNING", "OOM at micro-batch 16 (CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.15 GiB); retrying step 2210 with micro-batch 8"),
                  pyl(t + timedelta(minutes=20), "ERROR", "wandb upload failed, will retry"), "Traceback (most recent call last):",
                  '  File "/usr/local/lib/python3.10/dist-packages/wandb/sdk/internal/internal_api.py", line 366, in execute', "    return self.client.execute(*args, **kwargs)",
                  "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.wandb.ai', port=443): Max retries exceeded with url: /graphql (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f1c2a3b4c10>: Failed to establish a new connection: [Errno 110] Connection timed out'))",
                  pyl(t + timedelta(minutes=21), "INFO", "wandb upload succeeded"),
                  pyl(end - timedelta(minutes=1), "INFO", "training finished; saved checkpoint to /ckpt/final")]
        L.append(f"{h}:{21000+r}:{21080+r} [{lr}] NCCL INFO [Service thread] Connection closed by localRank {lr}")
        L.append(f"{h}:{21000+r}:{21080+r} [{lr}] NCCL WARN [Service thread] Accept failed Resource temporarily unavailable")
        L.append(f"[{glog('W', end - timedelta(seconds=2), 'ProcessGroupNCCL.cpp:1168')}] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare cases this process can exit before this point and block the progress of another member of the process group. This constraint has always been present,  but this warning has only recently been added. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())")
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:{x}" for x in L])

# ---------------------------------------------------------------- 9 OOM on rank 0 in eval; others' DistBackendError mention "CUDA out of memory"
def o09():
    b = "o09_eval_oom_rank0_backenderr_mentions_oom"; fresh(b, "gpu_oom", "gpu-v01", "0")
    st = datetime(2024, 10, 8, 16, 0, 0); job = "733001"
    incident(b, job, st, st + timedelta(hours=1))
    nodes = ["gpu-v01", "gpu-v02"]; n = 16; tf = st + timedelta(minutes=30, seconds=0, microseconds=500000)
    w(b, "slurm/sacct.txt", [HDR] + sacct_rows(job, "eval-llm", "FAILED", "1:0", "gpu-v[01-02]", st, tf + timedelta(minutes=2), batch="gpu-v01"))
    for r in range(n):
        h = nodes[r // 8]; lr = r % 8
        L = nccl_init(h, 81000 + r, lr, r, n) + train(st + timedelta(minutes=1), 4, every=420)
        L.append(pyl(tf - timedelta(seconds=3), "INFO", "running evaluation on 2000 samples"))
        if r == 0:
            L += tb(oom_text(0), where="logits = model(**batch).logits")
        else:
            t = tf + timedelta(seconds=2, milliseconds=11 * r)
            L += [f"[{glog('E', t, 'ProcessGroupNCCL.cpp:1390')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5"]
            L += tb(f"torch.distributed.DistBackendError: NCCL communicator was aborted on rank {r}. Original reason for failure was: [Rank 0] exited with error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 2.19 GiB is free.",
                    where="dist.all_gather_object(gathered, preds)")
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:{x}" for x in L])

# ---------------------------------------------------------------- 10 torchelastic restarts on k8s-less Slurm, OOM but DIFFERENT rank in attempt 1? (variant) -> bus error on k8s pod
def b10():
    b = "b10_k8s_shm_bus_error_pod"; fresh(b, "host_oom", "gke-h100-1", "1")
    job = "vit-pretrain"; ns = "ml"; nodes = ["gke-h100-0", "gke-h100-1"]
    st = datetime(2024, 12, 2, 11, 0, 0, tzinfo=UTC); tf = st + timedelta(minutes=14, seconds=9, microseconds=881000)
    w(b, "incident.yaml", f'question: "why did {job} crash?"\njob: "{job}"\nwindow:\n  start: "{st:{F}}Z"\n  end: "{(st+timedelta(hours=1)):{F}}Z"\n')
    pods = []
    for i, h in enumerate(nodes):
        name = f"{job}-worker-{i}"
        cs = {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": f"{st:{F}}Z", "finishedAt": f"{(tf+timedelta(seconds=3 if i == 1 else 610)):{F}}Z"}}}
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": str(i)}},
                     "spec": {"nodeName": h, "containers": [{"name": "pytorch", "env": [{"name": "PET_NPROC_PER_NODE", "value": "1"}, {"name": "WORLD_SIZE", "value": "2"}], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                     "status": {"phase": "Failed", "containerStatuses": [cs]}})
        L = [f"{(st+timedelta(seconds=20)):{F}}.000000000Z " + x for x in nccl_init(name, 77, 0, i, 2)]
        L += [f"{(st+timedelta(minutes=k)):{F}}.100000000Z " + pyl(st + timedelta(minutes=k), "INFO", f"step {k*10}") for k in range(1, 14)]
        if i == 1:
            msgs = ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
                    "Traceback (most recent call last):",
                    '  File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1243, in _try_get_data',
                    "    data = self._data_queue.get(timeout=timeout)",
                    "RuntimeError: DataLoader worker (pid 412) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."]
            L += [f"{(tf+timedelta(milliseconds=k)):{F}}.{(tf+timedelta(milliseconds=k)).microsecond:06d}000Z {m}" for k, m in enumerate(msgs)]
        else:
            t = tf + timedelta(minutes=10)
            L += [f"{t:{F}}.{t.microsecond:06d}000Z {x}" for x in wd(0, t, 4410)]
        w(b, f"logs/{name}.log", L)
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "List", "items": pods})

ALL = (e01, d02, n03, k04, s05, x06, t07, c08, o09, b10)

def render(out: Path) -> None:
    global ROOT, R
    ROOT, R = K.start(out, 5); ROOT.mkdir(parents=True, exist_ok=True)
    for f in ALL: f()

if __name__ == "__main__":
    render(Path("/tmp/adv5"))
