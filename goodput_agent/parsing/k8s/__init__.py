"""Kubernetes objects as `kubectl get pods|events|nodes -o json` prints them (format "k8s_list").

One document is a List (kind List, PodList, EventList, NodeList; items may mix kinds) or a single
Pod, Node or Event. JSON has no natural lines, so every Event's Locator is found by one token
scan of the document (JsonPositions): it spans the JSON value that produced the event (a
container's `terminated` block, a node condition, an event item), and the value's JSON path is
kept in detail["json_path"].

Pods carry a pod rank (the replica / completion index, or env RANK): that is the rank of the pod,
which holds several training processes when it has several GPUs, so Event.rank is only set when
the pod runs at most one GPU; otherwise the index stays in detail["pod_rank"].

JsonPositions and load_json_document (parsing/json_positions.py) are shared with the Slurm JSON
parsers. Modules: verdicts (what a termination or Event means), relayed (faults the kubelet
relays from the device plugin and the container runtime), document (one document's events),
pods, nodes_events, parser (what the registry calls).
"""

from goodput_agent.parsing.k8s.parser import K8S_LIST, PARSER, PARSERS, K8sListParser

__all__ = ["K8S_LIST", "PARSER", "PARSERS", "K8sListParser"]
