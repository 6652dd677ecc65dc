"""Live evidence sources (Slurm, Kubernetes, kernel logs, NVML): read-only, time-bounded, with
typed errors (sources/errors.py) so that a missing source becomes a named gap, not a crash."""
