"""Why did training slow down: per-step breakdowns from profiler traces, compared across ranks
and against a good run (`analyze.analyse`)."""
