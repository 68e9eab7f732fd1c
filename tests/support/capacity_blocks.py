"""A Capacity Block for ML as the offline account holds it, for the tests that place a pool on one
(tests/graph/test_capacity_and_cost.py, tests/graph/test_network_topology.py,
tests/slurm/test_topology.py): two p5.48xlarge in us-west-2a, a `capacity-block` reservation with
an end date (Amazon EC2 API Reference, CapacityReservation: ReservationType, EndDate,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html)."""

from devkit.offline_account import DEV, Account, ReservationRecord

# The EKS user guide's example Capacity Block id ("Create a managed node group with Capacity Blocks
# for ML": https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html).
BLOCK = "cr-02168da1478b509e0"
BLOCK_FOR_P5 = ReservationRecord(
    "us-west-2",
    "p5.48xlarge",
    "us-west-2a",
    total_instance_count=2,
    reservation_type="capacity-block",
    end_date="2026-12-10T11:30:00Z",
)


def with_block(account: Account = DEV) -> Account:
    """`account` holding BLOCK as well as its own reservations."""
    return account.but(reservations={**account.reservations, BLOCK: BLOCK_FOR_P5})
