"""What the AWS account answers before anything is created: its availability zones, the instance
types each zone offers, its on-demand vCPU quotas and who is deploying. One pulumi-aws invoke
each; a refused call comes back as PermissionDenied naming the IAM action it needed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import pulumi_aws as aws

T = TypeVar("T")

# The IAM "access denied" message names the action: "... is not authorized to perform: <action>"
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html); EC2 answers
# UnauthorizedOperation, most other services AccessDenied(Exception).
_DENIED = re.compile(r"AccessDenied|UnauthorizedOperation|not authorized to perform")
_ACTION = re.compile(r"not authorized to perform: ([a-z0-9-]+:[A-Za-z0-9]+)")


@dataclass(frozen=True)
class Zone:
    name: str      # per account: us-west-2a is a different data centre in another account
    zone_id: str   # the same physical zone in every account (usw2-az1)


class PermissionDenied(Exception):
    def __init__(self, action: str):
        super().__init__(action)
        self.action = action


def _ask(action: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - the provider's error is a plain Exception with AWS's text
        if _DENIED.search(str(e)):
            named = _ACTION.search(str(e))
            raise PermissionDenied(named.group(1) if named else action) from e
        raise


class Account:
    """The deploying account, asked through pulumi-aws invokes."""

    def zones(self, region: str) -> list[Zone] | None:
        """The region's standard availability zones, or None for a region the account cannot use.

        Without a filter DescribeAvailabilityZones also returns the Local and Wavelength Zones the
        account opted in to, and their names sort first (us-west-2-lax-1a < us-west-2a); EKS takes
        neither. zone-type is a DescribeAvailabilityZones filter
        (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html).
        """
        try:
            found = _ask("ec2:DescribeAvailabilityZones", lambda: aws.get_availability_zones(
                state="available", region=region,
                filters=[{"name": "zone-type", "values": ["availability-zone"]}]))
        except PermissionDenied:
            raise
        except Exception:  # noqa: BLE001 - the provider refuses an unknown region
            return None
        return [Zone(n, i) for n, i in zip(found.names, found.zone_ids, strict=True)]

    def offered(self, region: str, instance_types: Sequence[str],
                zone_names: Sequence[str]) -> dict[str, set[str]]:
        """For each instance type, the zones (names) among zone_names that offer it."""
        found = _ask("ec2:DescribeInstanceTypeOfferings", lambda: aws.ec2.get_instance_type_offerings(
            location_type="availability-zone", region=region, filters=[
                {"name": "instance-type", "values": sorted(set(instance_types))},
                {"name": "location", "values": sorted(set(zone_names))}]))
        out: dict[str, set[str]] = {t: set() for t in instance_types}
        for t, location in zip(found.instance_types, found.locations, strict=True):
            out.setdefault(t, set()).add(location)
        return out

    def ec2_quota(self, region: str, quota_code: str) -> float:
        """The applied value of an EC2 quota (the AWS default where none was requested)."""
        return _ask("servicequotas:GetServiceQuota", lambda: aws.servicequotas.get_service_quota(
            service_code="ec2", quota_code=quota_code, region=region)).value

    def deployer_role_arn(self) -> str | None:
        """The IAM role behind the caller's session (arn:aws:iam::<acct>:role/<path><name>), or
        None when the caller is not an assumed role (an IAM user)."""
        caller = aws.get_caller_identity().arn
        if ":assumed-role/" not in caller:
            return None
        return _ask("iam:GetRole", lambda: aws.iam.get_session_context(arn=caller)).issuer_arn
