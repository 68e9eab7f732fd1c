"""tools/plan.py: the offline plan a pull request is reviewed with."""
import json

import pytest
import yaml

from tools import plan

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


def test_secrets_are_redacted(planned):
    graph = json.loads((planned / "graph.json").read_text())
    by_name = {r["name"]: r for r in graph["resources"]}
    assert by_name["slurm-slurm-key"]["inputs"]["data"] == plan.REDACTED
    assert by_name["slurmd-build"]["inputs"]["registries"] == plan.REDACTED
    assert graph["outputs"]["kubeconfig"] == plan.REDACTED
    assert "token-for-" not in (planned / "graph.json").read_text()


def test_values_of_every_helm_release_are_written(planned):
    files = sorted(p.name for p in (planned / "values").iterdir())
    assert files == ["devices-efa.yaml", "devices-nvidia.yaml", "lbc-release.yaml", "slinky-cert-manager.yaml",
                     "slinky-crds.yaml", "slinky-operator.yaml", "slurm-release.yaml"]
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


def test_image_build_runs_in_the_first_waves_beside_the_network(planned):
    from harness import run_program
    graph = run_program("dev")
    depth = plan.levels(graph)
    level = {r.name: depth[r.urn] for r in graph.resources if r.urn in depth}
    assert level["slurmd-build"] < level["cluster-eks"] < level["nodes-gpu"] < level["slurm-release"]
