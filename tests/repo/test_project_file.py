"""Pulumi.yaml: valid against Pulumi's own schema, and the dev stack sets only what it declares.
Its `config:` block is written from the key table (tests/repo/test_project_docs.py checks it is)."""

import json

import jsonschema
import yaml

from devkit import reference_data
from tests.support.paths import REPO

ROOT = REPO


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


def test_dev_stack_sets_only_declared_keys_and_no_secrets():
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    declared = set(_project()["config"])
    for key, value in stack.items():
        ns, name = key.split(":", 1)
        assert ns == "aws" or (ns == "slinky-eks" and name in declared), key
        assert not (isinstance(value, dict) and "secure" in value), key
