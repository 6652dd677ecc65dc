"""`dcgmi diag -r 3` as DCGM 3.x prints it (test names in words, `Pass - All` / `Fail - GPU: N`
with a Warning row) and as DCGM 4.x prints it (lower-case plugin names, one `GPUn: Pass|Fail`
row per GPU)."""

from __future__ import annotations

BAR = "+---------------------------+------------------------------------------------+"


def _row(left: str, right: str) -> str:
    return f"| {left:<25} | {right:<46} |"


def _section(name: str, closed: bool) -> str:
    title = f"-----  {name}  "
    return (f"+{title:-<27}+{'-' * 48}+" if closed else f"|{title:-<27}+{'-' * 48}|")


def _meta(n_gpus: int, version: str) -> list[str]:
    return ["Successfully ran diagnostic for group.", BAR, _row("Diagnostic", "Result"),
            BAR.replace("-", "="), _section("Metadata", False), _row("DCGM Version", version),
            _row("Driver Version Detected", "550.90.07"),
            _row("GPU Device IDs Detected", ",".join(["2330"] * n_gpus)[:46])]


def _error(gpu: int) -> str:
    return (f"GPU {gpu} had uncorrectable memory errors and row remapping failed. Run a field "
            "diagnostic on the GPU.")


def _wrap(text: str) -> list[str]:
    return [text[i:i + 46] for i in range(0, len(text), 46)]


def diag_report(n_gpus: int, failing: int | None, new_format: bool) -> str:
    if new_format:
        return "\n".join(_v4(n_gpus, failing)) + "\n"
    out = _meta(n_gpus, "3.3.7") + [_section("Deployment", False)]
    out += [_row(t, "Pass") for t in ("Denylist", "NVML Library", "CUDA Main Library",
                                      "Permissions and OS Blocks", "Persistence Mode",
                                      "Environment Variables", "Page Retirement/Row Remap",
                                      "Graphics Processes", "Inforom")]
    out += [_section("Integration", True), _row("PCIe", "Pass - All"),
            _section("Hardware", True)]
    if failing is None:
        out.append(_row("GPU Memory", "Pass - All"))
    else:
        others = ", ".join(str(g) for g in range(n_gpus) if g != failing)
        out += [_row("GPU Memory", f"Pass - GPUs: {others}"), _row("", f"Fail - GPU: {failing}")]
        lines = _wrap(_error(failing))
        out += [_row("Warning", lines[0]), *(_row("", x) for x in lines[1:])]
    out += [_section("Stress", True), _row("Targeted Stress", "Pass - All"),
            _row("Targeted Power", "Pass - All"), _row("Memory Bandwidth", "Pass - All"), BAR]
    return "\n".join(out) + "\n"


def _v4(n_gpus: int, failing: int | None) -> list[str]:
    out = _meta(n_gpus, "4.2.3") + [_section("Deployment", False), _row("software", "Pass")]
    out += [_row("", f"GPU{g}: Pass") for g in range(n_gpus)]
    out.append(_section("Hardware", True))
    verdict = "Fail" if failing is not None else "Pass"
    out.append(_row("memory", verdict))
    for g in range(n_gpus):
        out.append(_row("", f"GPU{g}: {'Fail' if g == failing else 'Pass'}"))
        if g == failing:
            lines = _wrap(f"Error: {_error(g)}")
            out += [_row("", x) for x in lines]
    out += [_section("Integration", True), _row("pcie", "Pass"),
            _section("Stress", True), _row("targeted_stress", "Pass"),
            _row("targeted_power", "Pass"), _row("memory_bandwidth", "Pass"), BAR]
    return out
