"""`goodput collect`: bundles written from live sources (base.py: the writer and manifest)."""
