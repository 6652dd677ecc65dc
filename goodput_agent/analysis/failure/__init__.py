"""Why did this distributed job fail: the first failure, its place, its class and whether a
retry helps (`analyze.diagnose`)."""
