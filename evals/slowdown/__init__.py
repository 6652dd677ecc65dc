"""The slowdown suite's pieces: a seeded DDP job traced on every rank, its DCGM series and
its recipes."""
