"""tools/verify.py and tools/slurm_state.py: parsing real command outputs, and the checks
against a fake Kubernetes API."""
import json

import pytest

from tests.support.rollout_fakes import nodeset, pod, scontrol_line
from tools import slurm_state, verify
from tools.verify import Check, Node, Pod

# The walkthrough's own lines (Step 2 and "Where did my slurm.conf go?").
WALKTHROUGH_SCONTROL = "NodeName=slinky-0  Gres=gpu:nvidia_l4:4(S:0)  CfgTRES=cpu=48,mem=186130M,billing=48"
SINFO_OK = "slinky-0 idle gpu:nvidia_l4:4(S:0)\nslinky-1 idle gpu:nvidia_l4:4(S:0)\n"
NVIDIA_SMI = "".join(f"GPU {i}: NVIDIA L4 (UUID: GPU-{i}b3c51e2-6a7d-4f3e-9c1a-0d2e3f4a5b6c)\n" for i in range(4))
FI_INFO_EFA = ("provider: efa\n    fabric: efa\n    domain: rdmap0s31-rdm\n    version: 122.0\n"
               "    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n")
FI_INFO_NONE = "fi_getinfo: -61 (No data available)\n"
# What Debian's srun 22.05.8 printed on the test cluster; 26.05 prints the same shape.
MPI_LIST = "MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n"
OUTPUTS = {"gpuInstanceType": "g6.12xlarge", "gpuNodeCount": 2,
           "loginHostname": "k8s-slurm-login-0123.elb.us-west-2.amazonaws.com", "kubeconfig": "{}"}


def test_walkthrough_scontrol_line_parses():
    (node,) = slurm_state.parse_scontrol_nodes(WALKTHROUGH_SCONTROL + " State=IDLE+DYNAMIC_NORM")
    assert node.name == "slinky-0" and node.gres_plain == "gpu:nvidia_l4:4" and node.state == "idle+dynamic_norm"


def test_nodes_left_down_after_an_image_change_need_resuming():
    text = ("NodeName=slinky-0 Arch=x86_64 CoresPerSocket=24\n   State=DOWN+DYNAMIC_NORM ThreadsPerCore=2\n"
            "   Gres=gpu:nvidia_l4:4(S:0)\n\nNodeName=slinky-1 Arch=x86_64\n   State=IDLE+DRAIN+DYNAMIC_NORM\n"
            "   Reason=slurm-operator: Pod is terminating\n\nNodeName=slinky-2 Arch=x86_64\n   State=IDLE+DYNAMIC_NORM\n")
    assert slurm_state.nodes_to_resume(slurm_state.parse_scontrol_nodes(text)) == ["slinky-0", "slinky-1"]


@pytest.mark.parametrize("state,resume", [("idle", False), ("mixed", False), ("allocated", False),
                                          ("down*", True), ("drained", True), ("draining", True),
                                          ("idle+drain", True), ("down+dynamic_norm", True), ("unknown*", False)])
def test_nodes_that_need_resuming(state, resume):
    assert slurm_state.SlurmNode("slinky-0", state, "gpu:nvidia_l4:4").needs_resume == resume


def test_sinfo_with_gres_parses():
    nodes = slurm_state.parse_sinfo(SINFO_OK)
    assert [n.gres_plain for n in nodes] == ["gpu:nvidia_l4:4"] * 2


def test_gpu_list_parses():
    assert slurm_state.parse_gpu_list(NVIDIA_SMI) == ["NVIDIA L4"] * 4


def test_efa_provider_detected_and_missing():
    assert slurm_state.efa_provider_listed(FI_INFO_EFA)
    assert not slurm_state.efa_provider_listed(FI_INFO_NONE)


def test_mpi_list_parses():
    assert "pmix" in slurm_state.mpi_types(MPI_LIST)
    assert "pmix" not in slurm_state.mpi_types("MPI plugin types are...\n\tnone\n\tpmi2\n")


class FakeCluster:
    """The Kubernetes calls verify makes, answered from canned outputs; records every exec."""

    def __init__(self, pods=None, answers=None, nodes=None):
        self._nodes = nodes if nodes is not None else [
            Node(f"ip-10-0-{i}-7.us-west-2.compute.internal",
                 {"cpu": "47810m", "nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}) for i in (1, 2)]
        self._pods = pods if pods is not None else [
            Pod("slurm-controller-0", "Running", "core-a"), Pod("slurm-restapi-6d9f", "Running", "core-b"),
            Pod("slurm-login-slinky-7c8d", "Running", "core-a"),
            Pod("slurm-worker-slinky-0", "Running", "gpu-a"), Pod("slurm-worker-slinky-1", "Running", "gpu-b")]
        self.answers = {"sinfo": SINFO_OK, "srun": MPI_LIST, "nvidia-smi": NVIDIA_SMI,
                        "/opt/amazon/efa/bin/fi_info": FI_INFO_EFA,
                        "scontrol": "\n".join(scontrol_line(f"slinky-{i}", "IDLE+DYNAMIC_NORM") for i in (0, 1)),
                        **(answers or {})}
        self.execs = []
        self.commands = []

    def pods(self, namespace):
        assert namespace == "slurm"
        return self._pods

    def nodes(self, label_selector):
        assert label_selector == "role=gpu"
        return self._nodes

    def exec(self, namespace, pod, container, command):
        self.execs.append((pod, container, command[0]))
        self.commands.append(command)
        return 0, "" if command[:2] == ["scontrol", "update"] else self.answers[command[0]]

    def nodeset(self, namespace, name):
        assert (namespace, name) == ("slurm", "slurm-worker-slinky")
        return nodeset()

    def pod_objects(self, namespace, label_selector):
        return [pod(0), pod(1)]


def _ssh_ok(host):
    return Check("login endpoint accepts SSH", True, f"{host}:22 SSH-2.0-OpenSSH_9.6")


def _failed(checks):
    return [c.name for c in checks if not c.ok]


def _named(checks, name):
    (check,) = [c for c in checks if c.name == name]
    return check


def test_healthy_cluster_passes_every_check():
    checks = verify.verify(OUTPUTS, FakeCluster(), connect=_ssh_ok)
    assert _failed(checks) == [] and len(checks) == 13


def test_checks_run_in_the_right_containers():
    cluster = FakeCluster()
    verify.verify(OUTPUTS, cluster, connect=_ssh_ok)
    assert ("slurm-login-slinky-7c8d", "login", "sinfo") in cluster.execs
    assert ("slurm-worker-slinky-1", "slurmd", "nvidia-smi") in cluster.execs


def test_null_gres_fails_and_names_the_trap():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"sinfo": "slinky-0 idle (null)\nslinky-1 idle (null)\n"}),
                           connect=_ssh_ok)
    check = _named(checks, "slurm nodes idle with GRES")
    assert not check.ok and "GresTypes" in check.detail


def test_down_node_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"sinfo": "slinky-0 down* gpu:nvidia_l4:4\nslinky-1 idle gpu:nvidia_l4:4\n"}),
                           connect=_ssh_ok)
    assert _failed(checks) == ["slurm nodes idle with GRES"]
    assert "`verify --fix` resumes those a rollout left stuck" in _named(checks, "slurm nodes idle with GRES").detail


def test_workers_on_one_node_fail():
    pods = FakeCluster()._pods[:3] + [Pod("slurm-worker-slinky-0", "Running", "gpu-a"),
                                      Pod("slurm-worker-slinky-1", "Running", "gpu-a")]
    assert _failed(verify.verify(OUTPUTS, FakeCluster(pods=pods), connect=_ssh_ok)) == ["workers on distinct nodes"]


def test_pending_worker_fails():
    pods = FakeCluster()._pods[:4] + [Pod("slurm-worker-slinky-1", "Pending", None)]
    failed = _failed(verify.verify(OUTPUTS, FakeCluster(pods=pods), connect=_ssh_ok))
    assert "worker pods Running" in failed


def test_wrong_gpu_count_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"nvidia-smi": NVIDIA_SMI.split("GPU 3")[0]}), connect=_ssh_ok)
    assert _failed(checks) == ["slurm-worker-slinky-0 GPUs", "slurm-worker-slinky-1 GPUs"]


def test_missing_efa_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"/opt/amazon/efa/bin/fi_info": FI_INFO_NONE}), connect=_ssh_ok)
    assert _failed(checks) == ["slurm-worker-slinky-0 EFA provider", "slurm-worker-slinky-1 EFA provider"]


def test_missing_pmix_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"srun": "MPI plugin types are...\n\tnone\n"}), connect=_ssh_ok)
    assert _failed(checks) == ["srun offers pmix"]


def test_fix_settles_the_rollout_through_the_controller_first():
    cluster = FakeCluster()
    checks = verify.verify(OUTPUTS, cluster, fix=True, connect=_ssh_ok)
    assert cluster.execs[0] == ("slurm-controller-0", "slurmctld", "scontrol")
    assert _named(checks, "rollout settled (--fix)").ok


def test_fix_resumes_a_node_left_down_by_the_prestop():
    cluster = FakeCluster(answers={"scontrol": scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM") + "\n" + scontrol_line(
        "slinky-1", "DOWN+DYNAMIC_NORM", "slurm-operator: Pod is terminating")})
    verify.fix_rollout(cluster, sleep=lambda s: cluster.answers.update(scontrol=FakeCluster().answers["scontrol"]))
    assert ["scontrol", "update", "nodename=slinky-1", "state=resume"] in cluster.commands


def test_fix_leaves_an_admin_drain_alone_and_names_it():
    cluster = FakeCluster(answers={"scontrol": scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM") + "\n" + scontrol_line(
        "slinky-1", "IDLE+DRAIN+DYNAMIC_NORM", "maintenance")})
    check = verify.fix_rollout(cluster, sleep=lambda s: None)
    assert not check.ok and "slinky-1 IDLE+DRAIN+DYNAMIC_NORM reason 'maintenance'" in check.detail
    assert not [c for c in cluster.commands if c[:2] == ["scontrol", "update"]]


def test_gpu_node_without_efa_devices_fails():
    nodes = [Node("gpu-a", {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}),
             Node("gpu-b", {"nvidia.com/gpu": "4"})]  # the EFA plugin never ran there
    checks = verify.verify(OUTPUTS, FakeCluster(nodes=nodes), connect=_ssh_ok)
    assert _failed(checks) == ["GPU nodes advertise GPUs and EFA"]
    assert "gpu-b: nvidia.com/gpu=4, vpc.amazonaws.com/efa=0" in _named(checks, "GPU nodes advertise GPUs and EFA").detail


def test_missing_gpu_node_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(nodes=FakeCluster()._nodes[:1]), connect=_ssh_ok)
    assert _failed(checks) == ["GPU nodes advertise GPUs and EFA"]


def test_unreachable_login_endpoint_fails():
    check = verify.check_login_port("127.0.0.1", port=1, timeout=1)
    assert not check.ok and "sshAllowedCidrs" in check.detail


def test_cli_json_output_and_exit_status(tmp_path, capsys, monkeypatch):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    cluster = FakeCluster(answers={"sinfo": "slinky-0 idle (null)\nslinky-1 idle (null)\n"})
    monkeypatch.setattr(verify, "check_login_port", _ssh_ok)  # no network in tests
    assert verify.main([str(path), "--json"], api=cluster) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False and any(c["name"] == "slurm nodes idle with GRES" and not c["ok"]
                                             for c in result["checks"])
