"""Config mistakes a new user makes in the first hour: a misspelled key, an IPv6 address, the dev
stack's example SSH key."""

import datetime

import pytest
import yaml

from devkit.offline_run import PROJECT_DIR, run_program
from model.checks import config_schema, rules
from stack import config as stack_config
from tests.support.program import rejected

OWN_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxJ0hQ4mYH3q2u1cGlB6y1u0sD1n8n3zQ7y0w5f6h7L me@laptop"
EXAMPLE_WARNING = "sshPublicKey is the example key of Pulumi.dev.yaml"


def test_a_misspelled_key_is_refused_with_a_did_you_mean():
    msg = rejected(gpuNodeCont=3)
    assert "slinky-eks:gpuNodeCont = '3': not a key of this project" in msg
    assert "did you mean slinky-eks:gpuNodeCount?" in msg and "`pulumi config rm gpuNodeCont`" in msg


def test_an_unknown_key_without_a_close_match_is_still_refused():
    msg = rejected(colour="blue")
    assert "slinky-eks:colour = 'blue': not a key of this project" in msg and "did you mean" not in msg


def test_keys_of_other_namespaces_are_left_to_their_providers():
    assert run_program("dev", {"aws:profile": "research"}).error is None


def test_every_declared_key_is_accepted():
    declared = config_schema.project_keys(datetime.date.today())
    given = {f"slinky-eks:{k}": "x" for k in declared}
    assert declared and config_schema.undeclared_keys("slinky-eks", given, declared) == []


def test_undeclared_secret_values_are_withheld():
    problems = config_schema.undeclared_keys(
        "slinky-eks", {"slinky-eks:sshPrivateKey": "[secret]"}, ["sshPublicKey"]
    )
    assert [p.render("slinky-eks") for p in problems] == [
        "slinky-eks:sshPrivateKey = '[secret]': not a key of this project (Pulumi.yaml declares the "
        "keys): did you mean slinky-eks:sshPublicKey? Remove it with `pulumi config rm sshPrivateKey`"
    ]


def test_undeclared_keys_come_back_with_the_other_problems():
    msg = rejected(gpuNodeCont=3, gpuNodeCount=0)
    assert msg.startswith("invalid stack configuration (2 problems)")


@pytest.mark.parametrize("cidr", ["2001:db8::1/128", "2001:db8::/32"])
def test_ipv6_ssh_cidrs_are_refused_because_the_nlb_is_ipv4_only(cidr):
    msg = rejected(sshAllowedCidrs=["203.0.113.10/32", cidr])
    assert f"'{cidr}' is an IPv6 block; the login load balancer is IPv4-only" in msg
    assert "give the IPv4 address you connect from" in msg


def test_ipv6_anywhere_is_refused_even_when_anywhere_is_allowed():
    msg = rejected(sshAllowedCidrs=["::/0"], allowSshFromAnywhere=True)
    assert "'::/0' is an IPv6 block" in msg


def test_the_dev_stacks_key_is_the_example_key():
    dev = yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())["config"]
    assert dev["slinky-eks:sshPublicKey"].split()[1] == rules.EXAMPLE_SSH_KEY


def test_the_example_key_warns_at_preview_how_to_set_ones_own():
    graph = run_program("dev", preview=True)
    assert graph.error is None
    (warning,) = [w for w in graph.warnings if EXAMPLE_WARNING in w]
    assert "private half was discarded" in warning
    assert '`pulumi config set sshPublicKey "$(cat ~/.ssh/id_ed25519.pub)"`' in warning


def test_ones_own_key_gives_no_warning():
    graph = run_program("dev", {"sshPublicKey": OWN_KEY}, preview=True)
    assert graph.error is None
    assert not [w for w in graph.warnings if EXAMPLE_WARNING in w]


EXTENDED = "is in EKS extended support"


@pytest.fixture
def on_2026_12_01(monkeypatch):
    """Read EKS's version calendar as on 2026-12-01: extended support 1.32 and 1.33."""
    monkeypatch.setattr(stack_config, "today", lambda: datetime.date(2026, 12, 1))


@pytest.mark.parametrize("version", ["1.32", "1.33"])
def test_an_extended_support_kubernetes_version_deploys_with_a_price_warning(version, on_2026_12_01):
    graph = run_program("dev", {"kubernetesVersion": version})
    (warning,) = [w for w in graph.warnings if EXTENDED in w]
    assert graph.resources and f"kubernetesVersion {version}" in warning and "1.34, 1.35, 1.36" in warning


def test_a_version_leaves_standard_support_on_the_day_the_calendar_says(monkeypatch):
    monkeypatch.setattr(stack_config, "today", lambda: datetime.date(2026, 12, 3))
    graph = run_program("dev", {"kubernetesVersion": "1.34"})
    (warning,) = [w for w in graph.warnings if EXTENDED in w]
    assert "standard support: 1.35, 1.36" in warning


def test_a_standard_support_kubernetes_version_has_no_price_warning(dev):
    assert not [w for w in dev.warnings if EXTENDED in w]


def test_warnings_never_block_a_stack(on_2026_12_01):
    graph = run_program("dev", {"kubernetesVersion": "1.33"})
    assert graph.error is None and graph.resources
    assert len([w for w in graph.warnings if EXTENDED in w or EXAMPLE_WARNING in w]) == 2


INFER_POOL = [{"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1}]


def _overridden(graph) -> list[str]:
    return [w.split(" = ")[0] for w in graph.warnings if "is ignored: gpuPools overrides it" in w]


def test_keys_gpu_pools_override_are_warned_about_and_do_not_block():
    graph = run_program("dev", {"gpuPools": INFER_POOL, "gpuInstanceType": "p5.48xlarge", "gpuNodeCount": 4})
    assert graph.error is None and graph.resources
    assert _overridden(graph) == ["gpuInstanceType", "gpuNodeCount"]


def test_keys_gpu_pools_override_at_their_defaults_give_no_warning():
    # Pulumi.dev.yaml sets both at their Pulumi.yaml defaults, which is also what the CLI hands
    # over for a stack that leaves them unset: nothing to warn about, nothing a user could remove.
    assert _overridden(run_program("dev", {"gpuPools": INFER_POOL})) == []


def test_a_refused_stack_still_shows_its_warnings(on_2026_12_01):
    graph = run_program("dev", {"kubernetesVersion": "1.33", "gpuNodeCount": 0}, expect_error=True)
    assert "gpuNodeCount" in str(graph.error) and graph.resources == []
    assert [w for w in graph.warnings if EXTENDED in w]
