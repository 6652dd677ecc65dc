"""The Kubernetes watch source against the FIXTURE API server (tests/servers/kube_api.py with
its watch streams, tests/servers/kube_watch.py): each incident once, a dropped connection
resumed, a `410 Gone` (HTTP or ERROR event) re-listed without duplicates."""

from __future__ import annotations

import json

import pytest

from goodput_agent.sources.k8s import split_ref
from goodput_agent.watch.k8s_source import K8sWatchSource
from goodput_agent.watch.trigger import SourceDown
from tests.servers.kube_api import FixtureCluster, running_kube_api, write_kubeconfig
from tests.servers.kube_watch import WatchFault
from tests.watch.k8s_objects import job, node, pod


def base_cluster() -> FixtureCluster:
    c = FixtureCluster()
    c.add(node("gpu-1"))
    c.add(node("gpu-2"))
    c.add(node("cpu-1", gpus=0, ready="False"))  # not a GPU node: never an incident
    c.add(job("batch/v1", "Job", "old-failure", failed=True))  # failed before watch began
    c.add(pod("old-oom", ended="OOMKilled"))
    c.add(job("batch/v1", "Job", "trainer"))
    c.add(pod("worker-0"))
    return c


def source(srv, tmp_path, **options) -> K8sWatchSource:
    return K8sWatchSource.connect(kubeconfig=srv.kubeconfig(tmp_path / "kc"),
                                  timeout_seconds=1, **options)


class Follower:
    """Polls like the watch core: keeps the cursor, collects every trigger's key."""

    def __init__(self, src: K8sWatchSource):
        self.src, self.cursor, self.keys = src, None, []

    def poll(self) -> list:
        result = self.src.poll(self.cursor)
        self.cursor = result.cursor
        self.keys += [t.key for t in result.triggers]
        return result.triggers


def uid(c: FixtureCluster, plural: str, ns: str, name: str) -> str:
    key = next(k for k in c.objects if k[0].startswith(plural + ".") and k[1:] == (ns, name))
    return c.objects[key]["metadata"]["uid"]


def test_start_from_now_then_each_incident_once(tmp_path):
    c = base_cluster()
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path))
        assert w.poll() == []  # what failed before the watch began is remembered, not emitted
        c.add(job("batch/v1", "Job", "trainer", failed=True))
        c.add(job("jobset.x-k8s.io/v1alpha2", "JobSet", "pretrain", failed=True, restarts=2))
        c.add(job("kubeflow.org/v1", "PyTorchJob", "finetune", failed=True))
        c.add(pod("worker-0", ended="OOMKilled"))
        c.add(pod("cpu-pod", gpu=False, ended="Error"))  # no GPU: not watched
        c.add(pod("worker-1", evicted=True))
        c.add(node("gpu-1", ready="Unknown", since="2026-12-04T05:40:00Z"))
        c.add(node("gpu-2", taints=[{"key": "nvidia.com/gpu-xid-error", "value": "79",
                                     "effect": "NoSchedule"}]))
        got = {t.key: t for t in w.poll()}
        assert set(got) == {
            f"k8s-job:{uid(c, 'jobs', 'train', 'trainer')}:0",
            f"k8s-job:{uid(c, 'jobsets', 'train', 'pretrain')}:2",
            f"k8s-job:{uid(c, 'pytorchjobs', 'train', 'finetune')}:0",
            f"k8s-pod:{uid(c, 'pods', 'train', 'worker-0')}:main:0",
            f"k8s-pod:{uid(c, 'pods', 'train', 'worker-1')}:evicted",
            "k8s-node:gpu-1:NotReady:2026-12-04T05:40:00Z",
            next(k for k in got if k.startswith("k8s-node:gpu-2:taint:nvidia.com/gpu-xid-error:")),
        }
        by_subject = {t.subject: t for t in got.values()}
        assert by_subject["train/pretrain"].collect == {"k8s_job": "train/JobSet/pretrain"}
        assert split_ref(by_subject["train/pretrain"].collect["k8s_job"], "default") == \
            ("train", "jobset", "pretrain")
        oom = by_subject["train/worker-0"]
        assert (oom.state, oom.nodes, oom.collect) == ("OOMKilled", ["gpu-1"],
                                                       {"k8s_pod": "train/worker-0"})
        assert oom.occurred_at.isoformat() == "2026-12-04T05:10:00+00:00"
        assert by_subject["gpu-1"].question == "node"
        assert by_subject["gpu-1"].collect == {"node": "gpu-1"}

        # status updates that repeat a known incident, a restart of the OOMKilled container
        # (the same end, now lastState), the node heartbeat: nothing new
        c.add(job("batch/v1", "Job", "trainer", failed=True, labels={"app": "train", "x": "1"}))
        c.add(pod("worker-0", restarts=1, last="OOMKilled"))
        c.add(node("gpu-2", taints=[{"key": "nvidia.com/gpu-xid-error", "value": "79",
                                     "effect": "NoSchedule"}]))
        assert w.poll() == []
        # the restarted container ends again: a new incident (instance 1)
        c.add(pod("worker-0", restarts=1, ended="OOMKilled"))
        assert [t.key for t in w.poll()] == \
            [f"k8s-pod:{uid(c, 'pods', 'train', 'worker-0')}:main:1"]
        assert len(w.keys) == len(set(w.keys))


def test_a_dropped_connection_resumes_from_the_last_event(tmp_path):
    c = base_cluster()
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path))
        w.poll()
        for name in ("a", "b", "c"):
            c.add(pod(f"p-{name}", ended="Error"))
        srv.api.watch_faults.append(WatchFault("pods", drop_after=1))
        first = w.poll()
        assert [t.subject for t in first] == ["train/p-a"]  # the rest was cut off
        assert w.src.drops == 1
        assert sorted(t.subject for t in w.poll()) == ["train/p-b", "train/p-c"]
        assert w.poll() == []
        assert len(w.keys) == len(set(w.keys)) == 3
        pod_watches = [r for r in srv.requests if r.verb == "watch" and r.resource == "pods"]
        # the resumed watch asked from the resourceVersion of p-a, the last event read whole
        rv_a = next(e[0] for e in c.history if e[2][2] == "p-a")
        assert pod_watches[1].query["resourceVersion"] == [str(rv_a)]
        assert all(r.query.get("allowWatchBookmarks") == ["true"] for r in pod_watches)


@pytest.mark.parametrize("expired_as", ["event", "http"])
def test_410_gone_relists_without_duplicates(tmp_path, expired_as):
    c = base_cluster()
    with running_kube_api(c) as srv:
        srv.api.expired_as = expired_as
        w = Follower(source(srv, tmp_path))
        w.poll()
        c.add(pod("before", ended="OOMKilled"))
        assert [t.subject for t in w.poll()] == ["train/before"]
        c.add(pod("missed", ended="Error"))  # happens while the watch is away...
        c.add(node("gpu-2", ready="False", since="2026-12-04T06:00:00Z"))
        old_uid = uid(c, "pods", "train", "old-oom")
        c.remove("v1", "Pod", "train", "old-oom")
        c.compact()  # ...and the history is compacted before it comes back
        c.add(pod("after", ended="Error"))
        got = w.poll()
        assert sorted(t.subject for t in got) == ["gpu-2", "train/after", "train/missed"]
        assert w.src.relists == 5  # every kind's resourceVersion was compacted away
        assert w.poll() == []
        assert len(w.keys) == len(set(w.keys))
        state = json.loads(w.cursor)["streams"]
        known_pods = {k for v in state["pods"]["known"].values() for k in v.values()}
        assert len(known_pods) == 3  # before, missed, after: the deleted old-oom is forgotten
        assert not any(k.startswith("k8s-pod:" + old_uid) for k in known_pods)
        if expired_as == "http":
            assert any(r.code == 410 for r in srv.requests)


def test_bookmarks_move_the_cursor_without_objects(tmp_path):
    c = base_cluster()
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path, namespaces=("train",)))
        w.poll()
        c.add(pod("elsewhere", ns="serving", ended="Error"))  # another namespace: not ours
        assert w.poll() == []
        streams = json.loads(w.cursor)["streams"]
        assert streams["pods@train"]["rv"] == str(c.resource_version)  # from the bookmark


def test_label_selector_filters_workloads_and_pods(tmp_path):
    c = base_cluster()
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path, selector="team=llm"))
        w.poll()
        c.add(pod("theirs", ended="Error"))
        c.add(pod("ours", ended="Error", labels={"team": "llm"}))
        assert [t.subject for t in w.poll()] == ["train/ours"]


def test_since_looks_back_on_the_first_poll(tmp_path):
    from datetime import UTC, datetime

    c = base_cluster()
    c.add(pod("older-oom", ended="OOMKilled", finished="2026-12-04T05:01:00Z"))  # before
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path, since=datetime(2026, 12, 4, 5, 5, tzinfo=UTC)))
        assert sorted(t.subject for t in w.poll()) == ["train/old-failure", "train/old-oom"]


def test_an_unreachable_api_server_is_source_down(tmp_path):
    with running_kube_api(FixtureCluster()) as srv:
        dead = srv.url
    kc = write_kubeconfig(tmp_path / "kc", dead)
    src = K8sWatchSource.connect(kubeconfig=kc, timeout_seconds=1, request_timeout_s=2)
    with pytest.raises(SourceDown, match="unreachable"):
        src.poll(None)


def test_a_crash_loop_is_a_few_incidents_not_one_per_restart(tmp_path):
    c = base_cluster()
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path, max_ends_per_container=3))
        w.poll()
        ends = []
        for restarts in range(6):  # ends, restarts, ends again...
            c.add(pod("looping", ended="Error", restarts=restarts))
            ends += [t.key.rsplit(":", 1)[1] for t in w.poll()]
            c.add(pod("looping", restarts=restarts + 1, last="Error"))
            ends += [t.key.rsplit(":", 1)[1] for t in w.poll()]
        assert ends == ["0", "1", "2"]


def test_a_namespace_added_later_starts_from_now_too(tmp_path):
    c = base_cluster()
    c.add(pod("old-serving-crash", ns="serving", ended="Error"))
    with running_kube_api(c) as srv:
        w = Follower(source(srv, tmp_path, namespaces=("train",)))
        w.poll()
        w.src = source(srv, tmp_path, namespaces=("train", "serving"))  # restarted, wider
        assert w.poll() == []
        c.add(pod("new-serving-crash", ns="serving", ended="Error"))
        assert [t.subject for t in w.poll()] == ["serving/new-serving-crash"]
