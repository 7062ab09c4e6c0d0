"""The GPU's clocks, temperature, power and clock-limiting reasons, read through NVML per sample.

A timing sample says how long a call took; this says in what state the card was when it did:
the SM and memory clocks, the GPU temperature, the board power and which of NVML's clock
event reasons (power cap, thermal slowdown, idle, sync boost, ...) were active. The sampler is
read after each timed call, outside the timed window, so it costs wall time, not sample time.

NVML comes from the ``nvidia-ml-py`` package (module ``pynvml``), which GPU images usually
carry. Without it, or without a GPU, :func:`open_sampler` returns ``None`` and the run records
no state; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# nvmlClocksEventReasons bits (nvml.h); "none" is 0.
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}

FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "temp_c", "power_w")


def reason_names(mask: int) -> list[str]:
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
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
