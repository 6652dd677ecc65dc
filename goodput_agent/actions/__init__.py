"""The action executors: how an approved mutating tool reaches a cluster (a Slurm command
runner and its result, the Kubernetes API objects, nodes, pods and workloads, the Slurm tools'
argument types, a unified diff of a change). Only the approval gate runs them, through tools/."""
