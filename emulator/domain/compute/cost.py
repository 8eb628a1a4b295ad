"""The cost meter: what the same VMs would cost in Azure, per hour and per second, from Azure's retail prices.

Dedicated figures are Linux pay-as-you-go USD per hour in East US. Azure's Retail Prices API (prices.azure.com)
cannot be reached from the machines this was built on; the figures were read on 2026-11-27 from public price
tables that quote it, found with the search tool:
- Checked in a per-size price list of Azure VMs (Linux and Windows per hour; GitHub RMRanjit/SUNA-UI,
  src/dummy_data/AzureVMsPricing.js, which does not name its region; its DS3_v2 $0.293, D16s_v3 $0.768, NC6s_v3
  $3.06 and ND40rs_v2 $22.032 are the East US figures the calculators quote): DS1_v2 to DS5_v2 $0.073, $0.146,
  $0.293, $0.585, $1.17 (D2_v2 to D5_v2 the same); DS11_v2 $0.185, DS12_v2 $0.371, DS13_v2 $0.741, DS14_v2
  $1.482, DS15_v2 $1.853; D v1 D2 $0.154, D3 $0.308, D4 $0.616; Dsv3 $0.048 a vCPU (D2s_v3 $0.096, D16s_v3
  $0.768, D32s_v3 $1.536); Ev3 $0.063 a vCPU (E2_v3 $0.126, E16_v3 $1.008, E32_v3 $2.016); NC $0.90 a K80 (NC6,
  NC12, NC24); NC6s_v3 $3.06 a V100; NCasT4_v3 NC4as $0.526, NC8as $0.752, NC64as $4.352; ND $2.07 a P40 (ND6s
  $2.07, ND12s $4.14, ND24s $8.28); ND40rs_v2 $22.032; NV $1.14 an M60 (NV6, NV12 $2.28); NVv3 $1.14 per 12
  vCPUs (NV12s_v3 $1.14, NV24s_v3 $2.28, NV48s_v3 $4.56).
- Read earlier from several cost calculators that agree (not re-checked here): F4s_v2 $0.169.
- Not checked (the author's recollection of Azure's price list): NC16as_T4_v3 $1.204; D1_v2 and the high-memory
  D11_v2-D15_v2 (priced as their DS twins); D64s_v3 $3.072 (Dsv3's rate; the list stops at D48s_v3 $2.304).
Re-read them from the API where it can be reached (`armSkuName eq '<size>' and armRegionName eq 'eastus' and
priceType eq 'Consumption'`).

Documented fallbacks, for what no figure was found for: a size is priced at its series' rate per vCPU (Azure
prices a series linearly in vCPUs: D2s_v3 to D48s_v3 above); D v1 sizes not above are priced as the Dv2 size of
their shape, Ddsv4 at Dsv3's rate times 1.18, Eav4 at Ev3's, H at Fsv2's times 2.5. Low priority is 20 % of
dedicated ("up to 80 %" off, Azure ML's pricing page; spot prices move hourly, the meter keeps one figure; not
checked per size). Other regions scale East US by one factor each, none of them checked (West Europe's 1.2 is
D2s_v3 at $0.115 against $0.096, recalled). The emulator's own region, `local`, prices as East US.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from emulator.domain.compute import kubernetes, local, vm_sizes
from emulator.domain.events import Lifetime
from emulator.errors import ValidationFailed

DEFAULT_REGION = "eastus"
LOW_PRIORITY_SHARE = 0.2
REGIONS = {"eastus": 1.0, "eastus2": 1.0, "westus2": 1.0, "westeurope": 1.2, "northeurope": 1.08, "local": 1.0}
BUSY = ("Running", "Finalizing")  # a job's node is billed to the job while it is in these

# Dollars per hour per vCPU (or per GPU where a series is priced by its GPUs), East US, Linux, pay as you go.
_PER_VCPU = {
    "standardDv2Family": 0.0732, "standardDSv2Family": 0.0732,
    "standardDv3Family": 0.048, "standardDSv3Family": 0.048, "standardDDSv4Family": 0.048 * 1.18,
    "standardEv3Family": 0.063, "standardEAv4Family": 0.063, "standardFSv2Family": 0.0423,
    "standardHFamily": 0.0423 * 2.5, "standardNVSv3Family": 1.14 / 12,
}
_PER_GPU = {"standardNCFamily": 0.90, "standardNCSv3Family": 3.06, "standardNDSFamily": 2.07,
            "standardNVFamily": 1.14}
# Sizes whose published price is not their series' rate times their vCPUs (or GPUs).
_EXACT = {**{f"Standard_{d}{n}_v2": p for d in ("D", "DS")
             for n, p in ((1, 0.073), (2, 0.146), (3, 0.293), (4, 0.585), (5, 1.17))},
          "Standard_DS11_v2": 0.185, "Standard_DS12_v2": 0.371, "Standard_DS13_v2": 0.741,
          "Standard_DS14_v2": 1.482, "Standard_DS15_v2": 1.853, "Standard_D11_v2": 0.185, "Standard_D12_v2": 0.371,
          "Standard_D13_v2": 0.741, "Standard_D14_v2": 1.482, "Standard_D15_v2": 1.853,
          "Standard_NC4as_T4_v3": 0.526, "Standard_NC8as_T4_v3": 0.752, "Standard_NC16as_T4_v3": 1.204,
          "Standard_NC64as_T4_v3": 4.352, "Standard_ND40rs_v2": 22.032,
          "Standard_D2": 0.154, "Standard_D3": 0.308, "Standard_D4": 0.616}
FALLBACK_PER_VCPU = 0.048  # a size of a series not above: the general-purpose Dsv3 rate


@dataclass(frozen=True)
class Rate:
    size: str
    priority: str
    region: str
    per_hour: float
    exact: bool  # a published figure (False: a documented fallback rule)

    def dollars(self, seconds: float) -> float:
        return self.per_hour * max(seconds, 0.0) / 3600.0


def region_of(name: str | None) -> str:
    region = (name or DEFAULT_REGION).lower().replace(" ", "")
    if region not in REGIONS:
        raise ValidationFailed(f"No prices for region '{name}'; the meter knows {', '.join(sorted(REGIONS))}.",
                               target="region")
    return region


def dedicated_east_us(size: vm_sizes.VmSize) -> tuple[float, bool]:
    """East US pay-as-you-go per hour, and whether it is a published figure."""
    if size.name in _EXACT:
        return _EXACT[size.name], True
    if size.family == "standardDFamily":  # retired D v1: priced as the Dv2 size of its shape (D3 as D3_v2)
        return dedicated_east_us(vm_sizes.find(f"{size.name}_v2"))[0], False
    if size.family in _PER_GPU and size.gpus:
        return _PER_GPU[size.family] * size.gpus, True
    if size.family in _PER_VCPU:
        derived = ("standardHFamily", "standardDDSv4Family", "standardEAv4Family")
        return _PER_VCPU[size.family] * size.vcpus, size.family not in derived
    return FALLBACK_PER_VCPU * size.vcpus, False


def rate(size_name: str, priority: str, region: str) -> Rate:
    """What one VM of `size_name` costs per hour (Dedicated or LowPriority) in `region`."""
    region = region_of(region)
    size = vm_sizes.find(size_name)
    if size_name == local.SIZE_NAME or size_name.startswith(kubernetes.SIZE_FAMILY + ":"):
        # the machine the emulator runs on, an attached Kubernetes cluster: Azure bills neither
        return Rate(size_name, priority, region, 0.0, True)
    if size is None:  # a size the catalogue no longer has (a row from an older version): the general rate
        per_hour, exact = FALLBACK_PER_VCPU * 4, False
    else:
        per_hour, exact = dedicated_east_us(size)
    per_hour *= REGIONS[region] * (LOW_PRIORITY_SHARE if priority == "LowPriority" else 1.0)
    return Rate(size_name, priority, region, round(per_hour, 6), exact)


def span(start: datetime, end: datetime | None, now: datetime) -> float:
    """Seconds from start to end (or now, while it lasts)."""
    return max(((end or now) - start).total_seconds(), 0.0)


def node_costs(lifetimes: Iterable[Lifetime], region: str, now: datetime) -> dict[str, tuple[float, float]]:
    """Per compute key: (node-seconds, dollars)."""
    totals: dict[str, tuple[float, float]] = {}
    for life in lifetimes:
        seconds = span(life.start, life.end, now)
        dollars = rate(life.vm_size, life.priority, region).dollars(seconds)
        had = totals.get(life.compute, (0.0, 0.0))
        totals[life.compute] = (had[0] + seconds, had[1] + dollars)
    return totals


def busy_seconds(history: list[dict], now: datetime) -> float:
    """Seconds a job spent Running or Finalizing, from its status history (every attempt counts)."""
    total, since = 0.0, None
    for entry in history:
        at = datetime.fromisoformat(entry["time"])
        if since is not None:
            total += span(since, at, now)
        since = at if entry.get("status") in BUSY else None
    return total + (span(since, None, now) if since is not None else 0.0)


def deployment_cost(series: list[tuple[datetime, int, str]], region: str, now: datetime) -> tuple[float, float]:
    """(instance-seconds, dollars) of one deployment from its instance count over time (always dedicated)."""
    seconds = dollars = 0.0
    for (since, count, size), following in zip(series, [*series[1:], None], strict=True):
        held = count * span(since, following[0] if following else None, now)
        seconds += held
        dollars += rate(size, "Dedicated", region).dollars(held)
    return seconds, dollars


def budget_crossed(budget: dict | None, spent: float) -> bool:
    """The workspace's budget is crossed now and was not before (its event is recorded once)."""
    return bool(budget) and budget.get("exceededAt") is None and spent >= float(budget["dollars"])
