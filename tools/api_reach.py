"""Is this machine's public address inside the blocks where the stack's EKS API endpoint answers?

    python -m tools.api_reach Pulumi.dev.yaml [--address 198.51.100.7]

The CI workflows (.github/workflows/) run it before `pulumi preview|up|destroy`: a runner outside
the blocks would see the EKS change succeed and every later Kubernetes call time out, minutes
later. The blocks are the stack's `apiAllowedCidrs`, or the IPv4 blocks of `sshAllowedCidrs` where
it is unset, as the program reads them (model/checks/config_schema.py `check`, the one home of
that rule), from the stack file. With existingClusterName the program leaves the cluster's endpoint
as its owner set it, so the blocks are that cluster's public access blocks, read with
eks:DescribeCluster (the CI roles may: tools/ci_role.py); an endpoint without public access is not
checked (a note on stdout, exit 0): only a runner inside its VPC reaches it. The address is asked
from checkip.amazonaws.com unless given.

Exit status: 0 inside (one line on stdout); 1 outside; 2 the stack file is missing, unreadable or
not UTF-8, its blocks are not CIDR blocks, the existing cluster cannot be read, or the address
cannot be had. Every error is one line on stderr.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import pathlib
import sys
import urllib.error
import urllib.request
from typing import Callable, Protocol

import boto3
import botocore.exceptions
import yaml

from model.checks import config_schema, existing_cluster

EXIT_INSIDE, EXIT_OUTSIDE, EXIT_BAD_INPUT = 0, 1, 2
PROJECT = "slinky-eks"
# Answers the caller's public IPv4 address and a newline (EC2 user guide, "Authorize inbound traffic
# for your Linux instances": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/authorizing-access-to-an-instance.html).
CHECKIP_URL = "https://checkip.amazonaws.com"
CHECKIP_TIMEOUT = 5
HOW_TO_REACH = "docs/ci.md#reaching-the-api-endpoint"
REGION = "aws:region"


class EksClient(Protocol):
    """boto3's EKS client, as far as this tool asks it."""

    def describe_cluster(self, *, name: str) -> dict: ...


class BadInput(Exception):
    """One line saying what is wrong with the input and what is allowed."""


def raw_config(stack_file: pathlib.Path) -> dict[str, str]:
    """The project's keys of a stack file as the CLI hands them to the program: strings, with
    lists and objects as JSON and booleans as true/false (the region under its own name,
    `aws:region`)."""
    try:
        document = yaml.safe_load(stack_file.read_text())
    except OSError as e:
        raise BadInput(f"cannot read the stack file {stack_file}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BadInput(
            f"the stack file {stack_file} is not UTF-8 text (byte {e.start}: {e.reason}): Pulumi reads UTF-8"
        ) from None
    except yaml.YAMLError as e:
        raise BadInput(f"the stack file {stack_file} is not YAML: {str(e).splitlines()[0]}") from None
    config = (document or {}).get("config") if isinstance(document, dict) else None
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise BadInput(
            f"the stack file {stack_file} has no config mapping (config: is {type(config).__name__})"
        )
    raw = {}
    for key, value in config.items():
        namespace, _, name = str(key).partition(":")
        if str(key) == "aws:region":
            raw[REGION] = str(value)
            continue
        if namespace != PROJECT or not name:
            continue
        if isinstance(value, bool):
            raw[name] = "true" if value else "false"
        elif isinstance(value, (list, dict)):
            raw[name] = json.dumps(value)
        else:
            raw[name] = "" if value is None else str(value)
    return raw


def allowed_blocks(
    stack_file: pathlib.Path, today: datetime.date, eks: Callable[[str], EksClient] | None = None
) -> tuple[str, list[ipaddress.IPv4Network]] | str:
    """The key the blocks come from (as a reader should look for it) and the blocks; or, for an
    endpoint no public address reaches, why it is not checked. With existingClusterName the
    program leaves the endpoint as its owner set it (apiAllowedCidrs does not apply), so its blocks
    are read from that cluster (eks: a client for a region)."""
    raw = raw_config(stack_file)
    stack = stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    values = config_schema.check(raw, stack, today).values
    existing = values.get(existing_cluster.KEY)
    if isinstance(existing, str) and existing:
        return existing_endpoint_blocks(existing, raw.get(REGION, ""), eks or _eks_client)
    given = values["apiAllowedCidrs"]
    key = (
        "apiAllowedCidrs"
        if raw.get("apiAllowedCidrs") not in (None, "", "[]")
        else "sshAllowedCidrs (apiAllowedCidrs is unset)"
    )
    if key == "apiAllowedCidrs" and not isinstance(given, list):
        raise BadInput(f"apiAllowedCidrs in {stack_file} is {given!r}, not a list of CIDR blocks")
    if not isinstance(given, list) or not given:
        # Unset, it is sshAllowedCidrs when that key passes its rules (missing or refused: none).
        raise BadInput(
            f"{stack_file} allows the API endpoint no block (apiAllowedCidrs is unset and sshAllowedCidrs "
            "missing or refused): set slinky-eks:apiAllowedCidrs to the IPv4 blocks `pulumi` runs from"
        )
    blocks = []
    for cidr in given:
        try:
            network = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            raise BadInput(f"{key} in {stack_file} holds {cidr!r}, not a CIDR block") from None
        if isinstance(network, ipaddress.IPv4Network):  # the endpoint takes IPv4 blocks only
            blocks.append(network)
    return key, blocks


def existing_endpoint_blocks(
    cluster: str, region: str, eks: Callable[[str], EksClient]
) -> tuple[str, list[ipaddress.IPv4Network]] | str:
    """The public access of an existing cluster's endpoint as DescribeCluster answers it:
    cluster.resourcesVpcConfig.endpointPublicAccess and publicAccessCidrs (EKS API Reference,
    VpcConfigResponse: https://docs.aws.amazon.com/eks/latest/APIReference/API_VpcConfigResponse.html)."""
    if not region:
        raise BadInput(
            f"{existing_cluster.KEY} {cluster!r} is set but aws:region is not: set the cluster's region"
        )
    try:
        answer = eks(region).describe_cluster(name=cluster)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise BadInput(
            f"cannot read the endpoint of the existing cluster {cluster} in {region} "
            f"(eks:DescribeCluster): {' '.join(str(e).split())}"
        ) from None
    vpc = answer["cluster"]["resourcesVpcConfig"]
    if not vpc.get("endpointPublicAccess"):
        return (
            f"not checked: the endpoint of the existing cluster {cluster} has no public access "
            "(endpointPublicAccess false): only a runner inside its VPC reaches it"
        )
    key = f"the public access blocks of the existing cluster {cluster} ({existing_cluster.KEY})"
    blocks = [ipaddress.ip_network(c, strict=False) for c in vpc.get("publicAccessCidrs") or []]
    return key, [b for b in blocks if isinstance(b, ipaddress.IPv4Network)]


def _eks_client(region: str) -> EksClient:
    return boto3.client("eks", region_name=region)


def public_address() -> ipaddress.IPv4Address:
    try:
        with urllib.request.urlopen(CHECKIP_URL, timeout=CHECKIP_TIMEOUT) as response:
            answer = response.read(64).decode("ascii", "replace").strip()
    except (urllib.error.URLError, OSError) as e:
        raise BadInput(f"{CHECKIP_URL} did not answer ({getattr(e, 'reason', e)}): pass --address") from None
    return parse_address(answer, CHECKIP_URL)


def parse_address(text: str, source: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(text.strip())
    except ValueError:
        raise BadInput(f"{source} gave {text.strip()!r}, not an IPv4 address") from None


def main(
    argv: list[str] | None = None,
    today: datetime.date | None = None,
    eks: Callable[[str], EksClient] | None = None,
) -> int:
    p = argparse.ArgumentParser(
        prog="api_reach", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("stack_file", type=pathlib.Path, help="the stack's Pulumi.<stack>.yaml")
    p.add_argument("--address", help="the address to check instead of this machine's public one")
    args = p.parse_args(argv)
    try:
        blocks_or_note = allowed_blocks(args.stack_file, today or datetime.date.today(), eks)
        if isinstance(blocks_or_note, str):
            print(f"api_reach: {blocks_or_note}")
            return EXIT_INSIDE
        key, blocks = blocks_or_note
        address = parse_address(args.address, "--address") if args.address else public_address()
    except BadInput as e:
        print(f"api_reach: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    shown = " ".join(str(b) for b in blocks)
    if any(address in block for block in blocks):
        print(f"api_reach: {address} is inside {key} ({shown}) of {args.stack_file}")
        return EXIT_INSIDE
    print(
        f"api_reach: this machine's public address {address} is outside {key} ({shown}) of "
        f"{args.stack_file}: the EKS API endpoint would refuse it and every Kubernetes call would time "
        f"out; run on a runner whose egress is inside those blocks ({HOW_TO_REACH})",
        file=sys.stderr,
    )
    return EXIT_OUTSIDE


if __name__ == "__main__":
    sys.exit(main())
