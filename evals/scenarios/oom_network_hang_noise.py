"""Review scenarios, third round: OOM, node-loss, network, hang and noise shapes hand-built by a
reviewer in real formats, independent of evals/generator.py (see each_class_many_clocks.py)."""
# ruff: noqa
# ruff: noqa
import json, random, shutil, struct, zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .helpers import F, HDR, Kit, kernel_noise, sacct_rows

K = Kit(0)
ROOT, R = K.root, K.rng
w, fresh, incident, glog = K.w, K.fresh, K.incident, K.glog


def train(t0, n, every=60, step0=3000):
    return K.train(t0, n, every, step0, grad_norm=True)


def nccl_init(host, pid, lr, rank, n, busid, net="IB"):
    return K.nccl_init(host, pid, lr, rank, n, busid, net, hcas=4)


def wd(rank, t, seq, op="ALLREDUCE"):
    return K.wd(rank, t, seq, op, prefix=f"[rank{rank}]:")


def noise_k(fmt, t, n=4):
    return kernel_noise(fmt, t, n)


BUS = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]


def kfmt(host):
    return lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond:06d}+00:00 {host} kernel: {m}"


# --------------------------------------------------------------------------
def a01():  # cgroup v2 OOM in kubepods memcg on a Slurm-less node, torchrun tee logs
    b = "a01_host_oom_cgv2_kubepods"
    fresh(b, "host_oom", "gpu-p03", "21")
    st = datetime(2024, 6, 3, 8, 0, 0); oom = datetime(2024, 6, 3, 9, 41, 17, 402000); end = oom + timedelta(seconds=40)
    incident(b, "7731", st, end + timedelta(minutes=5))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("7731", "sft", "FAILED", "1:0", "gpu-p[01-04]", st, end, batch="gpu-p01")))
    for ni in range(4):
        h = f"gpu-p0{ni+1}"; fmt = kfmt(h); L = noise_k(fmt, st)
        if h == "gpu-p03":
            pid = 401205
            cg = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f1c2a7e_3b1d_4c0e_9a51_0c7f3e2d1b9a.slice/cri-containerd-4b8d1f0c9e2a.scope"
            L += [fmt(oom, "pt_data_worker invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=936"),
                  fmt(oom, "CPU: 77 PID: 401777 Comm: pt_data_worker Tainted: P           OE      6.5.0-1018-nvidia #18-Ubuntu"),
                  fmt(oom, "memory: usage 1048576000kB, limit 1048576000kB, failcnt 2291"),
                  fmt(oom, "swap: usage 0kB, limit 0kB, failcnt 0"),
                  fmt(oom, f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-4b8d1f0c9e2a.scope,mems_allowed=0-1,oom_memcg={cg},task_memcg={cg},task=python,pid={pid},uid=0"),
                  fmt(oom, f"Memory cgroup out of memory: Killed process {pid} (python) total-vm:392018412kB, anon-rss:121938112kB, file-rss:512000kB, shmem-rss:8388608kB, UID:0 pgtables:402112kB oom_score_adj:936")]
        w(b, f"nodes/{h}/kern.log", "\n".join(L))
        tee = []
        for lr in range(8):
            r = ni * 8 + lr; pid = 401200 + lr if h == "gpu-p03" else 300000 + r * 7
            tee += [f"[default{lr}]:{x}" for x in nccl_init(h, pid, lr, r, 32, BUS[lr])]
            tee += [f"[default{lr}]:{x}" for x in train(st + timedelta(minutes=3), 2, 3000)]
        for lr in range(8):
            r = ni * 8 + lr
            if r == 21: continue
            t = oom + timedelta(seconds=2, milliseconds=r)
            tee += [f"[default{lr}]:[rank{r}]:[{glog('E', t, 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5",
                    f"[default{lr}]:[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."]
        w(b, f"logs/{h}.log", "\n".join(tee))


def a02():  # slurmstepd oom_kill + sacct OUT_OF_MEMORY 0:125, no kernel logs; srun -l
    b = "a02_host_oom_slurmstepd_only"
    fresh(b, "host_oom", "cn-g17", "13")
    st = datetime(2024, 3, 14, 13, 2, 0); oom = datetime(2024, 3, 14, 14, 20, 9); end = oom + timedelta(seconds=3)
    incident(b, "2201877", st, end + timedelta(minutes=2), "Europe/Berlin")
    rows = sacct_rows("2201877", "pretrain", "OUT_OF_MEMORY", "0:125", "cn-g[16-17]", st, end, "OUT_OF_MEMORY", "0:125", "cn-g16")
    rows[1] = rows[1].replace("OUT_OF_MEMORY|0:125", "CANCELLED|0:15")
    w(b, "slurm/sacct.txt", "\n".join([HDR] + rows))
    out = []
    for r in range(16):
        out += [f"{r}: {x}" for x in train(st + timedelta(minutes=1), 3, 1500)]
    out += [f"slurmstepd: error: Detected 1 oom_kill event in StepId=2201877.0. Some of the step tasks have been OOM Killed.",
            "srun: error: cn-g17: task 13: Out Of Memory",
            "srun: launch/slurm: _step_signal: Terminating StepId=2201877.0",
            f"slurmstepd: error: *** STEP 2201877.0 ON cn-g16 CANCELLED AT {oom + timedelta(seconds=1):{F}} ***"]
    for r in range(16):
        if r != 13:
            out.append(f"srun: error: {'cn-g16' if r < 8 else 'cn-g17'}: task {r}: Terminated")
    out.append("srun: Force Terminated StepId=2201877.0")
    w(b, "slurm-2201877.out", "\n".join(out))


def a03():  # old-style CUDA OOM "(GPU 3; ...)" in a per-rank file without prefixes
    b = "a03_gpu_oom_legacy_msg"
    fresh(b, "gpu_oom", "v100-b2", "11")
    st = datetime(2022, 2, 8, 19, 0, 0); oom = datetime(2022, 2, 8, 20, 31, 2, 880000); end = oom + timedelta(minutes=31)
    incident(b, "88120", st, end + timedelta(minutes=2))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("88120", "bert-large", "FAILED", "1:0", "v100-b[1-2]", st, end, batch="v100-b1")))
    for r in range(16):
        h = "v100-b1" if r < 8 else "v100-b2"; lr = r % 8; pid = 22000 + r
        L = nccl_init(h, pid, lr, r, 16, BUS[lr]) + train(st + timedelta(minutes=2), 3, 1500)
        if r == 11:
            L += ["Traceback (most recent call last):",
                  '  File "run_pretraining.py", line 612, in <module>',
                  "    main()",
                  '  File "run_pretraining.py", line 540, in main',
                  "    loss.backward()",
                  '  File "/opt/conda/lib/python3.8/site-packages/torch/_tensor.py", line 307, in backward',
                  "    torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)",
                  '  File "/opt/conda/lib/python3.8/site-packages/torch/autograd/__init__.py", line 154, in backward',
                  "    Variable._execution_engine.run_backward(",
                  "RuntimeError: CUDA out of memory. Tried to allocate 1.53 GiB (GPU 3; 31.75 GiB total capacity; 27.94 GiB already allocated; 1.02 GiB free; 29.11 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"]
        else:
            # legacy (1.10) watchdog text, 30 minutes later
            t = oom + timedelta(minutes=30, milliseconds=r * 9)
            L += [f"[E ProcessGroupNCCL.cpp:587] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1808{R.randint(100,999)} milliseconds before timing out.",
                  f"[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.",
                  "terminate called after throwing an instance of 'std::runtime_error'",
                  f"  what():  [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1808{R.randint(100,999)} milliseconds before timing out."]
        w(b, f"logs/rank_{r:02d}.log", "\n".join(L))


def a04():  # node failure; slurmstepd names BATCH host; lost node stops
    b = "a04_node_fail_batchhost_named"
    fresh(b, "node_failure", "gpu-07", "-")
    st = datetime(2024, 8, 20, 1, 0, 0); dead = datetime(2024, 8, 20, 3, 33, 40); seen = dead + timedelta(minutes=5, seconds=2); end = seen + timedelta(seconds=2)
    incident(b, "310044", st, end + timedelta(minutes=5))
    w(b, "slurm/sacct.txt", "\n".join([HDR,
        f"310044|mixtral|NODE_FAIL|0:0|0:0|gpu-[05-08]|{st:{F}}|{end:{F}}|02:38:44",
        f"310044.batch|batch|CANCELLED|0:15||gpu-05|{st:{F}}|{end:{F}}|02:38:44",
        f"310044.extern|extern|CANCELLED||gpu-[05-08]|{st:{F}}|{end:{F}}|02:38:44",
        f"310044.0|torchrun|CANCELLED||gpu-[05-08]|{st + timedelta(seconds=4):{F}}|{end:{F}}|02:38:40"]))
    w(b, "slurm/node_gpu-07.txt", f"""NodeName=gpu-07 Arch=x86_64 CoresPerSocket=56
   CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=N/A
   AvailableFeatures=h100,ib
   ActiveFeatures=h100,ib
   Gres=gpu:h100:8(S:0-1)
   NodeAddr=gpu-07 NodeHostName=gpu-07 Version=23.11.4
   OS=Linux 5.15.0-1053-nvidia #54-Ubuntu SMP Thu Mar 14 11:44:53 UTC 2024
   RealMemory=2063000 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1
   State=DOWN+NOT_RESPONDING ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partition=h100
   BootTime=2024-07-30T11:02:13 SlurmdStartTime=2024-07-30T11:04:51
   LastBusyTime={seen:{F}} ResumeAfterTime=None
   CfgTRES=cpu=224,mem=2063000M,billing=224,gres/gpu=8
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/a ExtSensorsWatts=0 ExtSensorsTemp=n/a
   Reason=Not responding [slurm@{seen:{F}}]
""")
    out = []
    hosts = ["gpu-05", "gpu-06", "gpu-07", "gpu-08"]
    for ni, h in enumerate(hosts):
        for lr in range(8):
            r = ni * 8 + lr
            out += [f"[default{lr}]:{x}" for x in nccl_init(h, 51000 + r, lr, r, 32, BUS[lr])]
    # training lines continue to dead on all; gpu-07 ranks stop at dead
    t = st + timedelta(minutes=2)
    step = 100
    while t < seen:
        for r in range(32):
            if 16 <= r < 24 and t > dead:
                continue
            out.append(f"[default{r%8}]:{t:%Y-%m-%d %H:%M:%S},{R.randint(100,999)} - INFO - train - rank {r} step {step} loss 1.9")
        t += timedelta(minutes=10); step += 50
    for r in range(32):
        if 16 <= r < 24: continue
        out += [f"[default{r%8}]:{x}" for x in wd(r, dead + timedelta(minutes=10, seconds=1, milliseconds=r), 88211)][:1]
    out += [f"srun: error: Node failure on gpu-07",
            f"slurmstepd: error: *** JOB 310044 ON gpu-05 CANCELLED AT {seen:{F}} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]
    w(b, "logs/slurm-310044.out", "\n".join(out))
    for h in hosts:
        fmt = lambda t, m, h=h: f"{t:%b %d %H:%M:%S} {h} kernel: {m}"
        L = noise_k(fmt, st, 3)
        if h != "gpu-07":
            L.append(fmt(dead + timedelta(seconds=35), "mlx5_core 0000:0c:00.0: mlx5_fw_tracer_handle_traces:748:(pid 1123): FW tracer: Received async error"))
        w(b, f"nodes/{h}/kern.log", "\n".join(L))


def a05():  # IB flapping port error on one node, "error 12" loud on others
    b = "a05_ib_async_port_error"
    fresh(b, "network_fault", "node48", "-")
    st = datetime(2023, 6, 10, 4, 0, 0); pe = datetime(2023, 6, 10, 6, 11, 31); end = pe + timedelta(minutes=11)
    incident(b, "61822", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("61822", "lit-llama", "FAILED", "1:0", "node[48-51]", st, end, batch="node48")))
    hosts = ["node48", "node49", "node50", "node51"]
    for ni, h in enumerate(hosts):
        L = []
        for lr in range(8):
            r = ni * 8 + lr; pid = 34050 + lr if ni == 0 else 70000 + r
            L += [f"[default{lr}]:{x}" for x in nccl_init(h, pid, lr, r, 32, BUS[lr])]
        L += [f"iter {83590+i}: loss {1.5+i/10:.4f}, time: 4401.19ms, speed: 1771 toks/s/device" for i in range(3)]
        if h == "node48":
            for k in range(3):
                for lr in range(8):
                    L += [f"{h}:{34050+lr}:{34120+lr} [{lr}] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error", ""]
        else:
            for lr in range(8):
                r = ni * 8 + lr
                L += [f"{h}:{70000+r}:{70100+r} [{lr}] transport/net_ib.cc:1238 NCCL WARN NET/IB : Got completion from peer node48<37948> with error 12, opcode 2, len 1, vendor err 129",
                      f"{h}:{70000+r}:{70100+r} [{lr}] NCCL INFO include/net.h:28 -> 2",
                      f"{h}:{70000+r}:{70100+r} [{lr}] NCCL INFO transport/net.cc:404 -> 2",
                      f"{h}:{70000+r}:{70100+r} [{lr}] NCCL INFO proxy.cc:320 -> 2",
                      f"{h}:{70000+r}:{70100+r} [{lr}] NCCL INFO proxy.cc:367 -> 2 [Proxy Thread]"]
        for lr in range(8):
            r = ni * 8 + lr
            L += [f"[default{lr}]:{x}" for x in wd(r, pe + timedelta(minutes=10, milliseconds=r * 5), 520771)]
        w(b, f"logs/{h}.out", "\n".join(L))
    # interleave: timestamps on "error 12" lines unknown -> only order in file. Add kernel on node48 with port down
    fmt = lambda t, m: f"{t:%b %d %H:%M:%S} node48 kernel: {m}"
    w(b, "nodes/node48/kern.log", "\n".join(noise_k(fmt, st, 3) + [
        fmt(pe - timedelta(seconds=1), "mlx5_core 0000:1a:00.0: mlx5_port_module_event:1165:(pid 0): Port module event[error]: module 0, Cable error, Power budget exceeded"),
        fmt(pe, "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link DOWN"),
        fmt(pe + timedelta(seconds=6), "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link ACTIVE"),
        fmt(pe + timedelta(seconds=40), "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link DOWN")]))


def a06():  # RoCE cable unplugged + ibstat; mpirun --tag-output prefixes
    b = "a06_roce_cable_unplugged_mpirun"
    fresh(b, "network_fault", "h100-r12", "-")
    st = datetime(2024, 10, 2, 10, 0, 0); cu = datetime(2024, 10, 2, 11, 47, 5, 223000); end = cu + timedelta(minutes=10, seconds=20)
    incident(b, "55310", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("55310", "gpt-roce", "FAILED", "1:0", "h100-r[11-12]", st, end, batch="h100-r11")))
    L = []
    for r in range(16):
        h = "h100-r11" if r < 8 else "h100-r12"; lr = r % 8
        L += [f"[1,{r}]<stdout>:{x}" for x in nccl_init(h, 9100 + r, lr, r, 16, BUS[lr])]
        L += [f"[1,{r}]<stdout>:{x}" for x in train(st + timedelta(minutes=1), 2, 3000)]
    for r in range(16):
        L += [f"[1,{r}]<stderr>:{x[len(f'[rank{r}]:'):]}" for x in wd(r, cu + timedelta(minutes=10, milliseconds=r * 11), 91004)]
    L += ["--------------------------------------------------------------------------",
          "Primary job  terminated normally, but 1 process returned",
          "a non-zero exit code. Per user-direction, the job has been aborted.",
          "--------------------------------------------------------------------------",
          "--------------------------------------------------------------------------",
          "mpirun detected that one or more processes exited with non-zero status, thus causing",
          "the job to be terminated. The first process to do so was:",
          "",
          "  Process name: [[41305,1],3]",
          "  Exit code:    6",
          "--------------------------------------------------------------------------"]
    w(b, "logs/mpirun-55310.log", "\n".join(L))
    for h in ["h100-r11", "h100-r12"]:
        fmt = kfmt(h); K = noise_k(fmt, st, 3)
        if h == "h100-r12":
            K += [fmt(cu, "mlx5_core 0000:9a:00.0: mlx5_port_module_event:1151:(pid 0): Port module event: module 1, Cable unplugged"),
                  fmt(cu + timedelta(milliseconds=40), "mlx5_core 0000:9a:00.0 ens21f0np0: Link down"),
                  fmt(cu + timedelta(milliseconds=41), "mlx5_core 0000:9a:00.0: mlx5e_port_module_event? no")][:2]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    w(b, "nodes/h100-r12/ibstat.txt", """CA 'mlx5_0'
	CA type: MT4129
	Number of ports: 1
	Firmware version: 28.39.1002
	Hardware version: 0
	Node GUID: 0x946dae0300a1b2c4
	System image GUID: 0x946dae0300a1b2c4
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 400
		Base lid: 0
		LMC: 0
		SM lid: 0
		Capability mask: 0x00010000
		Port GUID: 0x966daefffea1b2c4
		Link layer: Ethernet
CA 'mlx5_4'
	CA type: MT4129
	Number of ports: 1
	Firmware version: 28.39.1002
	Port 1:
		State: Down
		Physical state: Disabled
		Rate: 40
		Base lid: 0
		LMC: 0
		SM lid: 0
		Capability mask: 0x00010000
		Port GUID: 0x966daefffea1b2d0
		Link layer: Ethernet
""")


def a07():  # Ethernet-only NCCL socket timeout; peer named by IP
    b = "a07_socket_timeout_eth_only"
    fresh(b, "network_fault", "cpu-gpu-b", "-")
    st = datetime(2024, 2, 1, 7, 0, 0); to = datetime(2024, 2, 1, 7, 48, 12); end = to + timedelta(seconds=5)
    incident(b, "4410", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("4410", "ddp-eth", "FAILED", "1:0", "cpu-gpu-[a-c]".replace("[a-c]", "a,cpu-gpu-b,cpu-gpu-c"), st, end, batch="cpu-gpu-a")))
    ips = {"cpu-gpu-a": "10.0.3.12", "cpu-gpu-b": "10.0.3.14", "cpu-gpu-c": "10.0.3.19"}
    for ni, h in enumerate(ips):
        L = []
        for lr in range(4):
            r = ni * 4 + lr
            L += [f"[rank{r}]:{x}" for x in nccl_init(h, 6000 + r, lr, r, 12, BUS[lr], net=f"ens5:{ips[h]}<0>")]
            L += [f"[rank{r}]:{x}" for x in train(st + timedelta(minutes=1), 2, 1200)]
        if h != "cpu-gpu-b":
            for lr in range(4):
                r = ni * 4 + lr
                t = to + timedelta(milliseconds=r * 3)
                L += [f"[rank{r}]:{h}:{6000+r}:{6090+r} [{lr}] misc/socket.cc:538 NCCL WARN NET/Socket : socket progress error",
                      f"[rank{r}]:{h}:{6000+r}:{6090+r} [{lr}] misc/socket.cc:50 NCCL WARN socketProgressOpt: Call to recv from {ips['cpu-gpu-b']}<4{r}512> failed : Connection timed out",
                      f"[rank{r}]:{h}:{6000+r}:{6090+r} [{lr}] NCCL INFO misc/socket.cc:752 -> 6",
                      f"[rank{r}]:[{glog('E', t + timedelta(seconds=1), 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5",
                      f"[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
                      f"[rank{r}]: Last error:",
                      f"[rank{r}]: socketProgressOpt: Call to recv from {ips['cpu-gpu-b']}<4{r}512> failed : Connection timed out"]
        w(b, f"logs/{h}.log", "\n".join(L))


def a08():  # hang: only "last enqueued/last completed" lines, culprit prints none
    b = "a08_hang_enqueued_only"
    fresh(b, "hang", "trn-2", "6")
    st = datetime(2024, 1, 9, 22, 0, 0); hang = datetime(2024, 1, 9, 23, 10, 4); to = hang + timedelta(minutes=30); end = to + timedelta(seconds=8)
    incident(b, "9121", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("9121", "vit-h", "FAILED", "1:0", "trn-[1-2]", st, end, batch="trn-1")))
    for ni, h in enumerate(["trn-1", "trn-2"]):
        L = []
        for lr in range(4):
            r = ni * 4 + lr
            L += [f"[rank{r}]:{x}" for x in nccl_init(h, 7700 + r, lr, r, 8, BUS[lr])]
            L += [f"[rank{r}]:{x}" for x in train(st + timedelta(minutes=1), 3, 1400)]
        for lr in range(4):
            r = ni * 4 + lr
            if r == 6: continue
            t = to + timedelta(milliseconds=r * 7)
            L += [f"[rank{r}]:[{glog('E', t, 'ProcessGroupNCCL.cpp:1316')}] [Rank {r}] Exception (either an error or timeout) detected by watchdog at work: 4121, last enqueued NCCL work: 4121, last completed NCCL work: 4120.",
                  f"[rank{r}]:[{glog('E', t + timedelta(milliseconds=1), 'ProcessGroupNCCL.cpp:577')}] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
                  f"[rank{r}]:[{glog('E', t + timedelta(milliseconds=2), 'ProcessGroupNCCL.cpp:583')}] [Rank {r}] To avoid data inconsistency, we are taking the entire process down."]
        w(b, f"logs/{h}.log", "\n".join(L))


def a09():  # PT 2.4 heartbeat monitor on the culprit; others plain watchdog same seq
    b = "a09_hang_heartbeat_monitor"
    fresh(b, "hang", "a100-n2", "7")
    st = datetime(2024, 9, 1, 0, 0, 0); to = datetime(2024, 9, 1, 2, 30, 0); end = to + timedelta(minutes=9)
    incident(b, "77001", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("77001", "llm", "FAILED", "6:0", "a100-n[1-4]", st, end, "FAILED", "6:0", batch="a100-n1")))
    hosts = ["a100-n1", "a100-n2", "a100-n3", "a100-n4"]
    for ni, h in enumerate(hosts):
        L = []
        for lr in range(4):
            r = ni * 4 + lr
            L += [f"[rank{r}]:{x}" for x in nccl_init(h, 8800 + r, lr, r, 16, BUS[lr])]
            L += [f"[rank{r}]:{x}" for x in train(st + timedelta(minutes=1), 3, 2000)]
        for lr in range(4):
            r = ni * 4 + lr
            t = to + timedelta(milliseconds=r * 4)
            if r == 7:
                t2 = t + timedelta(minutes=8)
                L += [f"[rank{r}]:[{glog('E', t2, 'ProcessGroupNCCL.cpp:1423')}] [PG 0 (default_pg) Rank 7] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=2",
                      f"[rank{r}]:[{glog('E', t2, 'ProcessGroupNCCL.cpp:1424')}] [PG 0 (default_pg) Rank 7] First PG on this rank that detected no heartbeat of its watchdog.",
                      f"[rank{r}]:[{glog('F', t2 + timedelta(seconds=60), 'ProcessGroupNCCL.cpp:1268')}] [PG 0 (default_pg) Rank 7] [PG 0 (default_pg) Rank 7] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a longer timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to file an issue to PyTorch about the short timeout or false positive abort; otherwise, please attempt to debug the hang. "]
            else:
                L += [f"[rank{r}]:{x[len(f'[rank{r}]:'):]}" for x in wd(r, t, 65530)]
        w(b, f"logs/{h}.log", "\n".join(L))


def a10():  # rank 0 stuck in torch.save on NFS; others in barrier time out
    b = "a10_hang_torch_save_rank0"
    fresh(b, "hang", "dgx-01", "0")
    st = datetime(2024, 5, 5, 12, 0, 0); ck = datetime(2024, 5, 5, 13, 0, 0); to = ck + timedelta(minutes=10, seconds=3); end = to + timedelta(seconds=10)
    incident(b, "120", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("120", "ckpt", "FAILED", "1:0", "dgx-[01-02]", st, end, batch="dgx-01")))
    for ni, h in enumerate(["dgx-01", "dgx-02"]):
        L = []
        for lr in range(8):
            r = ni * 8 + lr
            L += [f"[rank{r}]:{x}" for x in nccl_init(h, 1000 + r, lr, r, 16, BUS[lr])]
            L += [f"[rank{r}]:{x}" for x in train(st + timedelta(minutes=2), 3, 1200)]
        if ni == 0:
            L += [f"[rank0]:{ck:%Y-%m-%d %H:%M:%S},004 - INFO - train - Saving checkpoint to /nfs/ckpt/step_6000/model.pt"]
        for lr in range(8):
            r = ni * 8 + lr
            if r == 0: continue
            L += wd(r, to + timedelta(milliseconds=r * 3), 18007, op="_ALLGATHER_BASE" if False else "BARRIER")
        w(b, f"logs/{h}.log", "\n".join(L))
        fmt = lambda t, m, h=h: f"{t:%b %d %H:%M:%S} {h} kernel: {m}"
        K = noise_k(fmt, st, 3)
        if h == "dgx-01":
            K += [fmt(ck + timedelta(seconds=40), "nfs: server nfs-ckpt01 not responding, still trying"),
                  fmt(ck + timedelta(minutes=4, seconds=2), "INFO: task python:1000 blocked for more than 120 seconds."),
                  fmt(ck + timedelta(minutes=4, seconds=2), "      Tainted: P           OE     5.15.0-97-generic #107-Ubuntu"),
                  fmt(ck + timedelta(minutes=4, seconds=2), "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message."),
                  fmt(ck + timedelta(minutes=4, seconds=2), "task:python          state:D stack:0     pid:1000  ppid:991    flags:0x00004002"),
                  fmt(ck + timedelta(minutes=4, seconds=2), "Call Trace:"),
                  fmt(ck + timedelta(minutes=4, seconds=2), " <TASK>"),
                  fmt(ck + timedelta(minutes=4, seconds=2), " rpc_wait_bit_killable+0x25/0xb0 [sunrpc]"),
                  fmt(ck + timedelta(minutes=4, seconds=2), " nfs_file_write+0x1c1/0x2d0 [nfs]")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))
    w(b, "logs/py-spy-rank0.txt", """Process 1000: python train.py --config cfg.yaml
Python v3.10.12 (/usr/bin/python3.10)

Thread 1000 (active): "MainThread"
    write (torch/serialization.py:436)
    _save (torch/serialization.py:862)
    save (torch/serialization.py:628)
    save_checkpoint (train.py:211)
    main (train.py:340)
    <module> (train.py:355)
Thread 1077 (idle): "Thread-1 (_pin_memory_loop)"
    select (selectors.py:416)
""")


def png_bytes():
    def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes([R.randint(0, 255) for _ in range(64 * 3)]) for _ in range(64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


SECRETS = {"WANDB_API_KEY": "7f3c9e1a2b4d6f8091a2b3c4d5e6f708192a3b4c",
           "HF_TOKEN": "hf_QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
           "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY99",
           "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE"}


def a11():  # secrets + noise; real failure: S3 401 on rank 4 whose message carries a presigned URL
    b = "a11_secrets_and_noise"
    fresh(b, "application_error", "gpu-s01", "4")
    st = datetime(2024, 7, 7, 9, 0, 0); err = datetime(2024, 7, 7, 9, 44, 1, 555000); end = err + timedelta(seconds=20)
    incident(b, "5150", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("5150", "s3-stream", "FAILED", "1:0", "gpu-s[01-02]", st, end, batch="gpu-s01")))
    w(b, "README.md", "# incident 5150\nCollected by oncall. Job died after ~45 min. See env.txt for the job env.\n")
    w(b, "env.txt", "\n".join([f"{k}={v}" for k, v in SECRETS.items()] + ["SLURM_JOB_ID=5150", "NCCL_DEBUG=INFO", "MASTER_ADDR=gpu-s01", "DATABASE_URL=postgres://train:S3cr3tPassw0rd@db.internal:5432/runs"]))
    w(b, "nvidia-smi-q.txt", "\n".join(["==============NVSMI LOG==============", "", "Timestamp                                 : Sun Jul  7 09:50:02 2024",
        "Driver Version                            : 550.54.15", "CUDA Version                              : 12.4", "", "Attached GPUs                             : 8"] +
        sum([[f"GPU 00000000:{bb[:2]}:00.0", "    Product Name                          : NVIDIA H100 80GB HBM3", "    Persistence Mode                      : Enabled",
              "    ECC Errors", "        Volatile", "            SRAM Correctable              : 0", "            SRAM Uncorrectable            : 0", "            DRAM Correctable              : 0",
              "            DRAM Uncorrectable            : 0", "    Retired Pages", "        Single Bit ECC                    : N/A", "    Remapped Rows", "        Correctable Error                 : 0",
              "        Uncorrectable Error               : 0", "        Pending                           : No", "        Remapping Failure Occurred        : No"] for bb in BUS], [])))
    w(b, "loss_curve.png", png_bytes())
    # 20 MB noise log
    p = ROOT / b / "logs" / "dataloader_debug.log"; p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w") as f:
        line = "2024-07-07 09:{m:02d}:{s:02d},123 DEBUG fsspec.s3 - fetched range bytes={a}-{z} of s3://corpus-prod/shards/shard-{n:05d}.tar in 0.0{q}s\n"
        i = 0; size = 0
        while size < 20_000_000:
            s = line.format(m=(i // 600) % 44, s=(i // 10) % 60, a=i * 4096, z=i * 4096 + 4095, n=i % 9000, q=i % 10)
            f.write(s); size += len(s); i += 1
    cfg = json.dumps({"model": "llama-3-8b", "lr": 3e-4, "wandb": {"project": "s3stream", "api_key": SECRETS["WANDB_API_KEY"]}, "hf_token": SECRETS["HF_TOKEN"]})
    for ni, h in enumerate(["gpu-s01", "gpu-s02"]):
        L = []
        for lr in range(8):
            r = ni * 8 + lr
            L += [f"[rank{r}]:{x}" for x in nccl_init(h, 4000 + r, lr, r, 16, BUS[lr])]
            L += [f"[rank{r}]:{st + timedelta(seconds=30):%Y-%m-%d %H:%M:%S},000 - INFO - train - config: {cfg}"]
            L += [f"[rank{r}]:{x}" for x in train(st + timedelta(minutes=1), 2, 1500)]
        if h == "gpu-s01":
            url = (f"https://corpus-prod.s3.us-east-1.amazonaws.com/shards/shard-01234.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={SECRETS['AWS_ACCESS_KEY_ID']}%2F20240707%2Fus-east-1%2Fs3%2Faws4_request"
                   f"&X-Amz-Date=20240707T094401Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=9c1b7e2f4a6d8b0c1e3f5a7b9d1f3e5a7c9b1d3f5e7a9c1b3d5f7e9a1c3b5d7f")
            L += [f"[rank4]:{err:%Y-%m-%d %H:%M:%S},{err.microsecond//1000:03d} - ERROR - data - fetching {url} failed",
                  "[rank4]: Traceback (most recent call last):",
                  '[rank4]:   File "/workspace/train.py", line 301, in <module>',
                  "[rank4]:     main()",
                  '[rank4]:   File "/workspace/data/stream.py", line 88, in __iter__',
                  "[rank4]:     resp.raise_for_status()",
                  f"[rank4]: requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: {url}"]
        for lr in range(8):
            r = ni * 8 + lr
            if r == 4: continue
            L += [f"[rank{r}]:[{glog('E', err + timedelta(seconds=3, milliseconds=r), 'ProcessGroupNCCL.cpp:1595')}] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"]
        w(b, f"logs/{h}.log", "\n".join(L))


def a12():  # two jobs in sacct; ours TIMEOUT, other OUT_OF_MEMORY + NODE_FAIL on shared node
    b = "a12_two_jobs_sacct"
    fresh(b, "time_limit", "-", "-")
    st = datetime(2024, 4, 1, 0, 0, 0); end = datetime(2024, 4, 2, 0, 0, 31)
    incident(b, "60002", st - timedelta(hours=6), end + timedelta(minutes=5))
    ost = st - timedelta(hours=5); oend = st - timedelta(hours=1, minutes=13)
    rows = [HDR] + sacct_rows("60001", "pretrain", "OUT_OF_MEMORY", "0:125", "gpu-t[01-02]", ost, oend, "OUT_OF_MEMORY", "0:125", "gpu-t01")
    r2 = sacct_rows("60002", "pretrain", "TIMEOUT", "0:0", "gpu-t[01-02]", st, end, "CANCELLED", "0:15", "gpu-t01")
    r2[1] = r2[1].replace("CANCELLED|0:15", "CANCELLED|0:15"); rows += r2
    w(b, "slurm/sacct.txt", "\n".join(rows))
    L = []
    for r in range(16):
        L += [f"{r}: {x}" for x in train(st + timedelta(minutes=1), 3, 28000)]
    L += [f"slurmstepd: error: *** JOB 60002 ON gpu-t01 CANCELLED AT {end:{F}} DUE TO TIME LIMIT ***",
          f"slurmstepd: error: *** STEP 60002.0 ON gpu-t01 CANCELLED AT {end:{F}} DUE TO TIME LIMIT ***"]
    for r in range(16):
        L.append(f"{r}: W{end:%m%d %H:%M:%S}.004000 1402 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death signal, shutting down workers")
    w(b, "slurm-60002.out", "\n".join(L))
    # previous attempt's log also collected
    P = [f"{r}: {x}" for r in range(16) for x in train(ost + timedelta(minutes=1), 2, 6000)]
    P += ["slurmstepd: error: Detected 1 oom_kill event in StepId=60001.0. Some of the step tasks have been OOM Killed.",
          "srun: error: gpu-t02: task 9: Out Of Memory"]
    w(b, "slurm-60001.out", "\n".join(P))


def a13():  # 256 ranks, per-rank logs, Xid 79 on node 16 gpu busId ab000 -> lr 5 -> rank 133
    b = "a13_256_ranks_xid_middle"
    fresh(b, "gpu_hardware", "gpu-016", "133")
    st = datetime(2024, 11, 11, 3, 0, 0); x = datetime(2024, 11, 11, 5, 12, 9); end = x + timedelta(minutes=10, seconds=30)
    incident(b, "990001", st, end + timedelta(minutes=3))
    w(b, "slurm/sacct.txt", "\n".join([HDR] + sacct_rows("990001", "big", "FAILED", "1:0", "gpu-[000-031]", st, end, batch="gpu-000")))
    for r in range(256):
        ni, lr = divmod(r, 8); h = f"gpu-{ni:03d}"
        L = nccl_init(h, 20000 + r, lr, r, 256, BUS[lr]) + train(st + timedelta(minutes=1), 2, 3600)
        if r != 133:
            L += [y[len(f"[rank{r}]:"):] for y in wd(r, x + timedelta(minutes=10, milliseconds=r), 301288)]
        w(b, f"logs/rank{r}.log", "\n".join(L))
    for ni in (0, 15, 16, 17):
        h = f"gpu-{ni:03d}"; fmt = kfmt(h); K = noise_k(fmt, st, 3)
        if ni == 16:
            K += [fmt(x, "NVRM: Xid (PCI:0000:ab:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                  fmt(x, "NVRM: GPU 0000:ab:00.0: GPU has fallen off the bus.")]
        w(b, f"nodes/{h}/kern.log", "\n".join(K))


def render(out: Path) -> None:
    global ROOT, R
    ROOT, R = K.start(out, 1234)
    for f in (a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13):
        f()


if __name__ == "__main__":
    import sys
    render(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/adv3"))
