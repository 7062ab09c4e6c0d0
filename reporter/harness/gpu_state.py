"""The GPU's clocks, temperature, power and clock-limiting reasons, read through NVML per sample.

A timing sample says how long a call took; this says in what state the card was when it did:
the SM and memory clocks, the GPU temperature, the board power and which of NVML's clock
event reasons (power cap, thermal slowdown, idle, sync boost, ...) were active. The sampler is
read after each timed call, outside the timed window, so it costs wall time, not sample time.

NVML comes from the ``nvidia-ml-py`` package (module ``pynvml``, the ``gpu`` extra), which GPU
images usually carry; the reasons' bits are its named constants. Without it, or without a GPU,
:func:`open_sampler` returns ``None`` and the run records no state; nothing else changes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w")

#: the names records keep for the reasons NVML had names for when the first records were made (the
#: suffix of pynvml's ``nvmlClocksEventReason<Suffix>``); a reason NVML adds later is recorded as its
#: suffix in snake case (``BoardLimit`` -> ``board_limit``)
RECORDED_NAMES = {
    "GpuIdle": "gpu_idle",
    "ApplicationsClocksSetting": "applications_clocks_setting",
    "SwPowerCap": "sw_power_cap",
    "HwSlowdown": "hw_slowdown",
    "SyncBoost": "sync_boost",
    "SwThermalSlowdown": "sw_thermal_slowdown",
    "HwThermalSlowdown": "hw_thermal_slowdown",
    "HwPowerBrakeSlowdown": "hw_power_brake_slowdown",
    "DisplayClockSetting": "display_clocks_setting",
}
# constants of pynvml that are not one reason: none, all of them, a deprecated alias
_NOT_A_REASON = {"None", "All", "UserDefinedClocks"}


def _snake(suffix: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", suffix).lower()


@functools.cache
def clock_event_reasons() -> dict[int, str]:
    """Bit -> recorded name, from pynvml's named constants (``nvmlClocksEventReason*``, or the
    ``nvmlClocksThrottleReason*`` of older pynvml). Empty without pynvml: then no bit has a name."""
    try:
        import pynvml
    except ImportError:
        return {}
    table: dict[int, str] = {}
    for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):  # the newer names win
        for attr in dir(pynvml):
            suffix = attr.removeprefix(prefix)
            if suffix == attr or suffix in _NOT_A_REASON:
                continue
            bit = getattr(pynvml, attr)
            if isinstance(bit, int) and bit > 0 and bit & (bit - 1) == 0 and bit not in table:
                table[bit] = RECORDED_NAMES.get(suffix, _snake(suffix))
    return dict(sorted(table.items()))


def reason_names(mask: int) -> list[str]:
    """The names of the reasons set in an NVML clock-event mask, lowest bit first; bits pynvml has
    no name for (or every bit, without pynvml) as one hexadecimal remainder."""
    table = clock_event_reasons()
    names = [name for bit, name in table.items() if mask & bit]
    unknown = mask & ~sum(table)
    if unknown:
        names.append(f"0x{unknown:x}")
    return names


class NvmlSampler:
    """Reads one device's state; ``sample()`` returns the FIELDS plus ``reasons`` (a bit mask)."""

    def __init__(self, nvml: Any, device_index: int) -> None:
        self._nvml = nvml
        self._handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
        get_reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        self._reasons: Callable[[Any], int] = get_reasons

    def sample(self) -> dict[str, float]:
        n, h = self._nvml, self._handle
        return {
            "sm_clock_mhz": float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            "mem_clock_mhz": float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            "temp_c": float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "reasons": float(self._reasons(h)),
        }


def open_sampler(device_index: int | None = None) -> NvmlSampler | None:
    """An NVML sampler for the current CUDA device (by PCI bus id), or None when NVML is absent."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        if device_index is None:
            device_index = _nvml_index_of_current_device(pynvml)
        sampler = NvmlSampler(pynvml, device_index)
        sampler.sample()
        return sampler
    except Exception:  # NVML present but unusable (no driver, container without access)
        return None


def _nvml_index_of_current_device(pynvml: Any) -> int:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return int(torch.cuda.current_device())
    for i in range(pynvml.nvmlDeviceGetCount()):
        info = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(i))
        if int(info.bus) == int(bus) and int(info.device) == int(getattr(props, "pci_device_id", info.device)):
            return i
    return int(torch.cuda.current_device())
