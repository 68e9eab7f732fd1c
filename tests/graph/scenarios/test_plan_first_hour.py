"""devkit/plan.py as a new user meets it: --set reads strings as `pulumi config set` does, integers
stay integers, the picture fits a laptop screen, and every file is the same byte for byte."""

import json
import os
import struct
import subprocess
import sys

import pytest
import yaml

from devkit import plan
from devkit.offline_run import PROJECT_DIR, Graph, Resource

STACK = "urn:pulumi:dev::slinky-eks::pulumi:pulumi:Stack::slinky-eks-dev"


def resource(name, type_, custom=True, parent=STACK, provider="", deps=()):
    return Resource(
        urn=f"urn:pulumi:dev::slinky-eks::{type_}::{name}",
        type=type_,
        name=name,
        custom=custom,
        remote=False,
        parent=parent,
        provider=provider,
        dependencies=list(deps),
        property_dependencies={},
    )


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """The dev stack's plan and what plan printed."""
    out = tmp_path_factory.mktemp("plan")
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert plan.main(["--out", str(out)]) == 0
    return out, printed.getvalue()


def test_set_values_stay_strings_as_pulumi_config_set_gives_them(tmp_path, capsys):
    assert plan.main(["--out", str(tmp_path), "--set", "kubernetesVersion=1.30"]) == 1
    assert "slinky-eks:kubernetesVersion = '1.30'" in capsys.readouterr().err  # not 1.3


def test_set_json_gives_lists(tmp_path):
    assert plan.main(["--out", str(tmp_path), "--set-json", 'sshAllowedCidrs=["198.51.100.7/32"]']) == 0
    graph = json.loads((tmp_path / "graph.json").read_text())
    (login,) = [r for r in graph["resources"] if r["name"] == "slurm-login"]
    assert login["inputs"]["spec"]["loadBalancerSourceRanges"] == ["198.51.100.7/32"]


def test_a_list_given_with_set_is_refused_by_the_program_as_a_string(tmp_path, capsys):
    assert plan.main(["--out", str(tmp_path), "--set", "sshAllowedCidrs=198.51.100.7/32"]) == 1
    assert "sshAllowedCidrs = '198.51.100.7/32': a list of strings" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--set-json", "sshAllowedCidrs=[198"], "plan: --set-json sshAllowedCidrs: '[198' is not JSON"),
        (["--set", "gpuNodeCount"], "plan: --set 'gpuNodeCount': expected KEY=VALUE"),
        (["--set-json", "=[]"], "plan: --set-json '=[]': expected KEY=VALUE"),
    ],
)
def test_a_malformed_override_is_one_line_and_exit_status_2(tmp_path, capsys, argv, message):
    assert plan.main(["--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "graph.json").exists()


def test_whole_numbers_are_written_as_integers(planned):
    tmp_path, _ = planned
    slurm = (tmp_path / "values/slurm-release.yaml").read_text()
    assert "replicas: 2\n" in slurm and "replicas: 2.0" not in slurm
    assert yaml.safe_load((tmp_path / "values/lbc-release.yaml").read_text())["replicaCount"] == 2
    assert '"replicaCount": 2,' in (tmp_path / "graph.json").read_text()


def test_fractions_stay_fractions():
    assert plan.integers({"a": [2.0, 0.5, "2.0", True]}) == {"a": [2, 0.5, "2.0", True]}


def _plan_in_a_fresh_process(out, seed):
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    subprocess.run(
        [sys.executable, "-m", "devkit.plan", "--out", str(out)],
        cwd=PROJECT_DIR,
        env=env,
        check=True,
        capture_output=True,
    )
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_every_plan_file_is_identical_over_two_runs(tmp_path):
    first = _plan_in_a_fresh_process(tmp_path / "a", 1)
    second = _plan_in_a_fresh_process(tmp_path / "b", 2)  # another hash seed: set order may not leak
    assert {"graph.json", "graph.mmd", "graph.png"} <= set(first)
    assert [name for name in first if first[name] != second.get(name)] == [] and first.keys() == second.keys()


def test_picture_is_1600_pixels_wide(planned):
    tmp_path, _ = planned
    header = (tmp_path / "graph.png").read_bytes()[:24]
    width, height = struct.unpack(">II", header[16:24])  # the PNG IHDR chunk
    assert width == 1600 and height < 4000


def test_every_box_has_a_distinct_label(dev):
    labels = [
        f"{r.name} {plan.short_type(r.type)}" for r in dev.resources if r.urn in plan.engine_resources(dev)
    ]
    assert len(labels) == len(set(labels))
    assert "network-nat aws ec2.Eip" in labels and "network-nat aws ec2.NatGateway" in labels


@pytest.mark.parametrize(
    "type_,short",
    [
        ("aws:ec2/subnet:Subnet", "aws ec2.Subnet"),
        ("kubernetes:helm.sh/v3:Release", "k8s helm.Release"),
        ("random:index/randomBytes:RandomBytes", "random RandomBytes"),
        ("pulumi:providers:kubernetes", "pulumi kubernetes"),
    ],
)
def test_types_are_shortened_readably(type_, short):
    assert plan.short_type(type_) == short


def test_counts_add_the_stack_and_one_default_provider_per_package():
    k8s = resource("k8s", "pulumi:providers:kubernetes")
    group = resource("net", "slinky-eks:network:Network", custom=False)
    resources = [
        group,
        k8s,
        resource("vpc", "aws:ec2/vpc:Vpc", parent=group.urn),
        resource("subnet", "aws:ec2/subnet:Subnet", parent=group.urn),
        resource("ns", "kubernetes:core/v1:Namespace", provider=f"{k8s.urn}::k8s-id"),
    ]
    counts = plan.counts(Graph(resources=resources, stack_outputs={}, component_outputs={}, calls=[]))
    # aws has no explicit provider (one default); kubernetes has one: the stack + 5 + 1.
    assert counts == {"registered": 5, "custom": 4, "components": 1, "defaultProviders": 1, "preview": 7}


def test_the_printed_count_is_what_the_picture_counts(planned, dev):
    tmp_path, printed = planned
    n = plan.counts(dev)
    after_warnings = printed.split(plan.warnings_section(dev) + "\n", 1)[1]
    assert after_warnings.startswith(
        f"{len(dev.resources)} resources ({n['custom']} custom, "
        f"{n['components']} components; `pulumi preview` counts {n['preview']}"
    )
    assert json.loads((tmp_path / "graph.json").read_text())["counts"] == n


def test_the_picture_leaves_out_only_implied_dependencies():
    a = resource("a", "aws:ec2/vpc:Vpc")
    b = resource("b", "aws:ec2/subnet:Subnet", deps=[a.urn])
    c = resource("c", "aws:ec2/routeTable:RouteTable", deps=[a.urn, b.urn])
    graph = Graph(resources=[a, b, c], stack_outputs={}, component_outputs={}, calls=[])
    assert plan.reduced_edges(graph) == {a.urn: set(), b.urn: {a.urn}, c.urn: {b.urn}}


def test_the_warnings_come_first_under_their_own_heading(planned, dev):
    # What a reviewer must see before what the plan wrote: the dev stack's example SSH key.
    _, printed = planned
    lines = printed.splitlines()
    assert lines[0] == f"warnings the program logged ({len(dev.warnings)}):"
    assert lines[1].startswith("  - sshPublicKey is the example key of Pulumi.dev.yaml")
    assert " resources (" in lines[1 + len(dev.warnings)]


def test_the_plan_file_lists_the_warnings(planned, dev):
    tmp_path, _ = planned
    assert json.loads((tmp_path / "graph.json").read_text())["warnings"] == dev.warnings
