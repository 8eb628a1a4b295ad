"""`amlemu token` and `amlemu roles`: a token for a named principal holding a role, in one workspace or all."""

import jwt
import pytest
from typer.testing import CliRunner

from emulator import tokens
from emulator.cli.main import app
from emulator.domain import roles
from emulator.errors import ValidationFailed


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in ("AMLEMU_PORT", "AMLEMU_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AMLEMU_HOME", str(tmp_path))
    (tmp_path / "token.key").write_bytes(b"k" * 32)
    return tmp_path


def claims(output: str) -> dict:
    return jwt.decode(output.strip(), b"k" * 32, algorithms=["HS256"], audience="https://localhost:8443")


def test_a_token_names_its_principal_role_and_workspace(home):
    result = CliRunner().invoke(app, ["token", "--role", "azureml data scientist", "--workspace", "team",
                                      "--principal", "alice"])
    assert result.exit_code == 0, result.output
    got = claims(result.stdout)
    assert got[tokens.ROLE_CLAIM] == "AzureML Data Scientist"
    assert got[tokens.SCOPE_CLAIM].endswith("/providers/Microsoft.MachineLearningServices/workspaces/team")
    assert got["oid"] == tokens.principal_object_id("alice") and got["upn"] == "alice@amlemu.local"


def test_without_a_workspace_the_role_holds_everywhere(home):
    result = CliRunner().invoke(app, ["token", "--role", "Reader"])
    assert claims(result.stdout)[tokens.SCOPE_CLAIM] == "/"


def test_an_unknown_role_is_refused_naming_the_field(home):
    result = CliRunner().invoke(app, ["token", "--role", "Superuser"])
    assert isinstance(result.exception, ValidationFailed) and result.exception.target == "role"
    assert "Superuser" in result.exception.message and "AzureML Compute Operator" in result.exception.message


def test_roles_markdown_is_the_readme_table():
    result = CliRunner().invoke(app, ["roles", "--markdown"])
    assert result.exit_code == 0 and result.stdout == roles.markdown_table()
