"""Reserved capacity for a GPU pool: an On-Demand Capacity Reservation (ODCR) or a Capacity Block
for ML, named by its id (`capacityReservationId`), and what EC2 says about it. Pure: the account
is asked through model/checks/preflight.py's Account protocol, which answers with a Reservation.

The fields are those of EC2's CapacityReservation, as DescribeCapacityReservations returns it
(Amazon EC2 API Reference, CapacityReservation:
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html):
InstanceType, AvailabilityZone, State, ReservationType (`default` for an ODCR, `capacity-block`
for a Capacity Block), TotalInstanceCount, AvailableInstanceCount, Tenancy, InstancePlatform,
StartDate, EndDate, PlacementGroupArn (the cluster placement group it was created in, if any) and
OwnerId.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from model.checks.problems import Problem, error

# EC2 resource ids are the type's prefix and 17 hexadecimal digits (the "longer format" every
# resource type has used since 2018: Amazon EC2 User Guide, "Resource IDs",
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html); Capacity
# Reservations, introduced later that year, never had the short form (the EKS user guide's
# example is cr-02168da1478b509e0).
_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")

CAPACITY_BLOCK = "capacity-block"  # ReservationType of a Capacity Block for ML
ON_DEMAND_RESERVATION = "default"  # ReservationType of an On-Demand Capacity Reservation

# EC2's CapacityReservation State values (API reference above), sorted by what they mean for a
# pool's nodes. EC2 launches an instance into a reservation only while it is `active` (EC2 User
# Guide, "Launch instances into an existing Capacity Reservation": matching attributes, sufficient
# available capacity, "Is in the active state";
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html).
USABLE = ("active",)
# - pending (a new ODCR; EC2 may report it so for up to 5 minutes: "View the state of a Capacity
#   Reservation", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-view.html),
#   scheduled (a Capacity Block before its start, a future-dated ODCR), assessing and delayed
#   (future-dated ODCRs), payment-pending (a Capacity Block whose upfront payment is not through):
#   the capacity comes later. The node group launches the pool's nodes at `up`; before the start
#   EC2 refuses them (the EKS user guide: "if the create request is made before the capacity
#   reservation is active, then the ASG won't be able to launch Amazon EC2 instances until it
#   becomes active"), and the node group's creation waits for nodes that cannot come. Refused,
#   with the start date: deploy the pool once it is active.
NOT_YET = ("pending", "scheduled", "assessing", "delayed", "payment-pending")
# - expired, cancelled, failed, payment-failed (the block was released), and the states the EC2
#   SDK lists beside them (cancelling, unavailable, unsupported): the capacity is gone.
# Anything EC2 adds later is read as gone too: the pool is refused rather than launched blind.

# Our nodes are the EKS AL2023 NVIDIA AMI on shared tenancy (components/node_groups.py): an
# instance matches a reservation only with the reservation's platform and tenancy (EC2 User Guide,
# "Capacity Reservation attributes": instance type, platform, Availability Zone, tenancy).
LINUX_PLATFORM = "Linux/UNIX"
SHARED_TENANCY = "default"


@dataclass(frozen=True)
class Reservation:
    reservation_id: str
    instance_type: str
    availability_zone: str
    state: str
    reservation_type: str
    total_instances: int
    available_instances: int
    tenancy: str = SHARED_TENANCY
    instance_platform: str = LINUX_PLATFORM
    start_date: str = ""
    end_date: str = ""
    placement_group_arn: str = ""  # "" when it was created in no placement group
    owner_id: str = ""  # the account that owns it (another one's when it is shared)

    @property
    def placement_group_name(self) -> str:
        """The group's name: an ARN's resource part is `placement-group/<name>` (Amazon EC2 API
        Reference, CapacityReservation.PlacementGroupArn; the Service Authorization Reference's
        EC2 resource types: arn:${Partition}:ec2:${Region}:${Account}:placement-group/${PlacementGroupName})."""
        return self.placement_group_arn.rpartition("placement-group/")[2] if self.placement_group_arn else ""

    @property
    def is_capacity_block(self) -> bool:
        return self.reservation_type == CAPACITY_BLOCK

    @property
    def kind(self) -> str:
        """How the deployer calls it."""
        return "Capacity Block" if self.is_capacity_block else "On-Demand Capacity Reservation"


def reservation_id(key: str, value: Any) -> list[Problem]:
    """'' (no reservation) or a Capacity Reservation id, cr- and 17 hexadecimal digits."""
    if value == "" or (isinstance(value, str) and _RESERVATION_ID.match(value)):
        return []
    return [
        error(
            key,
            value,
            "a Capacity Reservation id (cr- and 17 hexadecimal digits, as "
            "`aws ec2 describe-capacity-reservations` lists it) of an On-Demand Capacity "
            "Reservation or a Capacity Block for ML, or '' for none",
        )
    ]
