"""devkit/plan.py: the offline plan a pull request is reviewed with."""

import copy
import datetime
import json

import pytest
import yaml

from devkit import offline_account, plan
from devkit.offline_run import run_program
from model.facts import cost
from stack import config as stack_config

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan")
    assert plan.main(["--stack", "dev", "--out", str(out)]) == 0
    return out


def test_graph_lists_every_resource_with_its_dependencies(planned):
    graph = json.loads((planned / "graph.json").read_text())
    by_name = {r["name"]: r for r in graph["resources"]}
    assert "slinky-operator" in by_name["slurm-release"]["dependsOn"]
    assert "cluster-k8s" in by_name["slurm-release"]["dependsOn"]  # the provider edge
    assert by_name["cluster-eks"]["inputs"]["version"] == "1.36"


def test_the_plan_file_shows_the_cost_outputs(planned):
    shown = json.loads((planned / "graph.json").read_text())["outputs"]["costPerHour"]
    assert shown["currency"] == "USD" and [p["name"] for p in shown["gpuPools"]] == ["slinky"]
    assert shown["clusterAtMinNodes"] > shown["core"]["perHour"] > 0


def test_the_plan_says_what_the_nodes_cost_in_one_line(dev):
    assert plan.cost_line(dev).splitlines()[0] == (
        "nodes at on-demand list price: $10.17/h at minNodes, $10.17/h at maxNodes (EC2 instances only)"
    )


def test_prices_the_offline_account_answered_are_labelled_its_own_not_the_price_lists(dev):
    # The program labels an answer to GetProducts the Price List's (a real preview's); offline,
    # the offline account gave it, from the table's figures.
    assert dev.output("costPerHour")["core"]["priceSource"] == cost.PRICE_LIST
    shown = plan.to_json(dev)["outputs"]["costPerHour"]
    assert {p["priceSource"] for p in [*shown["gpuPools"], shown["core"]]} == {offline_account.PRICE_SOURCE}
    said = plan.cost_line(dev).splitlines()[1]
    assert said.startswith("  prices from offline account: devkit/offline_account.py answered")
    assert cost.PRICE_LIST not in said and "Karpenter's us-east-1 table" in said


def test_prices_from_the_table_are_labelled_the_tables():
    graph = run_program("dev", account=offline_account.DEV.but(denied=frozenset({"pricing:GetProducts"})))
    shown = plan.to_json(graph)["outputs"]["costPerHour"]
    assert {p["priceSource"] for p in [*shown["gpuPools"], shown["core"]]} == {cost.TABLE}
    assert plan.cost_line(graph).splitlines()[1] == (
        f"  prices from table: {cost.LIST_PRICE_SOURCE}, us-east-1's list prices, because the Price "
        "List could not answer"
    )


def test_secrets_are_redacted(planned):
    graph = json.loads((planned / "graph.json").read_text())
    by_name = {r["name"]: r for r in graph["resources"]}
    assert by_name["slurm-slurm-key"]["inputs"]["data"] == plan.REDACTED
    # The in-region build's provider, which Pulumi keeps secret (it could hold credentials).
    assert by_name["slurmd-build"]["inputs"]["__provider"] == plan.REDACTED
    assert graph["outputs"]["kubeconfig"] == plan.REDACTED
    assert "token-for-" not in (planned / "graph.json").read_text()


def test_values_of_every_helm_release_are_written(planned):
    files = sorted(p.name for p in (planned / "values").iterdir())
    assert files == [
        "dcgm-release.yaml",
        "devices-efa.yaml",
        "devices-nvidia.yaml",
        "grafana-release.yaml",
        "lbc-release.yaml",
        "slinky-cert-manager.yaml",
        "slinky-crds.yaml",
        "slinky-operator.yaml",
        "slurm-release.yaml",
    ]
    values = yaml.safe_load((planned / "values/slurm-release.yaml").read_text())
    assert values["nodesets"]["slinky"]["extraConfMap"]["Gres"] == ["gpu:nvidia_l4:4"]


def test_picture_and_mermaid_are_written(planned):
    assert (planned / "graph.png").read_bytes().startswith(PNG)
    mermaid = (planned / "graph.mmd").read_text()
    assert mermaid.startswith("flowchart LR") and "cluster-eks" in mermaid and "-->" in mermaid


def test_config_overrides_are_planned(tmp_path):
    assert plan.main(["--out", str(tmp_path), "--set", "gpuInstanceType=p5.48xlarge"]) == 0
    values = yaml.safe_load((tmp_path / "values/slurm-release.yaml").read_text())
    assert values["nodesets"]["slinky"]["extraConfMap"]["Gres"] == ["gpu:nvidia_h100_80gb_hbm3:8"]


def test_invalid_config_fails_with_the_config_error(tmp_path, capsys):
    assert plan.main(["--out", str(tmp_path), "--set", "gpuNodeCount=0"]) == 1
    assert "slinky-eks:gpuNodeCount = '0'" in capsys.readouterr().err


def test_a_refused_stack_still_prints_its_warnings(tmp_path, capsys):
    assert plan.main(["--out", str(tmp_path), "--set", "gpuNodeCount=0"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "warnings the program logged (1):"
    assert out[1].startswith("  - sshPublicKey is the example key of Pulumi.dev.yaml")


def test_image_build_runs_in_the_first_waves_beside_the_network(planned):
    from devkit.offline_run import run_program

    graph = run_program("dev")
    depth = plan.levels(graph)
    level = {r.name: depth[r.urn] for r in graph.resources if r.urn in depth}
    # In the region the build waits for its project, role and sources (seconds each), none of them
    # for the network: it is done before the GPU nodes can pull it.
    assert level["slurmd-build"] < level["nodes-gpu"]
    assert level["cluster-eks"] < level["nodes-gpu"] < level["slurm-release"]


def test_manifests_of_every_release_are_written(planned):
    files = sorted(p.name for p in (planned / "manifests").iterdir())
    assert files == [
        "aws-efa-k8s-device-plugin.yaml",
        "aws-load-balancer-controller.yaml",
        "cert-manager.yaml",
        "dcgm-exporter.yaml",
        "grafana.yaml",
        "nvidia-device-plugin.yaml",
        "slurm-operator-crds.yaml",
        "slurm-operator.yaml",
        "slurm.yaml",
    ]
    text = (planned / "manifests/slurm.yaml").read_text()
    assert text.startswith(
        "# slurm 1.2.2 (release slurm, namespace slurm), rendered with the values in "
        "values/slurm-release.yaml\n"
    )
    nodeset = next(o for o in yaml.safe_load_all(text) if o and o["kind"] == "NodeSet")
    assert nodeset["spec"]["extraConf"] == "Gres=gpu:nvidia_l4:4"


def test_what_a_chart_generates_at_random_reads_as_generated(planned):
    objects = [
        o
        for o in yaml.safe_load_all((planned / "manifests/aws-load-balancer-controller.yaml").read_text())
        if o
    ]
    tls = next(
        o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "aws-load-balancer-tls"
    )
    assert set(tls["data"].values()) == {plan.GENERATED}
    webhooks = [o for o in objects if o["kind"].endswith("WebhookConfiguration")]
    assert webhooks and {w["clientConfig"]["caBundle"] for o in webhooks for w in o["webhooks"]} == {
        plan.GENERATED
    }


def test_only_values_that_differ_between_renders_become_generated():
    first = {"data": {"tls.crt": "a", "ca": "c"}, "items": [1, "x"]}
    second = {"data": {"tls.crt": "b", "ca": "c"}, "items": [1, "y"]}
    assert plan._generated_as_marker(first, second, "") == {
        "data": {"tls.crt": plan.GENERATED, "ca": "c"},
        "items": [1, plan.GENERATED],
    }
    with pytest.raises(plan.chart_render.ChartRenderError, match="differ in shape"):
        plan._generated_as_marker({"a": [1]}, {"a": [1, 2]}, "")


def test_manifests_of_a_release_with_secret_values_are_redacted(dev, tmp_path):
    secret = copy.copy(dev.named("slurm-release"))
    secret.secret_inputs = {"values"}
    graph = copy.copy(dev)
    graph.resources = [secret if r.name == "slurm-release" else r for r in dev.resources]
    plan.write_manifests(graph, tmp_path, plan.stable_manifests(graph))
    text = (tmp_path / "manifests/slurm.yaml").read_text()
    assert plan.REDACTED in text and "NodeSet" not in text


def test_missing_reference_data_fails_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLINKY_EKS_REF", str(tmp_path / "nowhere"))
    assert plan.main(["--out", str(tmp_path / "plan")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot render the manifests" in err and "nowhere" in err


# A stack for each kind of warning the program logs (stack/config.py: every non-error Problem of the
# schema, the support calendar, the account checks and the prices, through pulumi.log.warn).
WARNING_STACKS = {
    "the example SSH key": ({}, "sshPublicKey is the example key of Pulumi.dev.yaml"),
    "keys gpuPools overrides": (
        {
            "gpuPools": [{"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1}],
            "gpuInstanceType": "p5.48xlarge",
        },
        "gpuInstanceType = 'p5.48xlarge' is ignored: gpuPools overrides it",
    ),
    "a Slinky release with a known defect": (
        {"slinkyChartVersion": "1.2.1"},
        "slinkyChartVersion 1.2.1: its Token",
    ),
    "a type no price source prices": (
        {"gpuInstanceType": "p5e.48xlarge", "gpuNodeCount": 1},
        "cost: could not ask the AWS Price List for the p5e.48xlarge",
    ),
    "EKS extended support": (
        {"kubernetesVersion": "1.33"},
        "kubernetesVersion 1.33 is in EKS extended support",
    ),
}


@pytest.mark.parametrize("overrides, said", WARNING_STACKS.values(), ids=list(WARNING_STACKS))
def test_the_plan_prints_every_warning_the_program_logged(overrides, said, monkeypatch):
    # EKS's calendar as on 2026-12-01, when 1.33 is in extended support.
    monkeypatch.setattr(stack_config, "today", lambda: datetime.date(2026, 12, 1))
    graph = run_program("dev", overrides)
    shown = plan.warnings_section(graph).splitlines()
    assert [w for w in graph.warnings if said in w], "the stack does not log the warning it is here for"
    assert shown == [f"warnings the program logged ({len(graph.warnings)}):"] + [
        f"  - {w}" for w in graph.warnings
    ]


def test_a_stack_without_warnings_says_so(dev):
    quiet = copy.copy(dev)
    quiet.warnings = []
    assert plan.warnings_section(quiet) == "warnings the program logged: none"
