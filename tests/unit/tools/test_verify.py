"""tools/verify.py and tools/command_output.py: parsing real command outputs, and the checks
against a fake Kubernetes API. A Slurm node's state is judged by the readiness Job's model
(cluster_programs/rollout.py SlurmNode), never by a rule of verify's own."""

import json

import pytest

from cluster_programs import rollout
from tests.support.rollout_fakes import nodeset, pod, scontrol_line
from tools import command_output, verify
from tools.verify import Check, Node, Pod

# The walkthrough's own line (Step 2 and "Where did my slurm.conf go?").
WALKTHROUGH_SCONTROL = "NodeName=slinky-0  Gres=gpu:nvidia_l4:4(S:0)  CfgTRES=cpu=48,mem=186130M,billing=48"
SCONTROL_OK = "\n".join(scontrol_line(f"slinky-{i}", "IDLE+DYNAMIC_NORM") for i in (0, 1)) + "\n"
NVIDIA_SMI = "".join(
    f"GPU {i}: NVIDIA L4 (UUID: GPU-{i}b3c51e2-6a7d-4f3e-9c1a-0d2e3f4a5b6c)\n" for i in range(4)
)
FI_INFO_EFA = (
    "provider: efa\n    fabric: efa\n    domain: rdmap0s31-rdm\n    version: 122.0\n"
    "    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n"
)
FI_INFO_NONE = "fi_getinfo: -61 (No data available)\n"
# What Debian's srun 22.05.8 printed on the test cluster; 26.05 prints the same shape.
MPI_LIST = "MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n"
OUTPUTS = {
    "gpuInstanceType": "g6.12xlarge",
    "gpuNodeCount": 2,
    "loginHostname": "k8s-slurm-login-0123.elb.us-west-2.amazonaws.com",
    "kubeconfig": "{}",
}


def test_walkthrough_scontrol_line_parses():
    text = WALKTHROUGH_SCONTROL + " State=IDLE+DYNAMIC_NORM"
    (node,) = rollout.parse_scontrol(text)
    assert (node.name, node.state, node.usable) == ("slinky-0", "IDLE+DYNAMIC_NORM", True)
    assert {n: command_output.without_sockets(g) for n, g in command_output.gres_by_node(text).items()} == {
        "slinky-0": "gpu:nvidia_l4:4"
    }


def test_a_record_without_gres_is_null_gres():
    assert command_output.gres_by_node(
        "NodeName=slinky-0 State=IDLE+DYNAMIC_NORM\n" + scontrol_line("slinky-1", "IDLE", gres="(null)")
    ) == {"slinky-0": "(null)", "slinky-1": "(null)"}


def test_the_socket_suffix_of_a_two_socket_gres_is_dropped():
    assert (
        command_output.without_sockets("gpu:nvidia_h100_80gb_hbm3:8(S:0-1)") == "gpu:nvidia_h100_80gb_hbm3:8"
    )


def slurm_nodes_check(*states: str) -> Check:
    """verify's Slurm node check over slinky-0, slinky-1, ... in these scontrol states."""
    text = "\n".join(scontrol_line(f"slinky-{i}", s) for i, s in enumerate(states))
    (pool,) = verify.pools_of({**OUTPUTS, "gpuNodeCount": len(states)})
    return verify.check_slurm_nodes(text, pool)


# State strings as Slurm 26.05 prints them (base, then the flags in the order of its flag table:
# SchedMD/slurm src/common/slurm_protocol_defs.c node_state_flags[] and node_state_string_complete,
# tag slurm-26-05-3-1). The first group is where tools/command_output.py's rule (sinfo %T exactly
# "idle"; stuck when the state contains "down" or "drain") and rollout.py's disagreed: a node
# running a job, finishing one or planned for one takes jobs; the power-saving flags POWER_DOWN,
# POWERING_DOWN and POWERED_DOWN contain "DOWN" but are not stuck, and no resume is theirs.
DISAGREED = [
    "MIXED+DYNAMIC_NORM",
    "ALLOCATED+DYNAMIC_NORM",
    "IDLE+COMPLETING+DYNAMIC_NORM",
    "ALLOCATED+COMPLETING+DYNAMIC_NORM",
    "IDLE+DYNAMIC_NORM+PLANNED",
    "IDLE+DYNAMIC_NORM+POWERED_DOWN",
    "IDLE+DYNAMIC_NORM+POWERING_DOWN",
    "IDLE+CLOUD+POWER_DOWN",
]
AGREED = [
    "IDLE+DYNAMIC_NORM",
    "IDLE",
    "DOWN+DYNAMIC_NORM",
    "DOWN+DYNAMIC_NORM+NOT_RESPONDING",
    "IDLE+DRAIN+DYNAMIC_NORM",
    "MIXED+DRAIN+DYNAMIC_NORM",
    "IDLE+DYNAMIC_NORM+NOT_RESPONDING",
    "IDLE+DYNAMIC_NORM+MAINTENANCE",
    "IDLE+FAIL",
    "UNKNOWN",
    "FUTURE+DYNAMIC_FUTURE",
]


def verify_judges(state: str) -> tuple[bool, bool]:
    """(takes jobs, named stuck) as verify's check says it of slinky-1 in `state`."""
    check = slurm_nodes_check("IDLE+DYNAMIC_NORM", state)
    return check.ok, "DOWN/DRAIN: slinky-1;" in check.detail


def rollout_judges(state: str) -> tuple[bool, bool]:
    (node,) = rollout.parse_scontrol(scontrol_line("slinky-1", state))
    return node.usable, node.stuck


def substring_rule_judges(state: str) -> tuple[bool, bool]:
    """The rule verify had (tools/command_output.py, deleted): only an idle node passes (sinfo's
    `idle` is IDLE with no flag but DYNAMIC_NORM), and a state containing down or drain is stuck."""
    return state in ("IDLE", "IDLE+DYNAMIC_NORM"), "down" in state.lower() or "drain" in state.lower()


def disagreements(judges) -> list[str]:
    return [s for s in DISAGREED + AGREED if judges(s) != rollout_judges(s)]


def test_verify_judges_every_slurm_node_state_as_the_rollout_does():
    assert disagreements(verify_judges) == []


def test_the_substring_rule_disagreed_with_the_rollout_on_exactly_those_states():
    # The failing case of the test above: a rule of verify's own is caught, state by state.
    assert disagreements(substring_rule_judges) == DISAGREED


@pytest.mark.parametrize(
    "state, judged",
    [
        ("MIXED+DYNAMIC_NORM", (True, False)),
        ("IDLE+COMPLETING+DYNAMIC_NORM", (True, False)),
        ("IDLE+DYNAMIC_NORM+POWERED_DOWN", (False, False)),
        ("IDLE+DRAIN+DYNAMIC_NORM", (False, True)),
        ("DOWN+DYNAMIC_NORM", (False, True)),
    ],
)
def test_states_the_rules_disagreed_on_are_judged_as_slurm_means_them(state, judged):
    # Pinned apart from the rollout, so that the comparison cannot pass with both models wrong.
    assert verify_judges(state) == judged


def test_nodes_left_down_after_an_image_change_are_named_stuck():
    check = slurm_nodes_check("DOWN+DYNAMIC_NORM", "IDLE+DRAIN+DYNAMIC_NORM", "IDLE+DYNAMIC_NORM")
    assert not check.ok and "DOWN/DRAIN: slinky-0,slinky-1;" in check.detail


def test_gpu_list_parses():
    assert command_output.parse_gpu_list(NVIDIA_SMI) == ["NVIDIA L4"] * 4


def test_efa_provider_detected_and_missing():
    assert command_output.efa_provider_listed(FI_INFO_EFA)
    assert not command_output.efa_provider_listed(FI_INFO_NONE)


def test_mpi_list_parses():
    assert "pmix" in command_output.mpi_types(MPI_LIST)
    assert "pmix" not in command_output.mpi_types("MPI plugin types are...\n\tnone\n\tpmi2\n")


class FakeCluster:
    """The Kubernetes calls verify makes, answered from canned outputs; records every exec."""

    def __init__(self, pods=None, answers=None, nodes=None):
        self._nodes = (
            nodes
            if nodes is not None
            else [
                Node(
                    f"ip-10-0-{i}-7.us-west-2.compute.internal",
                    {"cpu": "47810m", "nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"},
                )
                for i in (1, 2)
            ]
        )
        self._pods = (
            pods
            if pods is not None
            else [
                Pod("slurm-controller-0", "Running", "core-a"),
                Pod("slurm-restapi-6d9f", "Running", "core-b"),
                Pod("slurm-login-slinky-7c8d", "Running", "core-a"),
                Pod("slurm-worker-slinky-0", "Running", "gpu-a"),
                Pod("slurm-worker-slinky-1", "Running", "gpu-b"),
            ]
        )
        self.answers = {
            "srun": MPI_LIST,
            "nvidia-smi": NVIDIA_SMI,
            "/opt/amazon/efa/bin/fi_info": FI_INFO_EFA,
            "scontrol": SCONTROL_OK,
            **(answers or {}),
        }
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
    assert _failed(checks) == [] and len(checks) == 14


def test_checks_run_in_the_right_containers():
    cluster = FakeCluster()
    verify.verify(OUTPUTS, cluster, connect=_ssh_ok)
    assert ("slurm-login-slinky-7c8d", "login", "scontrol") in cluster.execs
    assert ("slurm-worker-slinky-1", "slurmd", "nvidia-smi") in cluster.execs


NULL_GRES = "\n".join(scontrol_line(f"slinky-{i}", "IDLE+DYNAMIC_NORM", gres="(null)") for i in (0, 1))


def test_null_gres_fails_and_names_the_trap():
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"scontrol": NULL_GRES}), connect=_ssh_ok)
    check = _named(checks, "slurm nodes take jobs with GRES")
    assert not check.ok and "GresTypes" in check.detail


def test_down_node_fails():
    down = (
        scontrol_line("slinky-0", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")
        + "\n"
        + scontrol_line("slinky-1", "IDLE+DYNAMIC_NORM")
    )
    checks = verify.verify(OUTPUTS, FakeCluster(answers={"scontrol": down}), connect=_ssh_ok)
    assert _failed(checks) == ["slurm nodes take jobs with GRES"]
    assert (
        "`verify --fix` resumes those a rollout left stuck"
        in _named(checks, "slurm nodes take jobs with GRES").detail
    )


def test_workers_on_one_node_fail():
    pods = FakeCluster()._pods[:3] + [
        Pod("slurm-worker-slinky-0", "Running", "gpu-a"),
        Pod("slurm-worker-slinky-1", "Running", "gpu-a"),
    ]
    assert _failed(verify.verify(OUTPUTS, FakeCluster(pods=pods), connect=_ssh_ok)) == [
        "workers on distinct nodes"
    ]


def test_pending_worker_fails():
    pods = FakeCluster()._pods[:4] + [Pod("slurm-worker-slinky-1", "Pending", None)]
    failed = _failed(verify.verify(OUTPUTS, FakeCluster(pods=pods), connect=_ssh_ok))
    assert "worker pods Running" in failed


def test_wrong_gpu_count_fails():
    checks = verify.verify(
        OUTPUTS, FakeCluster(answers={"nvidia-smi": NVIDIA_SMI.split("GPU 3")[0]}), connect=_ssh_ok
    )
    assert _failed(checks) == ["slurm-worker-slinky-0 GPUs", "slurm-worker-slinky-1 GPUs"]


def test_missing_efa_fails():
    checks = verify.verify(
        OUTPUTS, FakeCluster(answers={"/opt/amazon/efa/bin/fi_info": FI_INFO_NONE}), connect=_ssh_ok
    )
    assert _failed(checks) == ["slurm-worker-slinky-0 EFA provider", "slurm-worker-slinky-1 EFA provider"]


def test_missing_pmix_fails():
    checks = verify.verify(
        OUTPUTS, FakeCluster(answers={"srun": "MPI plugin types are...\n\tnone\n"}), connect=_ssh_ok
    )
    assert _failed(checks) == ["srun offers pmix"]


def test_fix_settles_the_rollout_through_the_controller_first():
    cluster = FakeCluster()
    checks = verify.verify(OUTPUTS, cluster, fix=True, connect=_ssh_ok)
    assert cluster.execs[0] == ("slurm-controller-0", "slurmctld", "scontrol")
    assert _named(checks, "rollout settled (--fix)").ok


def test_fix_resumes_a_node_left_down_by_the_prestop():
    cluster = FakeCluster(
        answers={
            "scontrol": scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")
            + "\n"
            + scontrol_line("slinky-1", "DOWN+DYNAMIC_NORM", "slurm-operator: Pod is terminating")
        }
    )
    verify.fix_rollout(
        cluster, sleep=lambda s: cluster.answers.update(scontrol=FakeCluster().answers["scontrol"])
    )
    assert ["scontrol", "update", "nodename=slinky-1", "state=resume"] in cluster.commands


def test_fix_leaves_an_admin_drain_alone_and_names_it():
    cluster = FakeCluster(
        answers={
            "scontrol": scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")
            + "\n"
            + scontrol_line("slinky-1", "IDLE+DRAIN+DYNAMIC_NORM", "maintenance")
        }
    )
    check = verify.fix_rollout(cluster, sleep=lambda s: None)
    assert not check.ok and "slinky-1 IDLE+DRAIN+DYNAMIC_NORM reason 'maintenance'" in check.detail
    assert not [c for c in cluster.commands if c[:2] == ["scontrol", "update"]]


def test_gpu_node_without_efa_devices_fails():
    nodes = [
        Node("gpu-a", {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}),
        Node("gpu-b", {"nvidia.com/gpu": "4"}),
    ]  # the EFA plugin never ran there
    checks = verify.verify(OUTPUTS, FakeCluster(nodes=nodes), connect=_ssh_ok)
    assert _failed(checks) == ["GPU nodes advertise GPUs and EFA"]
    assert (
        "gpu-b: nvidia.com/gpu=4, vpc.amazonaws.com/efa=0"
        in _named(checks, "GPU nodes advertise GPUs and EFA").detail
    )


def test_missing_gpu_node_fails():
    checks = verify.verify(OUTPUTS, FakeCluster(nodes=FakeCluster()._nodes[:1]), connect=_ssh_ok)
    assert _failed(checks) == ["GPU nodes advertise GPUs and EFA"]


def test_unreachable_login_endpoint_fails():
    check = verify.check_login_port("127.0.0.1", port=1, timeout=1)
    assert not check.ok and "sshAllowedCidrs" in check.detail


def test_cli_json_output_and_exit_status(tmp_path, capsys, monkeypatch):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    cluster = FakeCluster(answers={"scontrol": NULL_GRES})
    monkeypatch.setattr(verify, "check_login_port", _ssh_ok)  # no network in tests
    assert verify.main([str(path), "--json"], api=cluster) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False and any(
        c["name"] == "slurm nodes take jobs with GRES" and not c["ok"] for c in result["checks"]
    )


def _health_check(*lines: str) -> Check:
    (pool,) = verify.pools_of({**OUTPUTS, "gpuNodeCount": len(lines)})
    return verify.check_node_health("\n".join(lines), pool)


def test_verify_prints_each_nodes_last_health_result():
    check = _health_check(
        scontrol_line("slinky-0", "IDLE", comment="health 2026-12-03T11:25:30Z: ok"),
        scontrol_line("slinky-1", "IDLE"),
    )
    assert check.ok
    assert check.detail == "slinky-0: health 2026-12-03T11:25:30Z: ok; slinky-1: no health result yet"


def test_a_failing_health_result_fails_verify_and_names_the_health_drain():
    fault = "health 2026-12-03T11:25:30Z: Xid 79 on 0000:30:00"
    check = _health_check(
        scontrol_line("slinky-0", "IDLE", comment="health 2026-12-03T11:25:30Z: ok"),
        scontrol_line("slinky-1", "IDLE+DRAIN", "health: Xid 79 on 0000:30:00", comment=fault),
    )
    assert not check.ok and f"slinky-1: {fault} (drained by the check)" in check.detail


def test_the_slurm_node_check_says_a_health_drain_is_not_resumed_by_verify():
    check = verify.check_slurm_nodes(
        scontrol_line("slinky-0", "IDLE+DYNAMIC_NORM")
        + "\n"
        + scontrol_line("slinky-1", "IDLE+DRAIN+DYNAMIC_NORM", "health: 0 of 4 GPUs in /dev"),
        verify.pools_of(OUTPUTS)[0],
    )
    assert not check.ok and "drained by the node health check: slinky-1" in check.detail
    assert "DOWN/DRAIN: slinky-1" not in check.detail
