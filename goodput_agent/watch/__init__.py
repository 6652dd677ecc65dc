"""`goodput watch`: sources that notice failed jobs, node faults and firing alerts, a durable
queue in the ledger, and workers that investigate each incident exactly once."""
