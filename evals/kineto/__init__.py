"""PyTorch profiler (Kineto) traces of simulated training steps: the spec of a rank's trace,
its layout on CPU threads and CUDA streams, and the writer of the JSON."""
