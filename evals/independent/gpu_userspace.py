"""Issue 24, classes 2 and 5: a GPU fault as user space sees it, with no kernel log in the
bundle: TensorFlow's CUDA_ERROR_ECC_UNCORRECTABLE, `dcgmi diag` failing one GPU, `nvidia-smi`
unable to get a device handle with `lspci` showing the device `(rev ff)`, and c10's CUDA
`unknown error` raised in a rank's NCCL watchdog thread."""

from __future__ import annotations

import random

from . import log_writers as lw
from . import text_forms as tf
from .case import Case, Expected
from .dcgmi import diag_report
from .model import later, make_job
from .run_story import begin
from .scheduler import record_end

BUS = ("1b", "3d", "4c", "5d", "9b", "bb", "cb", "db")  # log_writers.nccl_init's busIds
LIB = "/usr/local/lib/python3.10/dist-packages/torch/lib"


def _tf_line(rng: random.Random, t, level: str, where: str, text: str, modern: bool) -> str:
    if modern:  # TF >= 2.16 logs through absl: E0000 00:00:<epoch> <tid> file:line]
        return f"{level}0000 00:00:{t.timestamp():.6f} {rng.randint(3000, 9000)} {where}] {text}"
    return f"{t:%Y-%m-%d %H:%M:%S.%f}: {level} tensorflow/{where}] {text}"


def tf_cuda_ecc(rng: random.Random, case_id: str, variant: int) -> Case:
    """TensorFlow MultiWorkerMirroredStrategy; one worker's GPU reports an uncorrectable ECC
    error while polling a CUDA event; the others' collectives abort. Logs named by host."""
    job = make_job(rng)
    modern = variant % 2 == 1
    bad = rng.randrange(len(job.hosts))
    t_fail = later(job.start, rng.uniform(1, 6) * 3600)
    workers = [f"{h}:{2222 + i}" for i, h in enumerate(job.hosts)]
    ips = tf.host_ips(rng, job.hosts)
    files = {}
    pattern = rng.choice(("logs/worker-{h}.log", "logs/{h}.err", "tf-{h}.out"))
    for i, host in enumerate(job.hosts):
        rows = [f"TF_CONFIG={{\"cluster\": {{\"worker\": {workers}}}, \"task\": {{\"type\": "
                f"\"worker\", \"index\": {i}}}}}".replace("'", '"'),
                _tf_line(rng, later(job.start, 5), "I", "core/common_runtime/gpu/gpu_device.cc:"
                         "1928", f"Created device /job:worker/replica:0/task:{i}/device:GPU:0 "
                         "with 78915 MB memory:  -> device: 0, name: NVIDIA H100 80GB HBM3, pci "
                         "bus id: 0000:1b:00.0, compute capability: 9.0", modern)]
        for k in range(1, 9):
            rows.append(f"Epoch {k}/40")
            rows.append(f"2000/2000 [==============================] - 611s 305ms/step - loss: "
                        f"{2.1 - k * 0.1:.4f} - accuracy: {0.4 + k * 0.03:.4f}")
        if i == bad:
            where = ("xla/stream_executor/cuda/cuda_event.cc:40" if modern
                     else "stream_executor/cuda/cuda_event.cc:29")
            rows.append(_tf_line(rng, t_fail, "E", where, "Error polling for event status: "
                                 "failed to query event: CUDA_ERROR_ECC_UNCORRECTABLE: "
                                 "uncorrectable ECC error encountered", modern))
            rows.append(_tf_line(rng, later(t_fail, 0.001), "F", "core/common_runtime/gpu/"
                                 "gpu_event_mgr.cc:273", "Unexpected Event status: 1", modern))
            rows.append("Fatal Python error: Aborted")
        else:
            rows.append(_tf_line(rng, later(t_fail, 31), "E", "core/common_runtime/base_collective"
                                 "_executor.cc:249", "BaseCollectiveExecutor::StartAbort "
                                 f"UNAVAILABLE: failed to connect to all addresses; last error: "
                                 f"UNKNOWN: ipv4:{ips[job.hosts[bad]]}:{2222 + bad}: Failed to "
                                 "connect to remote host: Connection refused", modern))
            rows.append("tensorflow.python.framework.errors_impl.UnavailableError: Collective ops "
                        "is aborted by: failed to connect to all addresses")
        files[pattern.format(h=host)] = "\n".join(rows) + "\n"
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=job.hosts[bad],
        notes=f"TensorFlow on {job.hosts[bad]} (the log named after it, worker {bad} of "
              "TF_CONFIG): CUDA_ERROR_ECC_UNCORRECTABLE polling an event, then abort; the other "
              "workers' collectives abort afterwards, failing to reach it"), files=files)


def dcgmi_fail(rng: random.Random, case_id: str, variant: int) -> Case:
    """A rank dies with an unspecified launch failure; the admin's `dcgmi diag -r 3` on that
    node fails its GPU's memory test, and on another node passes everything."""
    story, culprit, t_fail = begin(rng, (1, 5))
    job = story.job
    host, local = job.host_of(culprit), job.local_rank(culprit)
    story.say(culprit, t_fail, "RuntimeError: CUDA error: unspecified launch failure")
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    files = story.files
    new = variant % 2 == 1
    files[f"nodes/{host}/dcgmi_diag.txt"] = diag_report(job.gpus_per_node, local, new)
    other = rng.choice([h for h in job.hosts if h != host])
    files[f"nodes/{other}/dcgmi_diag.txt"] = diag_report(job.gpus_per_node, None, new)
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=host, rank=culprit,
        notes=f"rank {culprit} (local GPU {local} of {host}) dies with an unspecified launch "
              f"failure; dcgmi diag on {host} fails GPU {local}'s memory test (uncorrectable "
              f"errors), dcgmi diag on {other} passes (decoy); no kernel log"), files=files)


def gpu_lost_smi(rng: random.Random, case_id: str, variant: int) -> Case:
    """One rank stops without a word; every other rank times out in the collective. No kernel
    log: only `nvidia-smi` and `lspci` run on that node afterwards show the GPU gone."""
    story, culprit, t_fail = begin(rng, (1, 7))
    job = story.job
    host, local = job.host_of(culprit), job.local_rank(culprit)
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "6:0", later(t_fail, 640))
    story.finish(question=True)
    bus = f"{BUS[local]}:00.0"
    if variant % 2 == 0:
        smi = (f"Unable to determine the device handle for GPU0000:{bus.upper()}: Unknown "
               "Error\n" if variant % 4 == 0 else f"Unable to determine the device handle for "
               f"GPU 0000:{bus.upper()}: GPU is lost.  Reboot the system to recover this GPU\n")
    else:
        smi = "No devices were found\n"
    lspci = "".join(f"{BUS[g]}:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] "
                    f"(rev {'ff' if g == local else 'a1'})\n" for g in range(job.gpus_per_node))
    story.files[f"nodes/{host}/nvidia-smi.txt"] = smi
    story.files[f"nodes/{host}/lspci.txt"] = lspci
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=host, rank=culprit,
        notes=f"rank {culprit} (busId {BUS[local]}000 in its NCCL init line) goes silent; on "
              f"{host} nvidia-smi cannot get a handle ({smi.strip()[:40]}...) and lspci shows "
              f"{bus} (rev ff): the GPU is off the bus. The watchdog timeouts of the others are "
              "symptoms; direct hardware evidence outranks the timing pattern"),
        files=story.files)


def _frames(cuda: bool) -> list[str]:
    names = (["c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, "
              "bool) + 0x118", "c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() "
              "const + 0x56", "c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58"] if cuda
             else ["c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
                   "duration<long, std::ratio<1l, 1000l> > >) + 0x282"])
    names = ["c10::Error::Error(c10::SourceLocation, std::string) + 0x96",
             *(["c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string "
                "const&) + 0x64"] if cuda else []), *names,
             "c10d::ProcessGroupNCCL::watchdogHandler() + 0x233",
             "c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d"]
    libs = ["libc10.so"] * (2 if cuda else 1) + ["libc10_cuda.so" if cuda else "libtorch_cuda.so"]
    out = [f"frame #{i}: {n} (0x7f{i:02d}3c1a{i * 7:04x} in {LIB}/"
           f"{libs[i] if i < len(libs) else 'libtorch_cuda.so'})" for i, n in enumerate(names)]
    k = len(names)
    return out + [f"frame #{k}: <unknown function> + 0xdc253 (0x7f2b9e0dc253 in /lib/x86_64-linux"
                  "-gnu/libstdc++.so.6)", f"frame #{k + 1}: <unknown function> + 0x94ac3 "
                  "(0x7f2ba5c94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
                  f"frame #{k + 2}: clone + 0x44 (0x7f2ba5d26a04 in /lib/x86_64-linux-gnu/"
                  "libc.so.6)", ""]


def c10_cuda_watchdog(rng: random.Random, case_id: str, variant: int) -> Case:
    """A rank's NCCL watchdog thread hits `CUDA error: unknown error` (sticky, from the GPU) and
    terminates the process; the others time out 10 minutes later. No kernel log."""
    story, culprit, t_fail = begin(rng, (1, 6))
    job = story.job
    head = (f"[PG ID 0 PG GUID 0(default_pg) Rank {culprit}] Process group watchdog thread "
            "terminated with exception: CUDA error: unknown error")
    block = [f"{lw.glog(job.local(t_fail), 'E', 'ProcessGroupNCCL.cpp:1595')} {head}",
             "CUDA kernel errors might be asynchronously reported at some other API call, so the "
             "stacktrace below might be incorrect.", "For debugging consider passing "
             "CUDA_LAUNCH_BLOCKING=1", "Compile with `TORCH_USE_CUDA_DSA` to enable device-side "
             "assertions.", "", "Exception raised from c10_cuda_check_implementation at /pytorch/"
             "c10/cuda/CUDAException.cpp:43 (most recent call first):", *_frames(True),
             "terminate called after throwing an instance of 'c10::DistBackendError'",
             f"  what():  {head}"]
    story.say_block(culprit, t_fail, block)
    story.victims({culprit}, t_fail)
    record_end(story, "FAILED", "1:0", later(t_fail, 640))
    story.finish(question=True)
    return Case(expected=Expected(
        case_id=case_id, category="gpu_hardware", node=job.host_of(culprit), rank=culprit,
        max_confidence=0.6,
        notes=f"rank {culprit}'s NCCL watchdog thread raises c10's CUDA `unknown error` (from "
              "c10_cuda_check_implementation in finishedGPUExecutionInternal) and aborts first; "
              "the others time out. A GPU fault is the likely start, but the kernel log that "
              "would confirm it (an Xid) is not in the bundle"), files=story.files)
