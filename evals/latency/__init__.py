"""The latency suite's pieces: a vLLM service's load model and its metrics in OpenMetrics."""
