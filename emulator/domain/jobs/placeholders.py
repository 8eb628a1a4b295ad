"""`${{inputs.x}}` and `${{outputs.y}}` in a command, resolved as Azure ML resolves them.

`$[[ ... ]]` marks an optional part: it is dropped when an input it names was not given.
"""

import re
from collections.abc import Mapping

from emulator.errors import ValidationFailed

_REFERENCE = re.compile(r"\$\{\{\s*(inputs|outputs)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_OPTIONAL = re.compile(r"\$\[\[(.*?)\]\]", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def valid_name(name: str) -> bool:
    """Input and output names are identifiers, so that a placeholder can name them."""
    return bool(_NAME.fullmatch(name))


def references(command: str) -> set[tuple[str, str]]:
    """Every (kind, name) the command refers to, optional parts included."""
    return {(m.group(1), m.group(2)) for m in _REFERENCE.finditer(command)}


def check(command: str, inputs: Mapping[str, object], outputs: Mapping[str, object]) -> None:
    """Refuse a command that names inputs or outputs the job does not declare."""
    declared = {"inputs": inputs, "outputs": outputs}
    optional = {ref for part in _OPTIONAL.findall(command) for ref in references(part)}
    unknown = sorted(f"{kind}.{name}" for kind, name in references(command) - optional
                     if name not in declared[kind])
    if unknown:
        raise ValidationFailed(f"The command refers to {', '.join(unknown)}, which the job does not declare.",
                               target="properties.command")


def resolve(command: str, values: Mapping[str, Mapping[str, str]]) -> str:
    """Substitute values ({"inputs": {...}, "outputs": {...}}); optional parts whose inputs are missing go."""

    def optional(match: re.Match) -> str:
        part = match.group(1)
        present = all(name in values.get(kind, {}) for kind, name in references(part))
        return part if present else ""

    def substitute(match: re.Match) -> str:
        kind, name = match.group(1), match.group(2)
        if name not in values.get(kind, {}):
            raise ValidationFailed(f"The command refers to {kind}.{name}, which has no value.",
                                   target="properties.command")
        return str(values[kind][name])  # verbatim, as Azure does: quoting is the command's business

    return _REFERENCE.sub(substitute, _OPTIONAL.sub(optional, command))
