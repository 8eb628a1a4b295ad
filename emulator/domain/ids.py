"""ARM resource ids of the resources the emulator serves."""

from dataclasses import dataclass

PROVIDER = "Microsoft.MachineLearningServices"


@dataclass(frozen=True)
class WorkspaceRef:
    subscription: str
    resource_group: str
    name: str
    noun = "workspace"  # what messages call an asset's owner (registries hold assets too)

    @property
    def key(self) -> str:
        """Case-insensitive identity, as ARM treats names."""
        return self.arm_id.lower()

    @property
    def arm_id(self) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
                f"/providers/{PROVIDER}/workspaces/{self.name}")

    @classmethod
    def of(cls, row) -> "WorkspaceRef":
        """The ref of a stored workspace (anything with subscription, resource_group and name)."""
        return cls(row.subscription, row.resource_group, row.name)

    @classmethod
    def from_key(cls, key: str) -> "WorkspaceRef":
        """The ref a stored key names (a workspace's or any of its children's, lower-cased ARM ids): what a
        record still says of its workspace once that is deleted."""
        parts = key.split("/")
        return cls(parts[2], parts[4], parts[8])

    def child_id(self, kind: str, name: str) -> str:
        return f"{self.arm_id}/{kind}/{name}"


def location_id(subscription: str, location: str) -> str:
    return f"/subscriptions/{subscription}/providers/{PROVIDER}/locations/{location}"


CLOUD_NAME = "AzureMLEmulator"  # the cloud the emulator's metadata document describes
