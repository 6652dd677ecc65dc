"""Pictures written next to a report (SVG): one step's timeline, the breakdown as stacked bars.

One palette for all of them, so that a colour means the same thing in every picture: a kernel
kind on the timeline has the colour of the breakdown part it falls into.
"""

from __future__ import annotations

from goodput_agent.parsing.kineto.model import COMM, COMPUTE, MEMCPY, MEMSET

PART_COLOURS = {
    "compute_us": "#4c78a8",
    "comm_transfer_us": "#f58518",
    "comm_wait_us": "#e45756",
    "memory_us": "#54a24b",
    "idle_input_us": "#eeca3b",
    "idle_host_us": "#b279a2",
    "idle_other_us": "#bab0ac",
}
KIND_COLOURS = {
    COMPUTE: PART_COLOURS["compute_us"],
    COMM: PART_COLOURS["comm_transfer_us"],
    MEMCPY: PART_COLOURS["memory_us"],
    MEMSET: "#88d27a",
}
