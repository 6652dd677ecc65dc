"""Container flags set, replaced and dropped the way vLLM's command lines write them."""

from goodput_agent.tools.k8s_patch_workload import new_args


def test_flags_in_both_spellings_are_replaced_dropped_or_appended() -> None:
    old = ["--model", "m", "--max-num-seqs", "256", "--gpu-memory-utilization=0.9",
           "--enforce-eager"]
    assert new_args(old, {"--max-num-seqs": "128"}) == [
        "--model", "m", "--max-num-seqs", "128", "--gpu-memory-utilization=0.9",
        "--enforce-eager"]
    assert new_args(old, {"--gpu-memory-utilization": "0.95"})[4] == \
        "--gpu-memory-utilization=0.95"
    assert new_args(old, {"--enforce-eager": None}) == old[:-1]  # a bare flag dropped
    assert new_args(old, {"--max-num-seqs": None}) == [
        "--model", "m", "--gpu-memory-utilization=0.9", "--enforce-eager"]
    assert new_args(old, {"--max-num-batched-tokens": "8192"})[-2:] == [
        "--max-num-batched-tokens", "8192"]
    assert new_args(old, {"--max-num-seqs-x": None}) == old  # a prefix is not the flag
    assert old[3] == "256"  # the input list is left as it was
