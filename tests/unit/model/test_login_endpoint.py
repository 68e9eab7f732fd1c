"""The login NLB's annotations: internet-facing or internal, named subnets or discovery."""

from model.builders import login_endpoint


def test_without_subnets_the_controller_discovers_them():
    notes = login_endpoint.annotations((), internal=False)
    assert login_endpoint.SUBNETS not in notes
    assert notes[login_endpoint.SCHEME] == "internet-facing"


def test_named_subnets_are_one_comma_separated_annotation():
    notes = login_endpoint.annotations(("subnet-0000000a", "subnet-0000000b"), internal=False)
    assert notes[login_endpoint.SUBNETS] == "subnet-0000000a,subnet-0000000b"


def test_an_internal_login_has_the_internal_scheme():
    assert (
        login_endpoint.annotations(("subnet-0000000a",), internal=True)[login_endpoint.SCHEME] == "internal"
    )


def test_the_nlb_is_the_controllers_with_ip_targets():
    notes = login_endpoint.annotations((), internal=False)
    assert notes["service.beta.kubernetes.io/aws-load-balancer-type"] == "external"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"
