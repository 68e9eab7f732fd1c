"""StackConfig is built from the key table (model/checks/config_schema.py): its fields are the keys'
attributes and the derived ones, nothing filled by hand."""

import dataclasses
import datetime
import logging

import yaml

from model.checks import config_schema
from stack import config as stack_config
from tests.support.paths import REPO

KEYS = config_schema.schema(datetime.date.today())


def field_differences(cls, keys) -> list[str]:
    fields = {f.name for f in dataclasses.fields(cls)}
    filled = {k.attr for k in keys if k.attr} | set(stack_config.DERIVED)
    return [f"{n}: a StackConfig field no key fills" for n in sorted(fields - filled)] + [
        f"{n}: a key's attribute StackConfig lacks" for n in sorted(filled - fields)
    ]


def test_stack_configs_fields_are_the_tables_attributes_and_the_derived_ones():
    assert field_differences(stack_config.StackConfig, KEYS) == []


def test_a_field_no_key_fills_is_found():
    cls = dataclasses.make_dataclass(
        "Widened", [("project", str)], bases=(stack_config.StackConfig,), frozen=True
    )
    assert field_differences(cls, KEYS) == ["project: a StackConfig field no key fills"]


def test_a_key_attribute_without_a_field_is_found():
    extra = config_schema.Key(
        "colour", "string", "red", description="The colour.", attr="colour", on_change="in place"
    )
    assert field_differences(stack_config.StackConfig, (*KEYS, extra)) == [
        "colour: a key's attribute StackConfig lacks"
    ]


def test_values_are_held_stripped_and_arrays_as_tuples():
    assert stack_config.held(" ssh-ed25519 AAAA x\n") == "ssh-ed25519 AAAA x"
    assert stack_config.held([" 10.0.0.0/8", "192.0.2.1/32 "]) == ("10.0.0.0/8", "192.0.2.1/32")
    assert (stack_config.held(2), stack_config.held(False)) == (2, False)


def test_warnings_reach_the_engine_through_pulumi_log_and_nothing_is_printed(capsys, caplog):
    # `pulumi preview` shows as warnings what the program sends the engine with pulumi.log.warn
    # (the mocks' logger records exactly those); print() or Python's logging would reach the
    # language host's output, not the preview's warnings. An uncached run, so the program runs here.
    from devkit.offline_account import DEV
    from devkit.offline_run import _run_program
    from devkit.offline_run import stack_config as given

    config = given(
        "dev", {"slinkyChartVersion": "1.2.1", "gpuInstanceType": "p5e.48xlarge", "gpuNodeCount": "1"}
    )
    graph = _run_program("dev", config, True, False, DEV)
    printed = capsys.readouterr()
    assert len(graph.warnings) == 3  # the example key, the Slinky defect, the unpriced type
    assert (printed.out, printed.err) == ("", "")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_settings_name_their_keys_in_the_projects_namespace():
    # stack/config.py's from_settings refuses an undeclared key as `<PROJECT>:<key>`, as load
    # does a stack's: the project's name, one home in Pulumi.yaml.
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())["name"]
    assert stack_config.PROJECT == project
