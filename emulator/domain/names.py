"""Azure's naming rules, checked before anything is stored."""

import re

from emulator.errors import ValidationFailed

# Compute names: 3-24 characters, letters, digits and '-', starting with a letter, not ending with '-'
# (learn.microsoft.com, "Create an Azure Machine Learning compute cluster", Name).
_COMPUTE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,22}[A-Za-z0-9]$")
# Workspace names: 3-33 characters, alphanumerics, '-' and '_', starting with an alphanumeric.
_WORKSPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{2,32}$")
# Resource groups: 1-90 characters of letters, digits, '_', '-', '.', '(' and ')', not ending with '.'.
_RESOURCE_GROUP = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
_SUBSCRIPTION = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")


def _check(pattern: re.Pattern, value: str, target: str, rule: str) -> str:
    if not pattern.fullmatch(value):
        raise ValidationFailed(f"Invalid {target} '{value}': {rule}.", target=target)
    return value


def compute_name(value: str) -> str:
    return _check(_COMPUTE, value, "computeName",
                  "3 to 24 characters, letters, digits and '-', starting with a letter and not ending with '-'")


def workspace_name(value: str) -> str:
    return _check(_WORKSPACE, value, "workspaceName",
                  "3 to 33 characters, letters, digits, '-' and '_', starting with a letter or digit")


def resource_group(value: str) -> str:
    return _check(_RESOURCE_GROUP, value, "resourceGroupName",
                  "1 to 90 characters of letters, digits, '_', '-', '.', '(' and ')', not ending with '.'")


def subscription(value: str) -> str:
    return _check(_SUBSCRIPTION, value, "subscriptionId", "a GUID")
