"""Let pods be scheduled on a Kubernetes node again (`kubectl uncordon`). Runs only through
the approval gate; the preview shows the server's dry run."""

from goodput_agent.actions.kube_nodes import NodeSchedulable


class K8sUncordonNode(NodeSchedulable):
    name = "k8s_uncordon_node"
    unschedulable = False


TOOL = K8sUncordonNode()
