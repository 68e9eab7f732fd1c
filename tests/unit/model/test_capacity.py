"""Reserved capacity for a GPU pool (model/facts/capacity.py): the id's form, and what a reservation
record says of itself."""

from model.facts.capacity import CAPACITY_BLOCK, ON_DEMAND_RESERVATION, Reservation, reservation_id

ID = "cr-0123456789abcdef0"


def _reservation(**fields):
    base = dict(
        reservation_id=ID,
        instance_type="p5.48xlarge",
        availability_zone="us-west-2a",
        state="active",
        reservation_type=ON_DEMAND_RESERVATION,
        total_instances=2,
        available_instances=2,
    )
    return Reservation(**{**base, **fields})


def test_no_reservation_or_a_long_form_id_is_accepted():
    assert reservation_id("capacityReservationId", "") == []
    assert reservation_id("capacityReservationId", ID) == []


def test_a_short_form_or_upper_case_id_is_refused_naming_the_key_and_what_is_allowed():
    for bad in ("cr-0123abcd", "cr-0123456789ABCDEF0", None):
        (problem,) = reservation_id("gpuPools[0].capacityReservationId", bad)
        assert (problem.key, problem.value) == ("gpuPools[0].capacityReservationId", bad)
        assert "cr- and 17 hexadecimal digits" in problem.message


def test_a_capacity_block_and_an_odcr_are_told_apart_by_their_reservation_type():
    assert _reservation(reservation_type=CAPACITY_BLOCK).kind == "Capacity Block"
    assert _reservation().kind == "On-Demand Capacity Reservation"


def test_the_placement_group_name_is_the_resource_part_of_its_arn():
    arn = "arn:aws:ec2:us-west-2:123456789012:placement-group/train-pg"
    assert _reservation(placement_group_arn=arn).placement_group_name == "train-pg"
    assert _reservation().placement_group_name == ""
