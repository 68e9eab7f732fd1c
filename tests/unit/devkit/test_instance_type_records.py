"""devkit/instance_type_records.py: EC2's full DescribeInstanceTypes records, read in place from the
moto release requirements-dev.txt pins, are the records ../shared/ref/aws/describe-instance-types.json
was narrowed from; they are read without importing moto, and another release, or none, is an error
naming the pin."""

import hashlib
import importlib.util
import subprocess
import sys

import pytest

from devkit import instance_type_records, reference_fetch
from devkit.offline_run import PROJECT_DIR


def _entry() -> reference_fetch.InstanceTypesEntry:
    (entry,) = [e for e in reference_fetch.entries() if isinstance(e, reference_fetch.InstanceTypesEntry)]
    return entry


def test_the_records_are_the_ones_the_reference_file_was_narrowed_from():
    document = reference_fetch.instance_types_document(instance_type_records.records(), _entry())
    assert hashlib.sha256(document).hexdigest() == _entry().sha256


def test_the_records_carry_each_types_instance_storage():
    record = instance_type_records.records()["p5.48xlarge"]
    assert record["InstanceStorageSupported"] is True
    assert record["InstanceStorageInfo"]["Disks"] == [{"Count": 8, "SizeInGB": 3800, "Type": "ssd"}]


def test_the_pinned_release_is_the_one_the_reference_fetch_downloads():
    assert f"/moto-{instance_type_records.pinned_version()}-" in _entry().url


def test_reading_the_records_does_not_import_moto():
    script = (
        "import sys; from devkit import instance_type_records as r; r.records(); "
        "sys.exit('moto' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", script], cwd=PROJECT_DIR).returncode == 0


def test_another_moto_release_is_an_error_naming_both(monkeypatch):
    monkeypatch.setattr(instance_type_records.importlib.metadata, "version", lambda name: "5.2.1")
    with pytest.raises(
        instance_type_records.RecordsMissing, match=r"moto 5\.2\.1 is installed, .* pins 5\.2\.5"
    ):
        instance_type_records.records()


def test_no_moto_installed_is_an_error_naming_the_pin(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        instance_type_records.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "moto" else find_spec(name, *args),
    )
    with pytest.raises(instance_type_records.RecordsMissing, match=r"moto 5\.2\.5 is not installed"):
        instance_type_records.records()


def test_requirements_without_a_moto_pin_are_an_error(tmp_path):
    requirements = tmp_path / "requirements-dev.txt"
    requirements.write_text("pytest==9.2.0\n# moto==5.2.5 (commented out)\n")
    with pytest.raises(instance_type_records.RecordsMissing, match="pins no moto==<version>"):
        instance_type_records.pinned_version(requirements)
