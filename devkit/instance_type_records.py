"""EC2's DescribeInstanceTypes records in full, as the moto release requirements-dev.txt pins ships
them: moto/ec2/resources/instance_types.json.gz in its wheel, instance type -> the record EC2
returns, every field included (InstanceStorageInfo, InstanceStorageSupported among them).

../shared/ref/aws/describe-instance-types.json is these records narrowed to the GPU and EFA types and
to the seven fields the offline account answers with (devkit/reference_fetch.py,
InstanceTypesEntry); it has no instance storage, and that directory is read as given (read-only
here, and CI reads it as it is), so the catalog's instance store is held against these records
instead, read from the installed distribution: the virtualenv `make test` builds has it, as every
checkout does.

Found with importlib.util.find_spec, which locates a top-level package without running its
__init__ (importing moto would load its mocks; only its data file is wanted), and checked to be
the pinned release, so the records a test compares with are the ones the pin names.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import json
import pathlib
import re

DISTRIBUTION = "moto"
# The file inside the package, relative to its directory.
RECORDS = pathlib.PurePosixPath("ec2/resources/instance_types.json.gz")
REQUIREMENTS = pathlib.Path(__file__).resolve().parent.parent / "requirements-dev.txt"


class RecordsMissing(RuntimeError):
    """The pinned moto is not installed, or has no records file where its wheel puts it."""


def pinned_version(requirements: pathlib.Path = REQUIREMENTS) -> str:
    """The moto release requirements-dev.txt pins (its `moto==<version>` line)."""
    found = re.search(rf"^{DISTRIBUTION}==(\S+)", requirements.read_text(), re.MULTILINE)
    if not found:
        raise RecordsMissing(f"{requirements.name} pins no {DISTRIBUTION}==<version>")
    return found.group(1)


def records_file() -> pathlib.Path:
    """The records file of the installed moto, which must be the pinned release."""
    pinned = pinned_version()
    spec = importlib.util.find_spec(DISTRIBUTION)
    if spec is None or not spec.submodule_search_locations:
        raise RecordsMissing(
            f"{DISTRIBUTION} {pinned} is not installed (requirements-dev.txt pins it: make environment)"
        )
    installed = importlib.metadata.version(DISTRIBUTION)
    if installed != pinned:
        raise RecordsMissing(
            f"{DISTRIBUTION} {installed} is installed, requirements-dev.txt pins {pinned} (make environment)"
        )
    path = pathlib.Path(spec.submodule_search_locations[0], RECORDS)
    if not path.is_file():
        raise RecordsMissing(f"{DISTRIBUTION} {installed} has no {RECORDS} at {path}")
    return path


def records() -> dict[str, dict]:
    """Instance type -> its DescribeInstanceTypes record, every type EC2 lists and every field."""
    return json.loads(gzip.decompress(records_file().read_bytes()))
