"""PyTorch profiler (Kineto) traces: identified (parser), read in bounded memory (file_bytes,
load, collect, vector) into the compact model the slowdown analyses read (model, meta)."""
