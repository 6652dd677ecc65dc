"""Review scenarios: incident bundles hand-built by a reviewer in the formats real clusters
write (wording copied from public logs), independent of evals/generator.py, each with an
expected.txt. Regression cases for shapes the generator does not produce."""
# ruff: noqa

import gzip, json, random, shutil, tarfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from .helpers import Kit

UTC = timezone.utc
K = Kit(11, glog="tid")  # the output folder is set by render()
ROOT, R = K.root, K.rng
w, glog = K.w, K.glog


def fresh(b, exp):
    K.fresh_text(b, exp, beside=True)

def iso(t): return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
def pylog(t, lvl, msg, ms_sep=","): return f"{t:%Y-%m-%d %H:%M:%S}{ms_sep}{t.microsecond//1000:03d} - {lvl} - train - {msg}"

def nccl_init(host, pid, rank, n, dev):
    bus = ["1b000", "43000", "52000", "61000", "9d000", "c3000", "d1000", "df000"][dev]
    return f"{host}:{pid}:{pid} [{dev}] NCCL INFO comm 0x55d4c3a1e2b0 rank {rank} nranks {n} cudaDev {dev} nvmlDev {dev} busId {bus} commId 0x7f3c2a9b81d4e6f0 - Init COMPLETE"

def watchdog(pfx, rank, t, seq):
    return [f"{pfx}[{glog('E', t, 'ProcessGroupNCCL.cpp:616')}] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
            f"{pfx}[{glog('E', t+timedelta(milliseconds=3), 'ProcessGroupNCCL.cpp:1664')}] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq-1}.",
            f"{pfx}[{glog('E', t+timedelta(milliseconds=4), 'ProcessGroupNCCL.cpp:630')}] [Rank {rank}] To avoid data inconsistency, we are taking the entire process down."]

def train(pfx, t0, n, every=30, fmt=None):
    out = []
    for i in range(n):
        t = t0 + timedelta(seconds=every*i)
        out.append(pfx + (fmt(t) if fmt else pylog(t, "INFO", f"step {4000+i} loss {2.1-i*0.003:.4f} grad_norm 0.91 tok/s {R.randint(8000,9000)}")))
    return out

# ---------------------------------------------------------------- pods helpers
def pod(name, node, idx, rtype="Worker", job="llama70b", gpus=8, phase="Running", cstatus=None, ns="train"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                         "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": rtype.lower(),
                                    "training.kubeflow.org/replica-index": str(idx), "training.kubeflow.org/operator-name": "pytorchjob-controller"}},
            "spec": {"nodeName": node, "hostname": name, "containers": [{"name": "pytorch", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                     "env": [{"name": "PET_NPROC_PER_NODE", "value": str(gpus)}, {"name": "PET_NNODES", "value": "4"}],
                     "resources": {"limits": {"nvidia.com/gpu": str(gpus), "memory": "1600Gi"}, "requests": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": phase, "hostIP": "10.0.3.%d" % (10+idx), "podIP": "10.244.%d.7" % idx,
                       "containerStatuses": [cstatus or {"name": "pytorch", "ready": True, "restartCount": 0, "state": {"running": {"startedAt": "2024-08-14T07:00:11Z"}}}]}}

def k8s_list(items): return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}

# ====================================================================== 1 k8s node lost
def k01():
    b = "k01_k8s_node_lost_unreachable"
    fresh(b, "category: node_failure node: gke-a3-pool-7f2c-x9k2 rank: - (pod worker-1 on it, 8 GPUs, ranks 16-23)")
    nodes = ["gke-a3-pool-7f2c-m1q4", "gke-a3-pool-7f2c-p0z8", "gke-a3-pool-7f2c-x9k2", "gke-a3-pool-7f2c-r5t1"]
    names = ["llama70b-master-0", "llama70b-worker-0", "llama70b-worker-1", "llama70b-worker-2"]
    lost = datetime(2024, 8, 14, 9, 41, 7, tzinfo=UTC)
    items = []
    for i, (n, pn) in enumerate(zip(nodes, names)):
        rt, idx = ("Master", 0) if i == 0 else ("Worker", i-1)
        cs = None
        if i == 2:
            cs = {"name": "pytorch", "ready": False, "restartCount": 0, "state": {"running": {"startedAt": "2024-08-14T07:00:11Z"}}}
        p = pod(pn, n, idx, rt, cstatus=cs)
        if i == 2:
            p["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastTransitionTime": "2024-08-14T09:41:52Z"},
                {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager", "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": "2024-08-14T09:46:53Z"}]
            p["metadata"]["deletionTimestamp"] = "2024-08-14T09:46:53Z"
        items.append(p)
    w(b, "k8s/pods.json", k8s_list(items))
    ev = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "gke-a3-pool-7f2c-x9k2.17e", "namespace": "default", "creationTimestamp": "2024-08-14T09:41:52Z"},
         "eventTime": None, "reason": "NodeNotReady", "note": "Node gke-a3-pool-7f2c-x9k2 status is now: NodeNotReady", "type": "Normal",
         "regarding": {"kind": "Node", "name": "gke-a3-pool-7f2c-x9k2", "uid": "node-uid"}, "reportingController": "node-controller",
         "deprecatedSource": {"component": "node-controller"}, "deprecatedFirstTimestamp": "2024-08-14T09:41:52Z", "deprecatedLastTimestamp": "2024-08-14T09:41:52Z", "deprecatedCount": 1},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "llama70b-worker-1.17f", "namespace": "train"},
         "involvedObject": {"kind": "Pod", "namespace": "train", "name": "llama70b-worker-1"}, "reason": "NodeNotReady", "message": "Node is not ready", "type": "Warning",
         "source": {"component": "node-controller"}, "firstTimestamp": "2024-08-14T09:41:52Z", "lastTimestamp": "2024-08-14T09:41:52Z", "count": 1},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "llama70b-worker-1.180", "namespace": "train"},
         "involvedObject": {"kind": "Pod", "namespace": "train", "name": "llama70b-worker-1"}, "reason": "TaintManagerEviction", "message": "Marking for deletion Pod train/llama70b-worker-1", "type": "Normal",
         "source": {"component": "taint-controller"}, "firstTimestamp": "2024-08-14T09:46:53Z", "lastTimestamp": "2024-08-14T09:46:53Z", "count": 1},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "llama70b-worker-0.181", "namespace": "train"},
         "involvedObject": {"kind": "Pod", "namespace": "train", "name": "llama70b-worker-0"}, "reason": "BackOff", "message": "Back-off restarting failed container pytorch in pod llama70b-worker-0_train", "type": "Warning",
         "source": {"component": "kubelet", "host": "gke-a3-pool-7f2c-p0z8"}, "firstTimestamp": "2024-08-14T09:52:10Z", "lastTimestamp": "2024-08-14T09:52:10Z", "count": 2}]}
    w(b, "k8s/events.json", ev)
    nl = {"apiVersion": "v1", "kind": "List", "items": []}
    for n in nodes:
        bad = n.endswith("x9k2")
        conds = [{"type": "MemoryPressure", "status": "Unknown" if bad else "False", "reason": "NodeStatusUnknown" if bad else "KubeletHasSufficientMemory", "message": "Kubelet stopped posting node status." if bad else "kubelet has sufficient memory available", "lastHeartbeatTime": "2024-08-14T09:41:02Z", "lastTransitionTime": "2024-08-14T09:41:52Z" if bad else "2024-08-10T00:00:00Z"},
                 {"type": "Ready", "status": "Unknown" if bad else "True", "reason": "NodeStatusUnknown" if bad else "KubeletReady", "message": "Kubelet stopped posting node status." if bad else "kubelet is posting ready status", "lastHeartbeatTime": "2024-08-14T09:41:02Z" if bad else "2024-08-14T10:05:00Z", "lastTransitionTime": "2024-08-14T09:41:52Z" if bad else "2024-08-10T00:00:00Z"}]
        nl["items"].append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
            "spec": {"taints": ([{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2024-08-14T09:41:52Z"}, {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2024-08-14T09:41:57Z"}] if bad else [])},
            "status": {"conditions": conds, "capacity": {"nvidia.com/gpu": "8", "cpu": "208"}, "allocatable": {"nvidia.com/gpu": "8", "cpu": "207"}, "nodeInfo": {"kubeletVersion": "v1.29.6-gke.1326000"}}})
    w(b, "k8s/nodes.json", nl)
    t0 = datetime(2024, 8, 14, 9, 20, 0, tzinfo=UTC)
    for i, pn in enumerate(names):
        lines = []
        for lr in range(8):
            lines.append(f"[default{lr}]:" + nccl_init(pn, 100+lr, i*8+lr, 32, lr))
        end = lost - timedelta(seconds=40) if i == 2 else lost + timedelta(seconds=600)
        steps = int((min(end, lost) - t0).total_seconds() // 30)
        for lr in (0,):
            lines += train(f"[default{lr}]:", t0, steps)
        if i != 2:
            for lr in range(8):
                lines += watchdog(f"[rank{i*8+lr}]:", i*8+lr, lost + timedelta(seconds=600, milliseconds=lr*7), 88213)
            lines.append(f"{(lost+timedelta(seconds=605)):%Y-%m-%d %H:%M:%S},512 torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 211 closing signal SIGTERM")
        w(b, f"logs/{pn}.log", lines)
    w(b, "incident.yaml", "question: why did PyTorchJob llama70b stop?\nwindow: {start: 2024-08-14T09:00:00Z, end: 2024-08-14T10:30:00Z}\n")

# ====================================================================== 2 k8s OOMKilled with restarts
def k02():
    b = "k02_k8s_oomkilled_restarts_previous_log"
    fresh(b, "category: host_oom node: ip-10-1-7-203.us-west-2.compute.internal rank: 2 (pod worker-1 = pod rank 2, 1 GPU per pod)")
    nodes = ["ip-10-1-7-14.us-west-2.compute.internal", "ip-10-1-7-88.us-west-2.compute.internal", "ip-10-1-7-203.us-west-2.compute.internal", "ip-10-1-7-99.us-west-2.compute.internal"]
    names = ["ft-master-0", "ft-worker-0", "ft-worker-1", "ft-worker-2"]
    items = []
    for i, (n, pn) in enumerate(zip(nodes, names)):
        rt, idx = ("Master", 0) if i == 0 else ("Worker", i-1)
        if i == 2:
            cs = {"name": "pytorch", "ready": False, "restartCount": 3,
                  "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s restarting failed container=pytorch pod=ft-worker-1_ml(uid)"}},
                  "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2024-03-02T14:11:40Z", "finishedAt": "2024-03-02T14:13:02Z", "containerID": "containerd://ab12"}}}
        else:
            cs = {"name": "pytorch", "ready": False, "restartCount": 3,
                  "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s restarting failed container"}},
                  "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2024-03-02T14:11:38Z", "finishedAt": "2024-03-02T14:13:34Z", "containerID": "containerd://cd%d" % i}}}
        p = pod(pn, n, idx, rt, job="ft", gpus=1, cstatus=cs, ns="ml")
        items.append(p)
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "PodList", "items": [dict(p, kind=None) if False else p for p in items]})
    ev = {"apiVersion": "v1", "kind": "EventList", "items": [
        {"metadata": {"name": "ft-worker-1.1a", "namespace": "ml"}, "involvedObject": {"kind": "Pod", "name": "ft-worker-1", "namespace": "ml"},
         "reason": "BackOff", "message": "Back-off restarting failed container pytorch in pod ft-worker-1_ml(uid)", "type": "Warning",
         "source": {"component": "kubelet", "host": nodes[2]}, "firstTimestamp": "2024-03-02T13:58:00Z", "lastTimestamp": "2024-03-02T14:13:05Z", "count": 9}]}
    w(b, "k8s/events.json", ev)
    t0 = datetime(2024, 3, 2, 14, 11, 45, tzinfo=UTC)
    for i, pn in enumerate(names):
        lines = [nccl_init(pn, 31, i, 4, 0)]
        lines += train("", t0, 3, every=25)
        if i == 2:
            lines.append(pylog(t0 + timedelta(seconds=76), "INFO", "prefetching shard 00417 into pinned host buffer (48.0 GiB)"))
        else:
            tt = datetime(2024, 3, 2, 14, 13, 33, tzinfo=UTC)
            lines += ["Traceback (most recent call last):", '  File "/workspace/train.py", line 412, in <module>', "    main()",
                      '  File "/workspace/train.py", line 377, in main', "    loss.backward()",
                      f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.20.5",
                      "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                      "Last error:", f"socketProgress: Connection closed by remote peer {names[2]}.ml.svc.cluster.local<52124>"]
        w(b, f"logs/{pn}_previous.log", lines)
    w(b, "incident.yaml", "question: why does ft keep restarting?\nwindow: {start: 2024-03-02T13:30:00Z, end: 2024-03-02T14:30:00Z}\n")

# ====================================================================== 3 sacct --json preempted
def s01():
    b = "s01_sacct_json_preempted"
    fresh(b, "category: preempted node: - rank: -")
    st = datetime(2024, 11, 5, 2, 0, 3, tzinfo=UTC); en = datetime(2024, 11, 5, 5, 17, 44, tzinfo=UTC)
    def num(v): return {"set": True, "infinite": False, "number": v}
    job = {"account": "ml", "job_id": 771204, "name": "pretrain-7b", "partition": "gpu-low", "qos": "scavenger",
           "state": {"current": ["PREEMPTED"], "reason": "None"}, "nodes": "a100-[017-020]",
           "exit_code": {"status": ["SUCCESS"], "return_code": num(0), "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""}},
           "derived_exit_code": {"status": ["SUCCESS"], "return_code": num(0), "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""}},
           "time": {"elapsed": int((en-st).total_seconds()), "eligible": int(st.timestamp())-20, "end": int(en.timestamp()), "start": int(st.timestamp()),
                    "submission": int(st.timestamp())-40, "suspended": 0, "limit": num(1440)},
           "allocation_nodes": 4, "restart_cnt": 0,
           "steps": [
             {"step": {"id": "771204.batch", "name": "batch"}, "state": ["CANCELLED"], "nodes": {"count": 1, "range": "a100-017", "list": ["a100-017"]},
              "exit_code": {"status": ["SIGNALED"], "return_code": {"set": False, "infinite": False, "number": 0}, "signal": {"id": num(15), "name": "TERM"}},
              "time": {"elapsed": int((en-st).total_seconds()), "end": int(en.timestamp()), "start": int(st.timestamp())}, "tasks": {"count": 1}},
             {"step": {"id": "771204.0", "name": "python"}, "state": ["CANCELLED"], "nodes": {"count": 4, "range": "a100-[017-020]", "list": ["a100-017", "a100-018", "a100-019", "a100-020"]},
              "exit_code": {"status": ["SIGNALED"], "return_code": {"set": False, "infinite": False, "number": 0}, "signal": {"id": num(15), "name": "TERM"}},
              "time": {"elapsed": int((en-st).total_seconds())-9, "end": int(en.timestamp()), "start": int(st.timestamp())+9}, "tasks": {"count": 32}}]}
    w(b, "slurm/sacct.json", {"meta": {"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI slurmctld", "data_parser": "data_parser/v0.0.41", "accounting_storage": "accounting_storage/slurmdbd"},
        "client": {"source": "/dev/pts/3", "user": "alice", "group": "alice"}, "command": ["sacct", "-j", "771204", "--json"],
        "slurm": {"version": {"major": "24", "micro": "3", "minor": "05"}, "release": "24.05.3", "cluster": "hpc"}}, "jobs": [job], "warnings": [], "errors": []})
    lines = []
    t0 = st + timedelta(seconds=30)
    for k in range(6):
        lines += train(f"{k}: ", t0 + timedelta(minutes=30*k), 2, every=60)[:1]
    lines.append(f"slurmstepd: error: *** STEP 771204.0 ON a100-017 CANCELLED AT {en.strftime('%Y-%m-%dT%H:%M:%S')} DUE TO PREEMPTION ***")
    lines.append(f"slurmstepd: error: *** JOB 771204 ON a100-017 CANCELLED AT {en.strftime('%Y-%m-%dT%H:%M:%S')} DUE TO PREEMPTION ***")
    for r in (0, 9, 17, 30):
        lines.append(f"{r}: [{en:%Y-%m-%d %H:%M:%S},211] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGTERM death signal, shutting down workers")
    lines.append("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    for h, r in (("a100-019", 20), ("a100-018", 12)):
        lines.append(f"srun: error: {h}: task {r}: Exited with exit code 143")
    w(b, "slurm-771204.out", lines)
    w(b, "incident.yaml", "question: why did 771204 stop?\njob: \"771204\"\nwindow: {start: 2024-11-05T01:30:00Z, end: 2024-11-05T06:00:00Z}\n")

# ====================================================================== 4 scontrol only + segfault with per-task files
def s02():
    b = "s02_scontrol_only_segfault_pertask_files"
    fresh(b, "category: application_error node: hpc-gpu05 rank: 13 (task 13, file slurm-51234_13.out)")
    st = datetime(2024, 4, 9, 16, 2, 11); en = datetime(2024, 4, 9, 17, 48, 50)  # America/Denver local
    w(b, "scontrol_job.txt", f"""JobId=51234 JobName=moe-ft
   UserId=bob(1001) GroupId=bob(1001) MCS_label=N/A
   Priority=4294901711 Nice=0 Account=research QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=139:0
   RunTime=01:46:39 TimeLimit=12:00:00 TimeMin=N/A
   SubmitTime={st:%Y-%m-%dT%H:%M:%S} EligibleTime={st:%Y-%m-%dT%H:%M:%S}
   AccrueTime={st:%Y-%m-%dT%H:%M:%S}
   StartTime={st:%Y-%m-%dT%H:%M:%S} EndTime={en:%Y-%m-%dT%H:%M:%S} Deadline=N/A
   PreemptEligibleTime={st:%Y-%m-%dT%H:%M:%S} PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval={st:%Y-%m-%dT%H:%M:%S} Scheduler=Main
   Partition=gpu AllocNode:Sid=login1:88123
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=hpc-gpu[04-05]
   BatchHost=hpc-gpu04
   NumNodes=2 NumCPUs=128 NumTasks=16 CPUs/Task=8 ReqB:S:C:T=0:0:*:*
   ReqTRES=cpu=128,mem=1000G,node=2,billing=128,gres/gpu=16
   AllocTRES=cpu=128,mem=1000G,node=2,billing=128,gres/gpu=16
   Socks/Node=* NtasksPerN:B:S:C=8:0:*:* CoreSpec=*
   MinCPUsNode=64 MinMemoryNode=500G MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)
   Command=/home/bob/moe/run.sbatch
   WorkDir=/home/bob/moe
   StdErr=/home/bob/moe/slurm-51234.out
   StdIn=/dev/null
   StdOut=/home/bob/moe/slurm-51234.out
   TresPerNode=gres/gpu:8
""")
    crash = datetime(2024, 4, 9, 17, 48, 31)
    out = ["+ srun --output=slurm-%j_%t.out python -u train_moe.py --config cfg/moe.yaml",
           f"srun: error: hpc-gpu05: task 13: Segmentation fault (core dumped)",
           "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
           f"slurmstepd: error: *** STEP 51234.0 ON hpc-gpu04 CANCELLED AT {en - timedelta(seconds=15):%Y-%m-%dT%H:%M:%S} ***",
           "srun: error: hpc-gpu04: tasks 0-7: Killed", "srun: error: hpc-gpu05: tasks 8-12,14-15: Killed"]
    w(b, "slurm-51234.out", out)
    for r in range(16):
        host = "hpc-gpu04" if r < 8 else "hpc-gpu05"
        lines = [nccl_init(host, 4000+r, r, 16, r % 8)]
        lines += train("", st + timedelta(minutes=1), 4, every=1500, fmt=lambda t: f"[{t:%Y-%m-%d %H:%M:%S}] step {R.randint(100,999)} loss 1.93")
        if r == 13:
            lines += ["Fatal Python error: Segmentation fault", "",
                      "Thread 0x00007f2c9effd640 (most recent call first):",
                      '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
                      '  File "/usr/lib/python3.10/threading.py", line 607 in wait', "",
                      "Current thread 0x00007f3a1c7f2740 (most recent call first):",
                      '  File "/home/bob/moe/ops/grouped_gemm.py", line 88 in forward',
                      '  File "/home/bob/moe/model/moe_layer.py", line 214 in _expert_forward',
                      '  File "/home/bob/moe/train_moe.py", line 301 in train_step', "",
                      "Extension modules: numpy.core._multiarray_umath, torch._C, grouped_gemm_cuda (total: 41)"]
        else:
            lines.append(f"[{crash + timedelta(seconds=14):%Y-%m-%d %H:%M:%S}] slurmstepd: error: *** STEP 51234.0 ON {host} CANCELLED ***")
        w(b, f"slurm-51234_{r}.out", lines)
    w(b, "nodes/hpc-gpu05/kern.log", [f"Apr 09 17:48:31 hpc-gpu05 kernel: pt_main_thread[48812]: segfault at 18 ip 00007f3a0c1a2b4e sp 00007ffd2c1e9a40 error 4 in grouped_gemm_cuda.cpython-310-x86_64-linux-gnu.so[7f3a0c180000+3a000] likely on CPU 37 (core 5, socket 1)",
                                      "Apr 09 17:48:31 hpc-gpu05 kernel: Code: 48 8b 47 18 48 85 c0 74 0b 48 8b 00 c3 0f 1f 80 00 00 00 00 31 c0 c3"])
    w(b, "incident.yaml", "question: why did 51234 fail?\njob: \"51234\"\ntimezone: America/Denver\nwindow: {start: 2024-04-09T15:00:00, end: 2024-04-09T19:00:00}\n")

# ====================================================================== 5 torchelastic error.json ckpt save rank0
def t01():
    b = "t01_elastic_errorjson_ckpt_rank0"
    fresh(b, "category: application_error node: dgx-a01 rank: 0 (OSError ENOSPC in torch.save on rank 0)")
    t_err = datetime(2024, 7, 21, 3, 15, 2, tzinfo=UTC)
    cs0 = ("Traceback (most recent call last):\n  File \"/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 348, in wrapper\n    return f(*args, **kwargs)\n"
           "  File \"/workspace/pretrain.py\", line 640, in main\n    save_checkpoint(step, model, optimizer)\n  File \"/workspace/ckpt.py\", line 71, in save_checkpoint\n    torch.save(state, path)\n"
           "  File \"/opt/conda/lib/python3.11/site-packages/torch/serialization.py\", line 651, in save\n    with _open_zipfile_writer(f) as opened_zipfile:\n"
           "RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 11811160512 vs 11811160400\n")
    e0 = {"message": {"message": "RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 11811160512 vs 11811160400",
                      "extraInfo": {"py_callstack": cs0, "timestamp": str(int(t_err.timestamp()))}}}
    w(b, "nodes/dgx-a01/torchelastic/none_k3j2x1/attempt_0/0/error.json", e0)
    t_to = t_err + timedelta(minutes=10, seconds=1)
    for node, lr, gr in (("dgx-a02", 3, 11), ("dgx-a03", 5, 21)):
        cs = ("Traceback (most recent call last):\n  File \"/workspace/pretrain.py\", line 642, in main\n    dist.barrier()\n"
              "torch.distributed.DistBackendError: [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90122, OpType=BARRIER, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n" % gr)
        w(b, f"nodes/{node}/torchelastic/none_k3j2x1/attempt_0/{lr}/error.json",
          {"message": {"message": cs.strip().splitlines()[-1], "extraInfo": {"py_callstack": cs, "timestamp": str(int(t_to.timestamp()) + gr)}}})
    for ni, node in enumerate(("dgx-a01", "dgx-a02", "dgx-a03", "dgx-a04")):
        lines = []
        for lr in range(8):
            lines.append(f"[default{lr}]:" + nccl_init(node, 900+lr, ni*8+lr, 32, lr))
        lines += train("[default0]:", t_err - timedelta(minutes=5), 8, every=30)
        if ni == 0:
            lines.append("[default0]:" + pylog(t_err - timedelta(seconds=40), "INFO", "saving checkpoint step 90120 to /lustre/ckpt/run7/step90120.pt"))
            lines += ["[default0]:" + l for l in cs0.strip().splitlines()]
            lines.append(f"{t_err+timedelta(seconds=3):%Y-%m-%d %H:%M:%S},004 torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 900) of binary: /opt/conda/bin/python")
        else:
            for lr in range(8):
                lines += watchdog(f"[default{lr}]:[rank{ni*8+lr}]:", ni*8+lr, t_to + timedelta(milliseconds=lr), 90122)
        w(b, f"logs/{node}.log", lines)
    w(b, "incident.yaml", "question: why did run7 fail?\nwindow: {start: 2024-07-21T02:30:00Z, end: 2024-07-21T04:00:00Z}\n")

# ====================================================================== 6 flight recorder hang
def f01():
    b = "f01_flight_recorder_hang_rank5"
    fresh(b, "category: hang node: h100-b02 rank: 5 (FR: rank 5 never enqueued seq 1843; others started it)")
    t0 = datetime(2024, 9, 30, 22, 10, 0, tzinfo=UTC)
    for r in range(8):
        node = "h100-b01" if r < 4 else "h100-b02"
        last = 1842 if r == 5 else 1843
        entries = []
        for seq in range(last - 3, last + 1):
            done = seq < last or False
            tc = t0 + timedelta(seconds=seq - 1840)
            entries.append({"record_id": seq, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
                            "profiling_name": "nccl:all_reduce", "time_created_ns": int(tc.timestamp()*1e9), "duration_ms": 4.1 if done else None,
                            "input_sizes": [[65536000]], "input_dtypes": ["BFloat16"], "output_sizes": [[65536000]], "output_dtypes": ["BFloat16"],
                            "state": "completed" if done else "started", "time_discovered_started_ns": int(tc.timestamp()*1e9)+1000,
                            "time_discovered_completed_ns": int(tc.timestamp()*1e9)+5000000 if done else None, "retired": done, "timeout_ms": 600000, "is_p2p": False,
                            "frames": [{"name": "all_reduce", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 2288}]})
        if r == 5:
            entries[-1]["state"] = "completed"; entries[-1]["retired"] = True; entries[-1]["duration_ms"] = 4.0
        dump = {"version": "2.4", "comm_lib_version": "2.21.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}},
                "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": last, "last_completed_collective": (last if r == 5 else last - 1)}},
                "entries": entries, "nccl_comm_state": {}}
        w(b, f"nodes/{node}/fr/nccl_trace_rank_{r}", dump)
    tw = t0 + timedelta(seconds=603)
    for r in range(8):
        node = "h100-b01" if r < 4 else "h100-b02"
        lines = [nccl_init(node, 77+r, r, 8, r % 4)]
        lines += train("", t0 - timedelta(minutes=3), 6, every=30)
        if r != 5:
            lines += [l.replace(f"[Rank {r}]", f"[Rank {r}]") for l in watchdog("", r, tw + timedelta(milliseconds=3*r), 1843)]
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:" + l for l in lines])
    w(b, "incident.yaml", "question: why did the job stall?\nwindow: {start: 2024-09-30T21:30:00Z, end: 2024-09-30T23:00:00Z}\n")

# ====================================================================== 7 New Year glog + Xid 119 (syslog no year)
def g01():
    b = "g01_newyear_glog_xid119_syslog"
    fresh(b, "category: gpu_hardware node: gpu-c02 rank: 9 (Xid 119 on PCI 0000:43:00 = cudaDev 1 on node 2) -- Dec 31 23:59:48 UTC, glog lines Jan 1 (no year)")
    xt = datetime(2024, 12, 31, 23, 59, 48, tzinfo=UTC)
    kern = []
    for h in ("gpu-c01", "gpu-c02"):
        kl = [f"Dec 31 23:10:02 {h} kernel: nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 00000, NVSwitch driver loaded"] if False else []
        kl.append(f"Dec 31 23:30:00 {h} systemd[1]: Started Session 412 of User slurm.")
        if h == "gpu-c02":
            kl += [f"Dec 31 23:59:48 {h} kernel: NVRM: Xid (PCI:0000:43:00): 119, pid=2211, name=python, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).",
                   f"Dec 31 23:59:54 {h} kernel: NVRM: GPU1 GSP RPC buffer contains function 76 (GSP_RM_CONTROL) and data 0x0000000020800a4c 0x0000000000000004.",
                   f"Jan  1 00:00:00 {h} kernel: NVRM: Xid (PCI:0000:43:00): 119, pid=2211, name=python, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 10 (FREE) (0x5c000001 0x0)."]
        w(b, f"nodes/{h}/kern.log", kl)
    t0 = datetime(2024, 12, 31, 23, 40, 0, tzinfo=UTC)
    for r in range(16):
        node = "gpu-c01" if r < 8 else "gpu-c02"
        lines = [nccl_init(node, 2200+r, r, 16, r % 8)]
        lines += train("", t0, 38, every=30)
        if r == 9:
            te = datetime(2025, 1, 1, 0, 0, 5, 120000, tzinfo=UTC)
            lines += [f"[{glog('E', te, 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank 9] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure",
                      "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]
        else:
            lines += watchdog("", r, datetime(2025, 1, 1, 0, 9, 49, tzinfo=UTC) + timedelta(milliseconds=r), 51230)
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:" + l for l in lines])
    w(b, "incident.yaml", "question: why did the NYE run die?\nwindow: {start: 2024-12-31T23:00:00Z, end: 2025-01-01T01:00:00Z}\n")

# ====================================================================== 8 Xid 63 decoy + Xid 64, gz logs, tar.gz bundle
def x01():
    b = "x01_xid63_decoy_xid64_gz_tarball"
    fresh(b, "category: gpu_hardware node: gpu-d03 rank: 22 (Xid 64 on d1:00 = cudaDev 6 on node 3); Xid 63 on gpu-d01 earlier is informational")
    bus = {"1b000": "1b", "43000": "43", "52000": "52", "61000": "61", "9d000": "9d", "c3000": "c3", "d1000": "d1", "df000": "df"}
    t0 = datetime(2024, 6, 12, 13, 0, 0, tzinfo=UTC)
    tx = datetime(2024, 6, 12, 13, 41, 9, 511000, tzinfo=UTC)
    w(b, "nodes/gpu-d01/dmesg.txt.gz", [
        f"[{(t0+timedelta(minutes=12)):%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:61:00): 63, pid=5512, name=python, Row Remapper: New row (0x00000000000a2d31) marked for remapping, reset gpu to activate.",
        f"[{(t0+timedelta(minutes=12)):%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:61:00): 94, pid=5512, name=python, Contained: SM (0x1). RST: No, D-RST: No"][:1], gz=True)
    w(b, "nodes/gpu-d03/dmesg.txt.gz", [
        f"[{tx:%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:d1:00): 64, pid=7714, name=python, Row Remapper: Failed to remap row (0x000000000017f2c0), GPU 6",
        f"[{tx:%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:d1:00): 48, pid=7714, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x17f2c0a00.",
        f"[{tx+timedelta(seconds=1):%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:0000:d1:00): 95, pid=7714, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No"], gz=True)
    for r in range(32):
        node = f"gpu-d0{r//8+1}"
        lines = [nccl_init(node, 7700+r, r, 32, r % 8)]
        lines += train("", t0 + timedelta(minutes=30), 22, every=30)
        if r == 22:
            te = tx + timedelta(milliseconds=800)
            lines += ["Traceback (most recent call last):", '  File "/work/train.py", line 233, in <module>', "    loss = step(batch)",
                      "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                      "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."]
            lines.insert(-4, pylog(te, "ERROR", "step failed"))
        else:
            lines += watchdog("", r, tx + timedelta(seconds=600, milliseconds=r), 20001)
        w(b, f"logs/rank_{r:02d}.log.gz", [f"[rank{r}]:" + l for l in lines], gz=True)
    w(b, "incident.yaml", "question: why did job 9911 fail?\nwindow: {start: 2024-06-12T12:30:00Z, end: 2024-06-12T14:30:00Z}\n")
    with tarfile.open(ROOT / f"{b}.tar.gz", "w:gz") as tf:
        tf.add(ROOT / b, arcname=b)

# ====================================================================== 9 ncclInternalError / unhandled cuda error, no Xid
def n01():
    b = "n01_nccl_unhandled_cuda_error_no_xid"
    fresh(b, "category: application_error|gpu_hardware? node: gpu-e02 rank: 14 (only rank 14 reports 'unhandled cuda error' with 'Cuda failure an illegal memory access' first; others get ncclRemoteError later). No kernel Xid present.")
    t0 = datetime(2024, 5, 20, 8, 0, 0, tzinfo=UTC); tf = datetime(2024, 5, 20, 8, 33, 17, 402000, tzinfo=UTC)
    for r in range(16):
        node = "gpu-e01" if r < 8 else "gpu-e02"
        lines = [nccl_init(node, 600+r, r, 16, r % 8)] + train("", t0, 66, every=30)
        if r == 14:
            lines += [f"{node}:614:1802 [6] include/alloc.h:103 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
                      f"{node}:614:1802 [6] NCCL INFO transport/p2p.cc:275 -> 1",
                      f"{node}:614:1802 [6] NCCL INFO proxy.cc:1503 -> 1",
                      "Traceback (most recent call last):", '  File "/app/train.py", line 190, in <module>', "    dist.all_reduce(grad)",
                      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
                      "ncclUnhandledCudaError: Call to CUDA function failed.",
                      "Last error:", "Cuda failure 'an illegal memory access was encountered'"]
            lines.insert(len(lines) - 11, pylog(tf, "ERROR", "all_reduce failed on bucket 17"))
        else:
            te = tf + timedelta(seconds=2, milliseconds=r)
            lines += [pylog(te, "ERROR", "collective failed"), "Traceback (most recent call last):", '  File "/app/train.py", line 190, in <module>', "    dist.all_reduce(grad)",
                      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version 2.19.3",
                      "ncclInternalError: Internal check failed.", "Last error:", "Message truncated : received 1024 bytes instead of 256"]
        w(b, f"logs/rank{r}.log", [f"{r}: " + l for l in lines])
    w(b, "incident.yaml", "question: why did the job crash?\nwindow: {start: 2024-05-20T07:30:00Z, end: 2024-05-20T09:00:00Z}\n")

# ====================================================================== 10 healthy with warnings only
def w01():
    b = "w01_healthy_only_warnings"
    fresh(b, "category: unknown (exit code 3) -- job still RUNNING, only deprecation/NCCL/Xid-63-free warnings")
    t0 = datetime(2024, 10, 2, 11, 0, 0, tzinfo=UTC)
    w(b, "slurm/sacct.txt", ["JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed",
        "88001|llm|RUNNING|0:0|0:0|gpu-f[01-02]|2024-10-02T10:55:00|Unknown|01:05:00",
        "88001.batch|batch|RUNNING|0:0||gpu-f01|2024-10-02T10:55:00|Unknown|01:05:00",
        "88001.0|python|RUNNING|0:0||gpu-f[01-02]|2024-10-02T10:55:09|Unknown|01:04:51"])
    for r in range(16):
        node = "gpu-f01" if r < 8 else "gpu-f02"
        lines = [nccl_init(node, 300+r, r, 16, r % 8),
                 "/usr/local/lib/python3.10/dist-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.",
                 "  return self.fget.__get__(instance, owner)()",
                 f"{node}:{300+r}:{300+r} [{r%8}] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
                 f"[W reducer.cpp:1360] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. (function operator())",
                 pylog(t0, "WARNING", "gradient overflow detected, skipping step; loss scale reduced to 32768.0"),
                 f"[{glog('W', t0+timedelta(minutes=3), 'ProcessGroupNCCL.cpp:4115')}] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is thus deprecated. (function operator())"]
        lines += train("", t0 + timedelta(minutes=5), 100, every=30)
        w(b, f"logs/rank{r}.log", [f"{r}: " + l for l in lines])
    w(b, "nodes/gpu-f02/kern.log", ["2024-10-02T11:20:03+0000 gpu-f02 kernel: mlx5_core 0000:c1:00.1: mlx5_pcie_event:301:(pid 1210): PCIe slot advertised sufficient power (75W).",
                                    "2024-10-02T11:31:40+0000 gpu-f02 kernel: nvidia-peermem: module verification failed: signature and/or required key missing - tainting kernel"])
    w(b, "incident.yaml", "question: is job 88001 healthy?\njob: \"88001\"\nwindow: {start: 2024-10-02T10:50:00Z, end: 2024-10-02T12:00:00Z}\n")

# ====================================================================== 11 python logging +0200 offset vs UTC kernel Xid 13
def p01():
    b = "p01_pylog_ms_offset_vs_xid13"
    fresh(b, "category: application_error node: gpu-g02 rank: 12 (KeyError at 14:02:11.532+0200 = 12:02:11Z; Xid 13 on gpu-g01 at 12:02:30Z is later)")
    tz = ZoneInfo("Europe/Berlin")
    t0 = datetime(2024, 6, 3, 11, 40, 0, tzinfo=UTC); te = datetime(2024, 6, 3, 12, 2, 11, 532000, tzinfo=UTC)
    def fmt(t): t = t.astimezone(tz); return f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond//1000:03d}{t:%z} | INFO | trainer | step loss 1.77"
    for r in range(16):
        node = "gpu-g01" if r < 8 else "gpu-g02"
        lines = [nccl_init(node, 500+r, r, 16, r % 8)] + train("", t0, 44, every=30, fmt=fmt)
        if r == 12:
            tl = te.astimezone(tz)
            lines += [f"{tl:%Y-%m-%d %H:%M:%S}.{tl.microsecond//1000:03d}{tl:%z} | ERROR | trainer | uncaught exception in data pipeline",
                      "Traceback (most recent call last):", '  File "/srv/train/data.py", line 77, in __next__', "    sample = self.index[key]", "KeyError: 'shard-00931/sample-000184'"]
        else:
            tw = (te + timedelta(seconds=600, milliseconds=r))
            lines += watchdog("", r, tw.astimezone(tz).replace(tzinfo=None), 9981)
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:" + l for l in lines])
    w(b, "nodes/gpu-g01/kern.log", ["2024-06-03T12:02:30.118233+00:00 gpu-g01 kernel: NVRM: Xid (PCI:0000:52:00): 13, pid=504, name=python, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address",
                                    "2024-06-03T12:02:30.118301+00:00 gpu-g01 kernel: NVRM: Xid (PCI:0000:52:00): 13, pid=504, name=python, Graphics Exception: ESR 0x50cda0=0x102000e 0x50cda4=0x20 0x50cda8=0x0 0x50cdac=0x0"])
    w(b, "incident.yaml", "question: why did it fail?\nwindow: {start: 2024-06-03T11:00:00Z, end: 2024-06-03T13:30:00Z}\n")

# ====================================================================== 12 k8s per-container log dirs + Xid 120 on pod node, 1 GPU/pod with RANK env
def k03():
    b = "k03_k8s_container_dirs_xid120"
    fresh(b, "category: gpu_hardware node: node-gpu-3 rank: 3 (pod trainer-3, RANK=3, Xid 120 on node-gpu-3)")
    items = []
    nodes = [f"node-gpu-{i}" for i in range(4)]
    for i in range(4):
        cs = {"name": "trainer", "ready": False, "restartCount": 0,
              "state": {"terminated": {"exitCode": 1 if i != 3 else 134, "reason": "Error", "startedAt": "2024-02-11T05:00:02Z",
                                       "finishedAt": ("2024-02-11T05:23:44Z" if i == 3 else "2024-02-11T05:33:50Z")}}}
        p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"trainer-{i}", "namespace": "default",
             "labels": {"batch.kubernetes.io/job-completion-index": str(i), "job-name": "trainer"}},
             "spec": {"nodeName": nodes[i], "containers": [{"name": "trainer", "env": [{"name": "RANK", "value": str(i)}, {"name": "WORLD_SIZE", "value": "4"}],
                      "resources": {"limits": {"nvidia.com/gpu": 1}}}, {"name": "log-shipper", "resources": {}}]},
             "status": {"phase": "Failed", "containerStatuses": [cs, {"name": "log-shipper", "ready": True, "restartCount": 0, "state": {"running": {"startedAt": "2024-02-11T05:00:02Z"}}}]}}
        items.append(p)
    w(b, "k8s/pods.json", {"apiVersion": "v1", "kind": "PodList", "items": items})
    w(b, "nodes/node-gpu-3/journal.txt", [
        "2024-02-11T05:23:41+0000 node-gpu-3 kernel: NVRM: Xid (PCI:0000:00:1e): 120, pid=4412, name=python3, Ch 00000008, errorType 0x2, intr 0x0, SEC2 fatal error",
        "2024-02-11T05:23:41+0000 node-gpu-3 kernel: NVRM: GPU at PCI:0000:00:1e: GPU-5b1e8a8c-3d2f-9a1b-2c44-0f1e2d3c4b5a",
        "2024-02-11T05:23:41+0000 node-gpu-3 kernel: NVRM: GPU Board Serial Number: 1652221034567"])
    for i in range(4):
        lines = train("", datetime(2024, 2, 11, 5, 5, tzinfo=UTC), 30, every=30, fmt=lambda t: f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond//1000:03d}Z INFO step ok")
        if i == 3:
            lines += ["terminate called after throwing an instance of 'c10::Error'",
                      "  what():  CUDA error: unknown error", "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                      "Exception raised from c10_cuda_check_implementation at /opt/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):"]
        else:
            lines += watchdog("", i, datetime(2024, 2, 11, 5, 33, 44, tzinfo=UTC), 7001)
        w(b, f"logs/trainer-{i}/trainer.log", lines)
        w(b, f"logs/trainer-{i}/log-shipper.log", ["level=info ts=2024-02-11T05:00:03Z msg=\"shipper started\"", "level=warn ts=2024-02-11T05:20:03Z msg=\"backpressure\""])
    w(b, "incident.yaml", "question: why did trainer fail?\nwindow: {start: 2024-02-11T04:30:00Z, end: 2024-02-11T06:00:00Z}\n")


# ====================================================================== 13 New Year glog primary, no kernel log
def g02():
    b = "g02_newyear_glog_primary_no_kernel"
    fresh(b, "category: application_error node: gpu-c02 rank: 9 (glog [E0101 00:00:05] CUDA error on rank 9 is first; rank 4's ISO-dated illegal-memory-access at 00:00:31 is later)")
    t0 = datetime(2024, 12, 31, 23, 40, 0, tzinfo=UTC)
    for r in range(16):
        node = "gpu-c01" if r < 8 else "gpu-c02"
        lines = [nccl_init(node, 2200+r, r, 16, r % 8)] + train("", t0, 38, every=30)
        if r == 9:
            te = datetime(2025, 1, 1, 0, 0, 5, 120000, tzinfo=UTC)
            lines += [f"[{glog('E', te, 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank 9] Process group watchdog thread terminated with exception: CUDA error: misaligned address",
                      "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"]
        elif r == 4:
            te = datetime(2025, 1, 1, 0, 0, 31, 7000, tzinfo=UTC)
            lines += [pylog(te, "ERROR", "step failed"), "Traceback (most recent call last):", '  File "/w/train.py", line 88, in <module>', "    out = model(x)",
                      "RuntimeError: CUDA error: an illegal memory access was encountered"]
        else:
            lines += watchdog("", r, datetime(2025, 1, 1, 0, 10, 6, tzinfo=UTC) + timedelta(milliseconds=r), 51230)
        w(b, f"logs/rank{r}.log", [f"[rank{r}]:" + l for l in lines])
    w(b, "incident.yaml", "question: why did the NYE run die?\nwindow: {start: 2024-12-31T23:00:00Z, end: 2025-01-01T01:00:00Z}\n")

def render(out: Path) -> None:
    """Write every scenario bundle (each with expected.txt) under `out`."""
    global ROOT, R
    ROOT, R = K.start(out, 11)
    for f in (g02, k01, k02, s01, s02, t01, f01, g01, x01, n01, w01, p01, k03):
        f()
    # control for f01: identical bundle, question says "hang" instead of "stall"
    shutil.rmtree(ROOT / "f01b_same_as_f01_question_hang", ignore_errors=True)
    shutil.copytree(ROOT / "f01_flight_recorder_hang_rank5", ROOT / "f01b_same_as_f01_question_hang")
    q = ROOT / "f01b_same_as_f01_question_hang/incident.yaml"; q.write_text(q.read_text().replace("stall", "hang"))


if __name__ == "__main__":
    import sys

    render(Path(sys.argv[1]))
