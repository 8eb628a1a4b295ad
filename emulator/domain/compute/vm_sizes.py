"""Catalogue of real Azure VM sizes, shaped like Azure ML's ``vmSizes`` listing.

Each size matches one entry of ``GET /subscriptions/{s}/providers/
Microsoft.MachineLearningServices/locations/{loc}/vmSizes``. The vCPU, memory,
GPU and temp-disk figures come from the official Azure VM size pages on
learn.microsoft.com (MicrosoftDocs/azure-docs ``articles/virtual-machines/*-series.md``:
Dv2/DSv2, Dv3/Dsv3, Ddv4/Ddsv4, Eav4, Ev3, Fsv2, H, NC, NCv3, NCasT4_v3, ND,
NDv2, NV, NVv3). Quota family names are the ones the Compute/ML resource
providers report (for example ``standardDSv2Family``, and ``Standard NCASv3_T4
Family``, which really does contain spaces). The docs give the temp disk in GiB,
and Azure reports it as GiB * 1024 in ``maxResourceVolumeMB`` (DS3_v2: 28 GiB ->
28672). ``osVhdSizeMB`` is 1047552 for every size. ``premiumIO`` follows each
series' "Premium Storage: Supported" flag. This module is pure data: stdlib only, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass

OS_VHD_SIZE_MB = 1047552
DEFAULT_COMPUTE_TYPES: tuple[str, ...] = ("AmlCompute", "ComputeInstance")


@dataclass(frozen=True)
class VmSize:
    name: str
    family: str
    vcpus: int
    memory_gb: float
    gpus: int
    os_vhd_size_mb: int
    max_resource_volume_mb: int
    low_priority_capable: bool
    premium_io: bool
    supported_compute_types: tuple[str, ...] = DEFAULT_COMPUTE_TYPES
    exact: bool = False  # limits a container gets as they are, unscaled (a Kubernetes instance type's are a pod's)

    def to_arm(self) -> dict:
        """Serialise exactly as the ARM vmSizes listing does (camelCase keys)."""
        return {
            "name": self.name,
            "family": self.family,
            "vCPUs": self.vcpus,
            "gpus": self.gpus,
            "osVhdSizeMB": self.os_vhd_size_mb,
            "maxResourceVolumeMB": self.max_resource_volume_mb,
            "memoryGB": float(self.memory_gb),
            "lowPriorityCapable": self.low_priority_capable,
            "premiumIO": self.premium_io,
            "supportedComputeTypes": list(self.supported_compute_types),
        }


# Each series: (quota family, premiumIO, rows). A row is
# (name, vCPUs, memory GiB, temp disk GiB[, GPUs]); GPUs default to 0.
_SERIES: tuple[tuple[str, bool, tuple[tuple, ...]], ...] = (
    # D-series (v1): same memory/disk shape as Dv2.
    ("standardDFamily", False, (
        ("Standard_D1", 1, 3.5, 50), ("Standard_D2", 2, 7, 100),
        ("Standard_D3", 4, 14, 200), ("Standard_D4", 8, 28, 400),
        ("Standard_D11", 2, 14, 100), ("Standard_D12", 4, 28, 200),
        ("Standard_D13", 8, 56, 400), ("Standard_D14", 16, 112, 800),
    )),
    ("standardDv2Family", False, (
        ("Standard_D1_v2", 1, 3.5, 50), ("Standard_D2_v2", 2, 7, 100),
        ("Standard_D3_v2", 4, 14, 200), ("Standard_D4_v2", 8, 28, 400),
        ("Standard_D5_v2", 16, 56, 800),
        ("Standard_D11_v2", 2, 14, 100), ("Standard_D12_v2", 4, 28, 200),
        ("Standard_D13_v2", 8, 56, 400), ("Standard_D14_v2", 16, 112, 800),
        ("Standard_D15_v2", 20, 140, 1000),
    )),
    ("standardDSv2Family", True, (
        ("Standard_DS1_v2", 1, 3.5, 7), ("Standard_DS2_v2", 2, 7, 14),
        ("Standard_DS3_v2", 4, 14, 28), ("Standard_DS4_v2", 8, 28, 56),
        ("Standard_DS5_v2", 16, 56, 112),
        ("Standard_DS11_v2", 2, 14, 28), ("Standard_DS12_v2", 4, 28, 56),
        ("Standard_DS13_v2", 8, 56, 112), ("Standard_DS14_v2", 16, 112, 224),
        ("Standard_DS15_v2", 20, 140, 280),
    )),
    ("standardDv3Family", False, (
        ("Standard_D2_v3", 2, 8, 50), ("Standard_D4_v3", 4, 16, 100),
        ("Standard_D8_v3", 8, 32, 200), ("Standard_D16_v3", 16, 64, 400),
        ("Standard_D32_v3", 32, 128, 800), ("Standard_D48_v3", 48, 192, 1200),
        ("Standard_D64_v3", 64, 256, 1600),
    )),
    ("standardDSv3Family", True, (
        ("Standard_D2s_v3", 2, 8, 16), ("Standard_D4s_v3", 4, 16, 32),
        ("Standard_D8s_v3", 8, 32, 64), ("Standard_D16s_v3", 16, 64, 128),
        ("Standard_D32s_v3", 32, 128, 256), ("Standard_D48s_v3", 48, 192, 384),
        ("Standard_D64s_v3", 64, 256, 512),
    )),
    ("standardDDSv4Family", True, (
        ("Standard_D2ds_v4", 2, 8, 75), ("Standard_D4ds_v4", 4, 16, 150),
        ("Standard_D8ds_v4", 8, 32, 300), ("Standard_D16ds_v4", 16, 64, 600),
        ("Standard_D32ds_v4", 32, 128, 1200), ("Standard_D48ds_v4", 48, 192, 1800),
        ("Standard_D64ds_v4", 64, 256, 2400),
    )),
    ("standardEAv4Family", False, (
        ("Standard_E2a_v4", 2, 16, 50), ("Standard_E4a_v4", 4, 32, 100),
        ("Standard_E8a_v4", 8, 64, 200), ("Standard_E16a_v4", 16, 128, 400),
        ("Standard_E20a_v4", 20, 160, 500), ("Standard_E32a_v4", 32, 256, 800),
        ("Standard_E48a_v4", 48, 384, 1200), ("Standard_E64a_v4", 64, 512, 1600),
        ("Standard_E96a_v4", 96, 672, 2400),
    )),
    ("standardEv3Family", False, (
        ("Standard_E2_v3", 2, 16, 50), ("Standard_E4_v3", 4, 32, 100),
        ("Standard_E8_v3", 8, 64, 200), ("Standard_E16_v3", 16, 128, 400),
        ("Standard_E20_v3", 20, 160, 500), ("Standard_E32_v3", 32, 256, 800),
        ("Standard_E48_v3", 48, 384, 1200), ("Standard_E64_v3", 64, 432, 1600),
    )),
    ("standardFSv2Family", True, (
        ("Standard_F2s_v2", 2, 4, 16), ("Standard_F4s_v2", 4, 8, 32),
        ("Standard_F8s_v2", 8, 16, 64), ("Standard_F16s_v2", 16, 32, 128),
        ("Standard_F32s_v2", 32, 64, 256), ("Standard_F48s_v2", 48, 96, 384),
        ("Standard_F64s_v2", 64, 128, 512), ("Standard_F72s_v2", 72, 144, 576),
    )),
    ("standardHFamily", False, (
        ("Standard_H8", 8, 56, 1000), ("Standard_H16", 16, 112, 2000),
        ("Standard_H8m", 8, 112, 1000), ("Standard_H16m", 16, 224, 2000),
        ("Standard_H16r", 16, 112, 2000), ("Standard_H16mr", 16, 224, 2000),
    )),
    # NC: 1 GPU = one half of a Tesla K80 card.
    ("standardNCFamily", False, (
        ("Standard_NC6", 6, 56, 340, 1), ("Standard_NC12", 12, 112, 680, 2),
        ("Standard_NC24", 24, 224, 1440, 4), ("Standard_NC24r", 24, 224, 1440, 4),
    )),
    # NCv3: Tesla V100.
    ("standardNCSv3Family", True, (
        ("Standard_NC6s_v3", 6, 112, 736, 1), ("Standard_NC12s_v3", 12, 224, 1474, 2),
        ("Standard_NC24s_v3", 24, 448, 2948, 4),
    )),
    # NCasT4_v3: Tesla T4. The family name really contains spaces.
    ("Standard NCASv3_T4 Family", True, (
        ("Standard_NC4as_T4_v3", 4, 28, 180, 1), ("Standard_NC8as_T4_v3", 8, 56, 360, 1),
        ("Standard_NC16as_T4_v3", 16, 110, 360, 1), ("Standard_NC64as_T4_v3", 64, 440, 2880, 4),
    )),
    # ND: Tesla P40.
    ("standardNDSFamily", True, (
        ("Standard_ND6s", 6, 112, 736, 1), ("Standard_ND12s", 12, 224, 1474, 2),
        ("Standard_ND24s", 24, 448, 2948, 4), ("Standard_ND24rs", 24, 448, 2948, 4),
    )),
    # NDv2: 8x Tesla V100 (NVLink).
    ("standardNDSv2Family", True, (
        ("Standard_ND40rs_v2", 40, 672, 2948, 8),
    )),
    # NV: 1 GPU = one half of a Tesla M60 card.
    ("standardNVFamily", False, (
        ("Standard_NV6", 6, 56, 340, 1), ("Standard_NV12", 12, 112, 680, 2),
        ("Standard_NV24", 24, 224, 1440, 4),
    )),
    ("standardNVSv3Family", True, (
        ("Standard_NV12s_v3", 12, 112, 320, 1), ("Standard_NV24s_v3", 24, 224, 640, 2),
        ("Standard_NV48s_v3", 48, 448, 1280, 4),
    )),
)


def _build() -> tuple[VmSize, ...]:
    sizes = []
    for family, premium_io, rows in _SERIES:
        for name, vcpus, memory_gib, temp_gib, *gpus in rows:
            sizes.append(VmSize(
                name=name,
                family=family,
                vcpus=vcpus,
                memory_gb=float(memory_gib),
                gpus=gpus[0] if gpus else 0,
                os_vhd_size_mb=OS_VHD_SIZE_MB,
                max_resource_volume_mb=temp_gib * 1024,
                low_priority_capable=True,
                premium_io=premium_io,
            ))
    return tuple(sizes)


VM_SIZES: tuple[VmSize, ...] = _build()
_BY_NAME: dict[str, VmSize] = {s.name.lower(): s for s in VM_SIZES}


def find(name: str) -> VmSize | None:
    """Look up a size by name, ignoring case (Azure treats vmSize case-insensitively)."""
    if not isinstance(name, str):
        return None
    return _BY_NAME.get(name.strip().lower())


GIB = 1024 ** 3


def scaled_limits(size: VmSize, scale: float) -> tuple[float, int]:
    """(CPUs, memory bytes) a container gets for `size`, scaled so a small machine hosts several "VMs"."""
    if size.exact:
        return float(size.vcpus), int(size.memory_gb * GIB)
    return max(0.1, size.vcpus * scale), int(max(0.25, size.memory_gb * scale) * GIB)
