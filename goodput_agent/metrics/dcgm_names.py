"""DCGM exporter series for node and GPU health: names, kinds and what each says.

Names and types as NVIDIA/dcgm-exporter's etc/default-counters.csv declares them (several of
the health fields ship commented out there and must be enabled: ECC, retired pages, NVLink
errors). Every series carries `gpu` (index), `UUID`, `device`, `modelName` and `Hostname`
(the node), and, with the Kubernetes pod mapping on, `namespace`/`pod`/`container`.
`DCGM_FI_DEV_XID_ERRORS` is a gauge holding the LAST Xid code seen on the GPU (0 until one).
Counters are running totals (volatile ECC totals restart when the driver reloads), so their
increase over a window is what happened in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Reduce(StrEnum):
    max = "max"  # the highest value in the window (temperatures, power, flags)
    min = "min"  # the lowest (clocks)
    increase = "increase"  # a counter's growth over the window
    last_codes = "last_codes"  # distinct non-zero values of a "last code" gauge (Xid)


@dataclass(frozen=True)
class DcgmField:
    key: str
    name: str
    reduce: Reduce
    what: str
    unit: str = ""
    alarm: float | None = None  # a value at or above this is a problem


HOST_LABEL = "Hostname"
GPU_LABEL = "gpu"

FIELDS = (
    DcgmField("xid", "DCGM_FI_DEV_XID_ERRORS", Reduce.last_codes, "Xid errors"),
    DcgmField("ecc_dbe", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Reduce.increase,
              "double-bit (uncorrectable) volatile ECC errors", alarm=1),
    DcgmField("ecc_sbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Reduce.increase,
              "single-bit (corrected) volatile ECC errors"),
    DcgmField("remapped_unc", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Reduce.increase,
              "rows remapped for uncorrectable errors", alarm=1),
    DcgmField("row_remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", Reduce.max,
              "row remapping failed", alarm=1),
    DcgmField("retired_dbe", "DCGM_FI_DEV_RETIRED_DBE", Reduce.increase,
              "pages retired for double-bit errors", alarm=1),
    DcgmField("retired_pending", "DCGM_FI_DEV_RETIRED_PENDING", Reduce.max,
              "pages pending retirement", alarm=1),
    DcgmField("nvlink_crc_flit", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
              Reduce.increase, "NVLink flow-control CRC errors", alarm=1),
    DcgmField("nvlink_crc_data", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
              Reduce.increase, "NVLink data CRC errors", alarm=1),
    DcgmField("nvlink_replay", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", Reduce.increase,
              "NVLink retries"),
    DcgmField("nvlink_recovery", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
              Reduce.increase, "NVLink recovery errors", alarm=1),
    DcgmField("pcie_replay", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Reduce.increase,
              "PCIe retries"),
    DcgmField("temp_max", "DCGM_FI_DEV_GPU_TEMP", Reduce.max, "GPU temperature", "C",
              alarm=87),
    DcgmField("mem_temp_max", "DCGM_FI_DEV_MEMORY_TEMP", Reduce.max, "memory temperature", "C",
              alarm=95),
    DcgmField("power_max", "DCGM_FI_DEV_POWER_USAGE", Reduce.max, "power draw", "W"),
    DcgmField("sm_clock_min", "DCGM_FI_DEV_SM_CLOCK", Reduce.min, "SM clock", "MHz"),
)
BY_KEY = {f.key: f for f in FIELDS}
