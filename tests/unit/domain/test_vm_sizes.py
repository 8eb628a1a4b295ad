import sys
from pathlib import Path

# Make the repo root importable even when pytest is run from another directory.
_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import pytest  # noqa: E402

from emulator.domain.compute.vm_sizes import VM_SIZES, VmSize, find  # noqa: E402

EXPECTED_SERIES = {
    "standardDFamily": ["Standard_D1", "Standard_D2", "Standard_D3", "Standard_D4",
                        "Standard_D11", "Standard_D12", "Standard_D13", "Standard_D14"],
    "standardDv2Family": [f"Standard_D{n}_v2" for n in (1, 2, 3, 4, 5, 11, 12, 13, 14, 15)],
    "standardDSv2Family": [f"Standard_DS{n}_v2" for n in (1, 2, 3, 4, 5, 11, 12, 13, 14, 15)],
    "standardDv3Family": [f"Standard_D{n}_v3" for n in (2, 4, 8, 16, 32, 48, 64)],
    "standardDSv3Family": [f"Standard_D{n}s_v3" for n in (2, 4, 8, 16, 32, 48, 64)],
    "standardDDSv4Family": [f"Standard_D{n}ds_v4" for n in (2, 4, 8, 16, 32, 48, 64)],
    "standardEAv4Family": [f"Standard_E{n}a_v4" for n in (2, 4, 8, 16, 20, 32, 48, 64, 96)],
    "standardEv3Family": [f"Standard_E{n}_v3" for n in (2, 4, 8, 16, 20, 32, 48, 64)],
    "standardFSv2Family": [f"Standard_F{n}s_v2" for n in (2, 4, 8, 16, 32, 48, 64, 72)],
    "standardHFamily": ["Standard_H8", "Standard_H16", "Standard_H8m", "Standard_H16m",
                        "Standard_H16r", "Standard_H16mr"],
    "standardNCFamily": ["Standard_NC6", "Standard_NC12", "Standard_NC24", "Standard_NC24r"],
    "standardNCSv3Family": ["Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3"],
    "Standard NCASv3_T4 Family": [f"Standard_NC{n}as_T4_v3" for n in (4, 8, 16, 64)],
    "standardNDSFamily": ["Standard_ND6s", "Standard_ND12s", "Standard_ND24s", "Standard_ND24rs"],
    "standardNDSv2Family": ["Standard_ND40rs_v2"],
    "standardNVFamily": ["Standard_NV6", "Standard_NV12", "Standard_NV24"],
    "standardNVSv3Family": ["Standard_NV12s_v3", "Standard_NV24s_v3", "Standard_NV48s_v3"],
}

ARM_KEYS = {"name", "family", "vCPUs", "gpus", "osVhdSizeMB", "maxResourceVolumeMB",
            "memoryGB", "lowPriorityCapable", "premiumIO", "supportedComputeTypes"}


@pytest.mark.parametrize("family,names", sorted(EXPECTED_SERIES.items()))
def test_every_series_present_with_exact_names_and_family(family, names):
    for name in names:
        size = find(name)
        assert size is not None, name
        assert size.name == name  # Azure's exact casing preserved
        assert size.family == family


def test_table_is_exactly_the_listed_series():
    expected = {n for names in EXPECTED_SERIES.values() for n in names}
    assert {s.name for s in VM_SIZES} == expected


def test_names_unique_case_insensitively():
    lowered = [s.name.lower() for s in VM_SIZES]
    assert len(lowered) == len(set(lowered))


def test_all_entries_are_frozen_vmsizes_with_sane_values():
    for s in VM_SIZES:
        assert isinstance(s, VmSize)
        assert s.vcpus > 0 and s.memory_gb > 0 and s.gpus >= 0
        assert s.os_vhd_size_mb == 1047552
        assert s.max_resource_volume_mb > 0
        assert s.low_priority_capable is True
    with pytest.raises(AttributeError):
        VM_SIZES[0].vcpus = 99  # type: ignore[misc]


@pytest.mark.parametrize("name,vcpus,mem,gpus,temp_mb,premium", [
    ("Standard_DS3_v2", 4, 14.0, 0, 28672, True),
    ("Standard_DS1_v2", 1, 3.5, 0, 7168, True),
    ("Standard_D3_v2", 4, 14.0, 0, 204800, False),
    ("Standard_NC6", 6, 56.0, 1, 348160, False),
    ("Standard_NC24", 24, 224.0, 4, 1474560, False),
    ("Standard_NC6s_v3", 6, 112.0, 1, 753664, True),
    ("Standard_NC64as_T4_v3", 64, 440.0, 4, 2949120, True),
    ("Standard_ND40rs_v2", 40, 672.0, 8, 3018752, True),
    ("Standard_F72s_v2", 72, 144.0, 0, 589824, True),
    ("Standard_E96a_v4", 96, 672.0, 0, 2457600, False),
    ("Standard_E64_v3", 64, 432.0, 0, 1638400, False),
])
def test_known_specs(name, vcpus, mem, gpus, temp_mb, premium):
    s = find(name)
    assert (s.vcpus, s.memory_gb, s.gpus, s.max_resource_volume_mb, s.premium_io) == (
        vcpus, mem, gpus, temp_mb, premium)


def test_gpu_counts_only_on_gpu_series():
    for s in VM_SIZES:
        is_gpu = s.name.split("_")[1].startswith(("NC", "ND", "NV"))
        assert (s.gpus > 0) == is_gpu, s.name


def test_to_arm_shape():
    arm = find("Standard_DS3_v2").to_arm()
    assert set(arm) == ARM_KEYS
    assert arm == {
        "name": "Standard_DS3_v2", "family": "standardDSv2Family", "vCPUs": 4, "gpus": 0,
        "osVhdSizeMB": 1047552, "maxResourceVolumeMB": 28672, "memoryGB": 14.0,
        "lowPriorityCapable": True, "premiumIO": True,
        "supportedComputeTypes": ["AmlCompute", "ComputeInstance"],
    }
    for s in VM_SIZES:
        assert set(s.to_arm()) == ARM_KEYS


@pytest.mark.parametrize("query", ["Standard_NC6", "standard_nc6", "STANDARD_NC6", " Standard_Nc6 "])
def test_find_is_case_insensitive(query):
    assert find(query) is find("Standard_NC6")


def test_find_unknown_returns_none():
    assert find("Standard_Bogus_v9") is None
    assert find("") is None
    assert find(None) is None  # type: ignore[arg-type]
