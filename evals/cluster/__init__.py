"""The shared cluster model of the failure suite: nodes, ranks, GPUs, clocks, and the writers of
rank logs, kernel logs, NCCL lines and scheduler records."""
