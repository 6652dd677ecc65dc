"""Issue 24, classes 2, 10 and 11: host memory as container platforms report it: runc's
container init OOM-killed (CreateContainerError), kubelet's eviction pasted as a pod's Events
block, and a training platform's own exit diagnostics (OpenPAI-style: exit type, reason, the
pod pattern it matched, code 137)."""

from __future__ import annotations

import random
from datetime import timedelta

import yaml

from . import k8s_text as kt
from . import text_forms as tf
from .case import Case, Expected


def runc_init_oom(rng: random.Random, case_id: str, variant: int) -> Case:
    """A worker's container never starts: runc reports its init OOM-killed; the other pods wait
    at the rendezvous until it times out."""
    kj = kt.make_kube_job(rng)
    bad = rng.randrange(1, len(kj.nodes))
    kj.now = kj.start + timedelta(minutes=rng.randint(8, 25))
    for p in range(len(kj.nodes)):
        if p != bad:
            kj.say(p, kj.start + timedelta(seconds=20), "WARNING:torch.distributed.run: Setting "
                   "OMP_NUM_THREADS environment variable for each process to be 1 in default")
            kj.say(p, kj.start + timedelta(seconds=21), "INFO:torch.distributed.elastic.agent."
                   "server.api:[default] starting workers for entrypoint: python")
    msg = ("Error: failed to create containerd task: failed to create shim task: OCI runtime "
           "create failed: runc create failed: unable to start container process: container "
           "init was OOM-killed (memory limit too low?): unknown")
    events = [(kj.start + timedelta(seconds=5 + k * 40), "Warning", "Failed", f"pod/{kj.pod(bad)}",
               msg) for k in range(3)]
    events.append((kj.start + timedelta(seconds=2), "Normal", "Pulled", f"pod/{kj.pod(bad)}",
                   "Container image \"nvcr.io/nvidia/pytorch:24.07-py3\" already present on "
                   "machine"))
    events.append((kj.now - timedelta(seconds=30), "Warning", "BackOff", f"pod/{kj.pod(bad)}",
                   "Back-off restarting failed container pytorch in pod "
                   f"{kj.pod(bad)}_{kj.namespace}"))
    files = kt.pod_logs(kj, rng)
    files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: ("0/1", "CreateContainerError", 0)})
    files["k8s/get_events.txt"] = kt.events_table(kj, events)
    if variant % 2:
        files["k8s/worker.yaml"] = yaml.safe_dump({"containers": [{"name": "pytorch",
                                                                   "resources": {"limits": {
                                                                       "memory": "64Mi",
                                                                       "nvidia.com/gpu": 8}}}]})
    files["incident.yaml"] = yaml.safe_dump({"question": f"{kj.name} never started, why?"})
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=kj.nodes[bad],
        notes=f"{kj.pod(bad)} on {kj.nodes[bad]}: runc's container init was OOM-killed "
              "(memory limit too low), CreateContainerError; no rank ever ran there, the other "
              "pods wait at the rendezvous. The remedy is the pod's memory limit."), files=files)


def eviction_block(rng: random.Random, case_id: str, variant: int) -> Case:
    """kubelet evicts a worker under node memory pressure; the user pastes the pod's Events
    block (From `kubelet, <node>` in older kubectl, else `kubelet` with the node elsewhere)."""
    kj, bad, t_fail = kt.lost_pod(rng, (1, 7), (11, 30))
    old_kubectl = variant % 2 == 0
    source = f"kubelet, {kj.nodes[bad]}" if old_kubectl else "kubelet"
    used = rng.randint(480, 1900) * 1024 * 1024
    ago = tf.age((kj.now - t_fail).total_seconds())
    rows = [["Warning", "Evicted", ago, source,
             f"The node was low on resource: memory. Threshold quantity: 100Mi, available: "
             f"{rng.randint(60000, 99000)}Ki. Container pytorch was using {used}Ki, request is "
             f"{rng.choice((256, 384))}Gi, has larger consumption of memory."],
            ["Normal", "Killing", ago, source, "Stopping container pytorch"],
            ["Warning", "ExceededGracePeriod", ago, source,
             "Container runtime did not kill the pod within specified grace period."]]
    width = [max(len(r[i]) for r in rows + [["Type", "Reason", "Age", "From", ""]])
             for i in range(4)]
    head = ["Type", "Reason", "Age", "From", "Message"]
    block = "Events:\n" + "".join(
        "  " + "  ".join(c.ljust(width[i]) for i, c in enumerate(r[:4])) + "  " + r[4] + "\n"
        for r in [head, ["-" * len(h) for h in head], *rows])
    files = kt.pod_logs(kj, rng)
    files["k8s/pasted_events.txt"] = block
    if not old_kubectl:
        files["k8s/get_pods.txt"] = kt.pods_table(kj, {bad: ("0/1", "Evicted", 0)})
    files["incident.yaml"] = yaml.safe_dump({"question": f"what killed {kj.name}?"})
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=kj.nodes[bad],
        notes=f"kubelet on {kj.nodes[bad]} evicted {kj.pod(bad)} for node memory pressure "
              "(pasted Events block; the node in "
              + ("its From column)" if old_kubectl else "get pods, the pod Evicted there)")
              + "; that pod's ranks stop, the others time out"), files=files)


def platform_exit(rng: random.Random, case_id: str, variant: int) -> Case:
    """The platform's job page: exit code, type, reason, the pod pattern it matched, and the
    task list with each task's node; the container's last log lines end in `Killed`."""
    kj, bad, t_fail = kt.lost_pod(rng, (0.3, 3), (5, 30))
    tail = (f"{t_fail:%Y-%m-%d %H:%M:%S},{rng.randint(100, 999)} INFO ****** Start training "
            f"epoch {rng.randint(2, 9)} ******\\n"
            "/usr/local/pai/runtime: line 30:     7 Killed                  "
            "${RUNTIME_SCRIPT_DIR}/runtime_entry.sh\\n")
    tasks = "".join(f"  worker    {p:<5} {'FAILED' if p == bad else 'STOPPED':<9} {kj.nodes[p]}"
                    f"    {kj.pod_ips[p]}\n" for p in range(len(kj.nodes)))
    text = (f"Job: {kj.name}    User: mlops    State: FAILED    Retries: 0\n"
            f"Created: {kj.start:%Y-%m-%d %H:%M:%S}  Completed: {t_fail:%Y-%m-%d %H:%M:%S}\n\n"
            "Exit Code: -1200\nExit Type: USER_FAILURE\n"
            "Exit Reason: User Container killed by docker due to it exceeded the request memory\n"
            f"Pod failed: PodPattern matched: containers: - name: app reason: OOMKilled message: "
            f"\"{tail}\" code: 137\n\nExit Solutions:\n  Increase per task memory request\n"
            "  Decrease per task memory usage by such as increasing task number\n\n"
            "Task role  Index State     Node    IP\n" + tasks)
    files = kt.pod_logs(kj, rng) if variant % 2 == 0 else {}
    files[rng.choice(("platform/job_status.txt", "job_exit_diagnostics.txt"))] = text
    files["incident.yaml"] = yaml.safe_dump({"question": f"why did {kj.name} fail?"})
    return Case(expected=Expected(
        case_id=case_id, category="host_oom", node=kj.nodes[bad],
        notes=f"the platform's exit diagnostics: task {bad}'s container killed for exceeding its "
              f"requested memory (OOMKilled, code 137); the task list puts it on {kj.nodes[bad]}"),
        files=files)
