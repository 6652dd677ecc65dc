"""Why did an LLM service's latency rise: two windows measured and compared
(`analyze.analyse`)."""
