"""The terminal progress line of a slow model (planner/model_progress.py): drawn only on a
terminal, counts only (never the model's text), cleared when done; and the typed scheduler
facts the failure analysis reads (planner/scheduler_facts.py)."""

from __future__ import annotations

import io

from goodput_agent.planner.model_progress import TerminalProgress
from goodput_agent.planner.scheduler_facts import SchedulerFacts


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_only_and_shows_counts_not_text() -> None:
    assert TerminalProgress.on_terminal(io.StringIO(), "m") is None
    out = _Tty()
    progress = TerminalProgress.on_terminal(out, "small\x1b[31m-model")
    assert progress is not None
    progress("request", 0)
    assert "waiting for the answer" in out.getvalue()
    progress("chunk", 12)
    progress("chunk", 30)
    drawn = out.getvalue()
    assert "answering, 2 chunks (42 characters)" in drawn and "request 1" in drawn
    assert "\x1b" not in drawn  # the model's name is untrusted too
    progress("answer", 0)
    progress.close()
    assert out.getvalue().endswith("\r")  # the line is cleared, the report follows cleanly


def test_scheduler_facts_are_typed_and_keep_the_bundles_order() -> None:
    facts = SchedulerFacts.from_files({
        "k8s/pods.json": {"pods": [{"name": "w-0", "node": "gpu-9", "hostname": "w-0",
                                    "pod_ip": "10.0.0.9", "containers": []}]},
        "slurm/sacct.txt": {"jobs": [{"job_id": 48213, "state": "FAILED",
                                      "nodes": ["gpu-1", "gpu-2"], "start": "2024-05-01T10:00"},
                                     {"job_id": "48213", "nodes": ["gpu-3"],
                                      "start": "2024-05-01T11:00"},
                                     {"job_id": "777", "nodes": ["other-1"]}]},
        "nodes/gpu-1/kern.log": {"hosts": ["gpu-1"]},
        "logs/rank.log": {"srun_task_hosts": {"3": "gpu-2"}}})
    assert facts.jobs[0].job_id == "48213" and facts.jobs[0].source == "slurm/sacct.txt"
    assert facts.job_nodes("48213") == ["gpu-9", "gpu-1", "gpu-2", "gpu-3"]  # file order
    assert facts.latest_run_start("48213") == "2024-05-01T11:00"  # requeued: two runs
    assert facts.first_job_id() == "48213" and facts.srun_task_hosts == {3: "gpu-2"}
    assert facts.host_aliases(set()) == {"w-0": "gpu-9", "10.0.0.9": "gpu-9"}
    assert facts.host_aliases({"w-0"}) == {"10.0.0.9": "gpu-9"}  # Slurm names the pod a node
    assert facts.kernel_log_hosts == ["gpu-1"]
