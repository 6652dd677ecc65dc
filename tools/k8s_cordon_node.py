"""Keep new pods off a Kubernetes node (`kubectl cordon`). Runs only through the approval
gate; the preview shows the server's dry run."""

from goodput_agent.actions.kube_nodes import NodeSchedulable


class K8sCordonNode(NodeSchedulable):
    name = "k8s_cordon_node"
    unschedulable = True


TOOL = K8sCordonNode()
