"""Pulumi.yaml: valid against Pulumi's own schema, every config key declared and documented, and
declared as the config schema (model/config_schema.py) has it; the README's table lists the same keys."""
import copy
import datetime
import json
import re

import jsonschema
import pytest
import yaml

from devkit import reference_data
from model import config_schema
from tests.support.paths import REPO

ROOT = REPO
SCHEMA = config_schema.schema(datetime.date.today())


def _project():
    return yaml.safe_load((ROOT / "Pulumi.yaml").read_text())


def test_project_file_validates_against_the_pulumi_schema():
    # Pulumi's own schema of Pulumi.yaml (pulumi/pulumi sdk/go/common/workspace/project.json).
    schema = json.loads(reference_data.path("pulumi-project.schema.json").read_text())
    jsonschema.validate(_project(), schema)


def test_project_is_named_slinky_eks_with_a_python_virtualenv():
    p = _project()
    assert p["name"] == "slinky-eks"
    assert p["runtime"]["name"] == "python" and p["runtime"]["options"]["virtualenv"]


def test_every_declared_key_has_a_type_and_description():
    for key, decl in _project()["config"].items():
        assert decl.get("type") in {"string", "integer", "boolean", "array"}, key
        assert decl.get("description"), key


def disagreements(keys, declared: dict) -> list[str]:
    """Where the schema's project keys and Pulumi.yaml's declarations differ: a key only one has,
    another type, another default (a key without a default must be set by the stack)."""
    found = []
    schema = {k.name: k for k in keys if ":" not in k.name}
    for name in sorted(set(schema) | set(declared)):
        if name not in declared:
            found.append(f"{name}: in the schema, not in Pulumi.yaml")
        elif name not in schema:
            found.append(f"{name}: in Pulumi.yaml, not in the schema")
        else:
            key, decl = schema[name], declared[name]
            default = decl.get("default", config_schema.REQUIRED)
            if key.type != decl.get("type"):
                found.append(f"{name}: type {key.type} in the schema, {decl.get('type')} in Pulumi.yaml")
            if key.default != default or type(key.default) is not type(default):
                found.append(f"{name}: default {key.default!r} in the schema, {default!r} in Pulumi.yaml")
    return found


def test_every_schema_key_is_declared_in_the_project_file_with_its_type_and_default():
    assert disagreements(SCHEMA, _project()["config"]) == []


@pytest.mark.parametrize("change, found", [
    (lambda c: c.pop("vpcCidr"), "vpcCidr: in the schema, not in Pulumi.yaml"),
    (lambda c: c.update(colour={"type": "string"}), "colour: in Pulumi.yaml, not in the schema"),
    (lambda c: c["gpuNodeCount"].update(default=3), "gpuNodeCount: default 2 in the schema, 3 in Pulumi.yaml"),
    (lambda c: c["gpuNodeCount"].update(default="2"), "gpuNodeCount: default 2 in the schema, '2' in Pulumi.yaml"),
    (lambda c: c["sshPublicKey"].update(default=""), "sshPublicKey: default REQUIRED in the schema, '' in"),
    (lambda c: c["retainSharedData"].update(type="string"), "retainSharedData: type boolean in the schema"),
])
def test_a_project_file_that_disagrees_with_the_schema_is_found(change, found):
    declared = copy.deepcopy(_project()["config"])
    change(declared)
    (problem,) = disagreements(SCHEMA, declared)
    assert problem.startswith(found)


def readme_config_keys(readme: str) -> dict[str, str]:
    """The README's configuration table: key -> its default cell."""
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([\w:]+)` \| ([^|]*) \|", section, re.M))


def readme_disagreements(keys, table: dict[str, str]) -> list[str]:
    """Keys the README's table lacks or has beyond the schema, and required keys (set per stack)
    whose default cell does not say so."""
    found = [f"{k.name}: not in the README's table" for k in keys if k.name not in table]
    found += [f"{name}: in the README's table, not in the schema" for name in table
              if name not in {k.name for k in keys}]
    found += [f"{k.name}: required, but the README gives a default" for k in keys
              if k.name in table and (k.default is config_schema.REQUIRED) != (table[k.name] == "(stack)")]
    return found


def test_the_readmes_config_reference_lists_every_schema_key():
    assert readme_disagreements(SCHEMA, readme_config_keys((ROOT / "README.md").read_text())) == []


def test_a_readme_table_that_misses_a_key_or_invents_a_default_is_found():
    table = readme_config_keys((ROOT / "README.md").read_text())
    del table["vpcCidr"]
    table["sshPublicKey"] = "`ssh-ed25519 ...`"
    assert readme_disagreements(SCHEMA, table) == ["vpcCidr: not in the README's table",
                                                  "sshPublicKey: required, but the README gives a default"]


def test_dev_stack_sets_only_declared_keys_and_no_secrets():
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    declared = set(_project()["config"])
    for key, value in stack.items():
        ns, name = key.split(":", 1)
        assert ns == "aws" or (ns == "slinky-eks" and name in declared), key
        assert not (isinstance(value, dict) and "secure" in value), key
