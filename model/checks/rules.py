"""Small named rules, one per kind of check. Each takes the key and the value (already read as
its declared type where it could be) and returns the problems it finds; none raises or logs.
Rules that need a parameter (a range, a pattern) are made by a function that takes it."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import struct
from typing import Any

from model.checks.problems import WITHHELD, Problem, Rule, error, warning
from model.facts import catalog


def whole_number(low: int, high: int) -> Rule:
    """A whole number from low to high (true/false is not a number, nor is "2" or 1.5)."""

    def rule(key: str, value: Any) -> list[Problem]:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return [error(key, value, f"a whole number from {low} to {high}")]
        return []

    return rule


def true_or_false(key: str, value: Any) -> list[Problem]:
    return [] if isinstance(value, bool) else [error(key, value, "true or false")]


def matches(pattern: str, allowed: str) -> Rule:
    """A string the whole of which matches pattern; allowed says so in words."""
    compiled = re.compile(pattern)

    def rule(key: str, value: Any) -> list[Problem]:
        return [] if isinstance(value, str) and compiled.fullmatch(value) else [error(key, value, allowed)]

    return rule


def unless_blank(rule: Rule) -> Rule:
    """`rule` for a value that is not blank; a blank one (an optional key left empty) passes."""

    def checked(key: str, value: Any) -> list[Problem]:
        return [] if isinstance(value, str) and not value.strip() else rule(key, value)

    return checked


def list_of_strings(key: str, value: Any) -> list[Problem]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return []
    return [error(key, value, "a list of strings")]


def one_of(allowed: tuple) -> Rule:
    """One of `allowed` (true is not 1)."""

    def rule(key: str, value: Any) -> list[Problem]:
        if isinstance(value, bool) or value not in allowed:
            return [error(key, value, f"one of {', '.join(map(str, allowed))}")]
        return []

    return rule


def each_one_of(allowed: tuple[str, ...]) -> Rule:
    """A list of strings, each one of `allowed` and none twice; the empty list too."""

    def rule(key: str, value: Any) -> list[Problem]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return [error(key, value, f"a list of any of {', '.join(allowed)}")]
        found = [
            error(key, value, f"{v!r} is not one of {', '.join(allowed)}") for v in value if v not in allowed
        ]
        found += [
            error(key, value, f"{v!r} is listed more than once; list each at most once")
            for v in sorted(set(value))
            if value.count(v) > 1
        ]
        return found

    return rule


# The key types OpenSSH writes into a public key line (ssh-keygen -t ...; sshd(8) AUTHORIZED_KEYS
# FILE FORMAT: https://man.openbsd.org/sshd.8#AUTHORIZED_KEYS_FILE_FORMAT).
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_SSH_KEY_LINE = "an OpenSSH public key line such as 'ssh-ed25519 AAAA... comment'"


def ssh_public_key(key: str, value: Any) -> list[Problem]:
    """One OpenSSH public key line whose base64 key material names the same key type as the line
    (RFC 4253 section 6.6: the blob starts with the length-prefixed key type name). A pasted
    private key is refused without echoing it."""
    if "PRIVATE KEY" in value:
        return [error(key, WITHHELD, f"this is a private key (value withheld); expected {_SSH_KEY_LINE}")]
    parts = value.strip().split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        return [error(key, value, f"{_SSH_KEY_LINE}; key types: {', '.join(SSH_KEY_TYPES)}")]
    try:
        blob = base64.b64decode(parts[1], validate=True)
        (n,) = struct.unpack(">I", blob[:4])
        embedded = blob[4 : 4 + n].decode()
    except (binascii.Error, struct.error, UnicodeDecodeError):
        return [error(key, value, f"{_SSH_KEY_LINE}; the key data is not valid base64 key material")]
    if embedded != parts[0]:
        return [
            error(key, value, f"{_SSH_KEY_LINE}; the key data says {embedded!r}, the line says {parts[0]!r}")
        ]
    return []


# The key material of Pulumi.dev.yaml's example sshPublicKey; its private half was discarded, so a
# stack deployed with it has a login node nobody can reach.
EXAMPLE_SSH_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIHo5XTHwRWToEb42mcBir6wbQZm9zUSpHChjh8bS0mXM"


def not_the_example_ssh_key(key: str, value: Any) -> list[Problem]:
    """The dev stack's example key deploys, but nobody holds its private half: say how to set one's own."""
    parts = value.split()
    if len(parts) >= 2 and parts[1] == EXAMPLE_SSH_KEY:
        return [
            warning(
                key,
                value,
                f"{key} is the example key of Pulumi.dev.yaml, whose private half was "
                "discarded: nobody can log in to this cluster. Set your own with "
                f'`pulumi config set {key} "$(cat ~/.ssh/id_ed25519.pub)"`',
            )
        ]
    return []


def cidr_blocks(cidrs: list[str], *, ipv6: str, world: str | None) -> list[str]:
    """What is wrong with each block of an IPv4 allow-list: not a CIDR block (host bits set
    included), IPv6 (`ipv6` says why that cannot work), or 0.0.0.0/0 (`world` says how to allow
    it on purpose; None when it is allowed)."""
    out = []
    for c in cidrs:
        try:
            net = ipaddress.ip_network(c.strip(), strict=True)
        except ValueError as e:
            out.append(f"{c!r} is not a CIDR block ({e})")
            continue
        if net.version == 6:
            out.append(f"{c!r} {ipv6}")
        elif net.prefixlen == 0 and world:
            out.append(f"{c!r} {world}")
    return out


def private_vpc_cidr(key: str, value: Any) -> list[Problem]:
    allowed = "a private IPv4 CIDR block from /16 to /20 (e.g. 10.0.0.0/16)"
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        return [error(key, value, allowed)]
    # Subnets are carved as /(prefix+3), a pool AZ's as /(prefix+4) (model/facts/node_zones.py): a /20
    # VPC still leaves /23 and /24 subnets for pod IPs (VPC CNI).
    if not net.is_private or not 16 <= net.prefixlen <= 20:
        return [error(key, value, allowed)]
    return []


# IAM role ARNs (IAM user guide, "IAM identifiers", ARNs:
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns).
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")


def role_arns(key: str, value: Any) -> list[Problem]:
    """Each entry an IAM role ARN; each wrong one is its own problem."""
    return [
        error(key, arn, "an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
        for arn in value
        if not _ROLE_ARN.match(arn)
    ]


def gpu_instance_type(key: str, value: Any) -> list[Problem]:
    """An EFA-capable NVIDIA GPU type of the catalog; otherwise why not, and which are."""
    if not isinstance(value, str):
        return [error(key, value, "an EFA-capable NVIDIA GPU instance type name")]
    if catalog.lookup(value) is None:
        return [
            error(
                key,
                value,
                f"{catalog.describe_unsupported(value)}; allowed: an EFA-capable "
                f"NVIDIA GPU type: {', '.join(catalog.efa_gpu_types())}",
            )
        ]
    return []


def cpu_instance_type(key: str, value: Any) -> list[Problem]:
    """An instance type name that is not one of the catalog's GPU types."""
    if catalog.is_instance_type_name(value) and catalog.lookup(value) is None:
        return []
    return [
        error(
            key, value, "a CPU instance type name such as m6i.2xlarge (GPU types belong in gpuInstanceType)"
        )
    ]


# An address SNS can mail (SNS API Reference, Subscribe: for the email protocol the Endpoint is
# "an email address"): one @, a dotted domain, no blanks or commas (a pasted list is not one address).
_EMAIL = re.compile(r"^[^@\s,;]+@[^@\s,;]+\.[^@\s,;.]+$")


def email_addresses(key: str, value: Any) -> list[Problem]:
    """Each entry one email address, none twice; each wrong one is its own problem."""
    found = [
        error(key, address, "an email address such as oncall@example.com")
        for address in value
        if not _EMAIL.match(address)
    ]
    found += [
        error(key, address, "each address once") for address in sorted(set(value)) if value.count(address) > 1
    ]
    return found
