"""Pulumi.yaml: valid against Pulumi's own schema, every config key declared and documented."""
import json
import pathlib
import re

import jsonschema
import yaml

from tools import reference_data

ROOT = pathlib.Path(__file__).resolve().parent.parent


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


def test_every_key_the_program_reads_is_declared():
    source = (ROOT / "components" / "stack_config.py").read_text()
    read = set(re.findall(r'r\.(?:string|whole|boolean|string_list)\("(\w+)"', source))
    read |= set(re.findall(r'r\.cfg\.get\("(\w+)"\)', source))
    assert read == set(_project()["config"])


def test_dev_stack_sets_only_declared_keys_and_no_secrets():
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    declared = set(_project()["config"])
    for key, value in stack.items():
        ns, name = key.split(":", 1)
        assert ns == "aws" or (ns == "slinky-eks" and name in declared), key
        assert not (isinstance(value, dict) and "secure" in value), key
