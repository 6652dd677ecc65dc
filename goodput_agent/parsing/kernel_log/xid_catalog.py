"""NVIDIA Xid codes: what each means, who usually causes it, and what to do about it.

The table below is transcribed by hand from NVIDIA's Xid documentation
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "Xid Catalog", Ampere and
newer; older codes also from https://docs.nvidia.com/deploy/xid-errors/index.html).
`action` is NVIDIA's "Resolution Bucket (Immediate Action)" spelled as NVIDIA spells it
(RESTART_APP, RESET_GPU, RESTART_BM = reboot the node, RESTART_VM, IGNORE, CONTACT_SUPPORT,
CHECK_MECHANICALS, WORKFLOW_XID_45, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR,
XID_154 = follow the action carried in the Xid 154 line). `fatal` is NVIDIA's FATAL/NONFATAL.

`origin`, `role`, `category` and `weight` are this project's reading of NVIDIA's causes for the
root-cause analysis: who usually triggers the code, whether it can start an incident on its own
(Role.primary), only follows another failure (Role.symptom) or is state (Role.context), and how
decisive it is (weight 0..1, multiplied into the analysis' ranking).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from goodput_agent.core.events import Role

Origin = Literal["hardware", "driver", "application", "system", "unknown"]

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


class XidInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: int
    name: str  # NVIDIA's mnemonic
    meaning: str  # NVIDIA's description
    origin: Origin
    action: str  # NVIDIA's immediate resolution bucket
    fatal: bool
    role: Role
    category: str | None  # taxonomy category it points at (None: benign / informational)
    weight: float = Field(ge=0.0, le=1.0)  # how decisive it is as a root cause
    recommendation: str
    known: bool = True  # False for the generic entry of a code not in the table


_P, _S, _C = Role.primary, Role.symptom, Role.context
_HW, _APP = "gpu_hardware", "application_error"

_R_APP = "Restart the application; if it recurs with the same code, debug the CUDA code "
_R_SUPPORT = "Collect nvidia-bug-report.sh output and contact NVIDIA support if it recurs."
_R_RESET = "Drain the GPU, reset it (nvidia-smi -r) and rerun; replace it if the Xid recurs."
_R_NVLINK5 = ("Follow NVIDIA's NVLink5 workflow: decode the error, drain the GPU, reset it and "
              "check the NVLink/fabric state before rerunning.")

# (code, mnemonic, description, origin, action, fatal, role, category, weight, recommendation)
_Row = tuple[int, str, str, Origin, str, bool, Role, str | None, float, str]

# Source: NVIDIA Xid documentation, https://docs.nvidia.com/deploy/xid-errors/ (catalog above).
_TABLE: list[_Row] = [
    (8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "application",
     "RESTART_APP", False, _P, _APP, 0.5,
     _R_APP + "(a kernel that never finishes); contact support if it is not the application."),
    (11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
     "application", "RESTART_APP", False, _P, _APP, 0.5, _R_APP + "and the CUDA version."),
    (13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception", "application",
     "RESTART_APP", False, _P, _APP, 0.8,
     _R_APP + "(out-of-range access, illegal instruction); hardware only if it follows the GPU."),
    (25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream",
     "application", "RESTART_APP", False, _P, _APP, 0.5, _R_APP + "and the CUDA version."),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "application",
     "RESTART_APP", False, _P, _APP, 0.8,
     _R_APP + "(illegal memory access by a kernel; compute-sanitizer finds it)."),
    (32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "system",
     "RESTART_APP", False, _P, _HW, 0.5,
     "Restart the application; if it recurs, check the PCIe link of the GPU (usually a PCIe "
     "signal-quality problem)."),
    (38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "driver",
     "IGNORE", False, _C, None, 0.1, "No action needed; " + _R_SUPPORT),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "unknown", "RESTART_APP", False,
     _P, _APP, 0.4, "Restart the application; " + _R_SUPPORT),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "unknown", "RESTART_APP", False,
     _P, _APP, 0.4, "Restart the application; " + _R_SUPPORT),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "unknown", "RESTART_APP", False,
     _P, _APP, 0.4, "Restart the application; " + _R_SUPPORT),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "application",
     "IGNORE", False, _P, _APP, 0.4,
     "The GPU stopped the faulting application's channel (it follows the application's own "
     "fault); fix the application, the GPU stays usable."),
    (44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch",
     "driver", "IGNORE", False, _C, None, 0.1, "No action needed; " + _R_SUPPORT),
    (45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors",
     "driver", "WORKFLOW_XID_45", False, _S, None, 0.1,
     "Look for the Xid or process kill that preceded it; alone (no other Xid) it is the "
     "cleanup of a killed or exiting process."),
    (46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "unknown", "RESET_GPU",
     True, _P, _HW, 0.7, _R_RESET),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "hardware", "WORKFLOW_XID_48",
     True, _P, _HW, 1.0,
     "Uncorrectable memory error: drain the GPU, reset it to retire the row/page and check "
     "nvidia-smi -q -d ECC,ROW_REMAPPER; replace the GPU if errors keep appearing."),
    (54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
     "Auxiliary power is not connected to the GPU board", "hardware", "CHECK_MECHANICALS", True,
     _P, _HW, 0.7, "Check the GPU's power cables and connectors."),
    (56, "DISPLAY_CHANNEL_EXCEPTION", "Display engine error", "driver", "CONTACT_SUPPORT", True,
     _P, _HW, 0.3, _R_SUPPORT),
    (57, "FB_LINK_TRAINING_FAILURE_ERROR", "Error programming video memory interface",
     "hardware", "CONTACT_SUPPORT", True, _P, _HW, 0.7,
     "Video memory interface fault: drain the GPU and contact NVIDIA support."),
    (61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning", "hardware",
     "CONTACT_SUPPORT", True, _P, _HW, 0.6,
     "Drain the GPU and reset it; " + _R_SUPPORT),
    (62, "PMU_HALT_ERROR", "Internal micro-controller halt", "hardware", "RESET_GPU", True, _P,
     _HW, 0.9, _R_RESET),
    # NVIDIA's bucket is IGNORE (non-fatal): a pending remap, not a failure; context, so an
    # early Xid 63 never outranks the fault that follows it (Xid 64/48/95 on another GPU)
    (63, "INFOROM_DRAM_RETIREMENT_EVENT",
     "GPU memory remapping event (row remap / page retirement pending)", "hardware", "IGNORE",
     False, Role.context, None, 0.3,
     "A memory row was marked for remapping: reset the GPU at the next idle moment to activate "
     "it, and watch the remapped-row count."),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "hardware",
     "RESET_GPU", True, _P, _HW, 0.9,
     "Row remapping failed: drain the GPU, reset it and replace it if the failure recurs."),
    (66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "driver",
     "IGNORE", False, _C, None, 0.1, "No action needed; " + _R_SUPPORT),
    (67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "driver",
     "IGNORE", False, _C, None, 0.1, "No action needed; " + _R_SUPPORT),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "application", "RESTART_APP", False,
     _P, _APP, 0.5, "Restart the application (video decoder fault); " + _R_SUPPORT),
    (69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "application",
     "RESTART_APP", False, _P, _APP, 0.6, _R_APP + "and the CUDA/driver versions."),
    (74, "NVLINK_ERROR", "NVLINK Error", "hardware", "WORKFLOW_NVLINK_ERR", True, _P, _HW, 0.9,
     "NVLink fault: drain the GPU, check nvidia-smi nvlink -s/-e and reset; replace the GPU or "
     "baseboard if it recurs."),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "hardware",
     "RESTART_BM", True, _P, _HW, 1.0,
     "The GPU is lost: drain the node and reboot it; if it recurs, check PCIe, power and "
     "thermals, then replace the GPU."),
    (80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "system", "RESTART_APP",
     False, _P, _HW, 0.5, "Restart the application; if it recurs, check the GPU's PCIe link."),
    (92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "hardware", "IGNORE",
     False, _C, _HW, 0.2,
     "Corrected errors only: no immediate action; watch the ECC counters and plan a "
     "replacement if the rate stays high."),
    (93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit",
     "hardware", "IGNORE", False, _C, _HW, 0.1, "No immediate action; " + _R_SUPPORT),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "hardware", "RESTART_APP",
     False, _P, _HW, 0.7,
     "An uncorrectable memory error was contained to the application: restart it, and reset "
     "the GPU at the next idle moment to remap the row."),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "hardware", "RESET_GPU",
     True, _P, _HW, 1.0,
     "Uncontained memory error: every process on the GPU is affected; drain and reset the GPU."),
    (109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "unknown",
     "RESET_GPU", True, _P, _APP, 0.4,
     "Reset the GPU; if it recurs with the same application, debug its kernels, otherwise "
     "treat the GPU as suspect."),
    (110, "SEC_FAULT_ERROR", "Security Fault Error", "hardware", "RESET_GPU", True, _P, _HW, 0.8,
     _R_RESET),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "driver", "RESET_GPU", True, _P, _HW, 0.9,
     "The GPU System Processor stopped answering: drain and reset the GPU (reboot if the reset "
     "fails) and check for a driver update."),
    (120, "GSP_ERROR", "GSP Error", "driver", "RESET_GPU", True, _P, _HW, 0.9,
     "GPU System Processor error: drain and reset the GPU; check for a driver update."),
    (121, "C2C_ERROR", "C2C Error", "hardware", "IGNORE", False, _C, _HW, 0.3,
     "No immediate action; " + _R_SUPPORT),
    (122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC read failure", "hardware", "CONTACT_SUPPORT",
     True, _P, _HW, 0.6, "Drain the GPU; " + _R_SUPPORT),
    (123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC write failure", "hardware", "CONTACT_SUPPORT",
     True, _P, _HW, 0.6, "Drain the GPU; " + _R_SUPPORT),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", "hardware", "RESET_GPU", True, _P, _HW,
     0.9, "NVLink training failed: reset the GPU and check the link's signal integrity."),
    (137, "NVLINK_FLA_PRIV_ERR", "NVLink Privilege Error", "unknown", "IGNORE", False, _C, _HW,
     0.2, "No immediate action; correlate with other NVLink Xids (NVIDIA's Xid 137 flow)."),
    (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "hardware", "RESET_GPU",
     True, _P, _HW, 1.0, _R_RESET),
    (141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "driver", "IGNORE", False,
     _C, None, 0.1, "No immediate action; " + _R_SUPPORT),
    (143, "GPU_INIT_ERROR", "GPU Initialization Error", "hardware", "RESET_GPU", True, _P, _HW,
     0.9, _R_RESET),
    (144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "hardware", "WORKFLOW_NVLINK5_ERR", True, _P,
     _HW, 0.8, _R_NVLINK5),
    (145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "hardware", "WORKFLOW_NVLINK5_ERR", True, _P,
     _HW, 0.8, _R_NVLINK5),
    (146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "hardware", "WORKFLOW_NVLINK5_ERR", True, _P,
     _HW, 0.8, _R_NVLINK5),
    (147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "hardware", "WORKFLOW_NVLINK5_ERR", True,
     _P, _HW, 0.8, _R_NVLINK5),
    (148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "hardware",
     "WORKFLOW_NVLINK5_ERR", True, _P, _HW, 0.8, _R_NVLINK5),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "hardware", "WORKFLOW_NVLINK5_ERR", True,
     _P, _HW, 0.8, _R_NVLINK5),
    (150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "hardware", "WORKFLOW_NVLINK5_ERR", True, _P,
     _HW, 0.8, _R_NVLINK5),
    (151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "system", "RESTART_VM",
     True, _P, _HW, 0.5, "Confidential-computing key rotation failed: restart the VM."),
    (154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "driver", "XID_154",
     False, _C, _HW, 0.3,
     "Follow the recovery action named in the line (GPU reset, node reboot, drain and reset)."),
    (155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "driver", "RESET_GPU", True,
     _P, _HW, 0.6, "Reset the GPU; investigate the software that used the NVLink."),
    (156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "hardware", "RESET_GPU",
     True, _P, _HW, 0.6, "A resource was retired: reset the GPU to activate the retirement."),
    (157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "hardware", "IGNORE",
     False, _C, _HW, 0.3, "No immediate action; " + _R_SUPPORT),
    (158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "hardware", "RESET_GPU", True, _P, _HW, 0.8,
     _R_RESET),
    (171, "UNCORRECTABLE_DRAM_ERROR",
     "Uncorrectable DRAM error (details to the accompanying Xid 48)", "hardware",
     "WORKFLOW_XID_48", True, _P, _HW, 0.9,
     "Treat as Xid 48 in GPU memory (DRAM): drain, reset and check row remapping."),
    (172, "UNCORRECTABLE_SRAM_ERROR",
     "Uncorrectable SRAM error (details to the accompanying Xid 48)", "hardware",
     "WORKFLOW_XID_48", True, _P, _HW, 0.9,
     "Treat as Xid 48 in on-chip SRAM: drain and reset the GPU; replace it if it recurs."),
]

CATALOG: dict[int, XidInfo] = {
    row[0]: XidInfo(code=row[0], name=row[1], meaning=row[2], origin=row[3], action=row[4],
                    fatal=row[5], role=row[6], category=row[7], weight=row[8],
                    recommendation=row[9])
    for row in _TABLE
}


def lookup(code: int) -> XidInfo:
    """The catalog entry for `code`; a generic, undecided entry for codes not in the table."""
    info = CATALOG.get(code)
    if info is not None:
        return info
    return XidInfo(code=code, name=f"XID_{code}", meaning="Xid not in the bundled catalog",
                   origin="unknown", action="CONTACT_SUPPORT", fatal=False, role=Role.primary,
                   category=_HW, weight=0.3, known=False,
                   recommendation=f"Look up Xid {code} in NVIDIA's catalog ({CATALOG_URL}).")


# --- Xid 154: the line carries the recovery action -------------------------------------------

class RecoveryAction(BaseModel):
    """The recovery action an Xid 154 line announces (nvmlDeviceGpuRecoveryAction_t values)."""

    code: int | None  # 0x0..0x7 when printed
    label: str  # as printed: "GPU Reset Required", "Node Reboot Required", "Drain and Reset"
    action: str  # as a resolution bucket: RESET_GPU, RESTART_BM, DRAIN_AND_RESET, ...
    previous: str | None = None  # the label it changed from


# nvmlDeviceGpuRecoveryAction_t: NONE, GPU_RESET, NODE_REBOOT, DRAIN_P2P, DRAIN_AND_RESET,
# RECOVER_IMEX_DOMAIN, BUS_RESET, SYSTEM_REBOOT
_RECOVERY_CODES = {0: "IGNORE", 1: "RESET_GPU", 2: "RESTART_BM", 3: "DRAIN_P2P",
                   4: "DRAIN_AND_RESET", 5: "RECOVER_IMEX_DOMAIN", 6: "BUS_RESET",
                   7: "RESTART_BM"}
# actions after which the GPU cannot keep running work
DISRUPTIVE_RECOVERY = frozenset({"RESET_GPU", "RESTART_BM", "DRAIN_AND_RESET", "BUS_RESET"})

_CHANGED = re.compile(
    r"recovery action changed from\s+(?P<fc>0x[0-9a-fA-F]+|\d+)?\s*\((?P<fl>[^)]*)\)\s*"
    r"to\s+(?P<tc>0x[0-9a-fA-F]+|\d+)?\s*\((?P<tl>[^)]*)\)", re.IGNORECASE)


def _action_from_label(label: str) -> str | None:
    low = label.lower()
    if "drain" in low and "reset" in low:
        return "DRAIN_AND_RESET"
    if "drain" in low:
        return "DRAIN_P2P"
    if "imex" in low:
        return "RECOVER_IMEX_DOMAIN"
    if "reboot" in low:
        return "RESTART_BM"
    if "bus reset" in low:
        return "BUS_RESET"
    if "reset" in low or "flr" in low:
        return "RESET_GPU"
    if low.strip() in ("none", "no action"):
        return "IGNORE"
    return None


def parse_xid154(message: str) -> RecoveryAction | None:
    """The action in "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"."""
    m = _CHANGED.search(message[:2000])
    if not m:
        return None
    tc = m["tc"]
    code = (int(tc, 16) if tc.lower().startswith("0x") else int(tc)) if tc else None
    label = m["tl"].strip()
    action = _RECOVERY_CODES.get(code) if code is not None else None
    action = action or _action_from_label(label)
    if action is None:
        return None
    return RecoveryAction(code=code, label=label, action=action, previous=m["fl"].strip())


def action_for_xid154(message: str) -> str | None:
    """The resolution bucket an Xid 154 line asks for (RESET_GPU, RESTART_BM, ...), or None."""
    hit = parse_xid154(message)
    return hit.action if hit else None
