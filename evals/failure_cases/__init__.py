"""One module per failure class: how that class plays out on the cluster, and its recipes."""
