"""This program's release: the version a stack runs, exported as the `projectVersion` output so a
CI job (or a person with `pulumi stack output projectVersion`) can tell which changelog entry and
which upgrade notes apply to it. One home: CHANGELOG.md has an entry under this version, and
docs/upgrading.md a section, each held to it by tests/unit/model/test_release.py.

Versions follow Semantic Versioning (https://semver.org/spec/v2.0.0.html): while the major is 0,
a minor release may need steps by hand on an existing stack, and docs/upgrading.md says which.
A version whose changelog entry says "unreleased" is the one being built on the main branch."""

from __future__ import annotations

VERSION = "0.7.0"
