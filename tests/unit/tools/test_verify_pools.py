"""tools/verify.py on a stack with several GPU pools: each pool's nodes, workers, Slurm nodes and
GPUs are checked against its own instance type, found by its pool label and NodeSet name."""

import pytest

from model.checks.gpu_pools import POOL_LABEL
from tests.support.rollout_fakes import nodeset, pod, revision, scontrol_line
from tools import verify
from tools.verify import Check, Node, Pod

OUTPUTS = {
    "gpuInstanceType": "g6e.12xlarge",
    "gpuNodeCount": 3,
    "kubeconfig": "{}",
    "loginHostname": "k8s-slurm-login-0123.elb.us-west-2.amazonaws.com",
    "gpuPools": [
        {"name": "infer", "instanceType": "g6e.12xlarge", "nodeCount": 1},
        {"name": "train", "instanceType": "p5.48xlarge", "nodeCount": 2},
    ],
}
SMI = {
    "infer": "".join(f"GPU {i}: NVIDIA L40S (UUID: GPU-{i})\n" for i in range(4)),
    "train": "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n" for i in range(8)),
}
FI_INFO = "provider: efa\n    fabric: efa\n"
MPI = "MPI plugin types are...\n\tpmix\n\tnone\n"


# The NodeSets as the operator reports them (rollout_fakes: CRD-valid), one per pool; scontrol
# (in the controller for --fix, in the login pod for the node check) lists both pools' nodes.
NODES = {"infer": 1, "train": 2}
GRES = {"infer": "gpu:nvidia_l40s:4(S:0)", "train": "gpu:nvidia_h100_80gb_hbm3:8(S:0-1)"}
SCONTROL = (
    "\n".join(
        scontrol_line(f"{k}-{i}", "IDLE+DYNAMIC_NORM", gres=GRES[k])
        for k, n in NODES.items()
        for i in range(n)
    )
    + "\n"
)


def _revision(pool):
    return revision(f"slurm-worker-{pool}", "7d9c5b8f6d")


class TwoPools:
    def __init__(self, scontrol=SCONTROL, train_efa="32", train_updated=2):
        self.scontrol = scontrol
        self.updated = {"infer": 1, "train": train_updated}
        self.nodesets_read = []
        self.by_selector = {
            f"role=gpu,{POOL_LABEL}=infer": [
                Node("n-infer-0", {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"})
            ],
            f"role=gpu,{POOL_LABEL}=train": [
                Node(f"n-train-{i}", {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": train_efa})
                for i in (0, 1)
            ],
        }
        self.selectors = []

    def pods(self, namespace):
        return [
            Pod("slurm-controller-0", "Running", "core-a"),
            Pod("slurm-restapi-6d9f", "Running", "core-b"),
            Pod("slurm-login-slinky-7c8d", "Running", "core-a"),
            Pod("slurm-worker-infer-0", "Running", "n-infer-0"),
            Pod("slurm-worker-train-0", "Running", "n-train-0"),
            Pod("slurm-worker-train-1", "Running", "n-train-1"),
        ]

    def nodes(self, label_selector):
        self.selectors.append(label_selector)
        return self.by_selector[label_selector]

    def exec(self, namespace, pod, container, command):
        answers = {"srun": MPI, "/opt/amazon/efa/bin/fi_info": FI_INFO, "scontrol": self.scontrol}
        if command[0] == "nvidia-smi":
            return 0, SMI[pod.split("-")[2]]
        return 0, answers[command[0]]

    def nodeset(self, namespace, name):
        self.nodesets_read.append(name)
        pool = name.removeprefix("slurm-worker-")
        n = NODES[pool]
        return nodeset(
            name=name, replicas=n, updated=self.updated[pool], ready=n, desired=n, revision=_revision(pool)
        )

    def pod_objects(self, namespace, label_selector):
        pool = label_selector.split(",")[0].removeprefix("app.kubernetes.io/instance=slurm-worker-")
        return [pod(i, _revision(pool), key=pool) for i in range(NODES[pool])]


def _ssh_ok(host):
    return Check("login endpoint accepts SSH", True, f"{host}:22 SSH-2.0-OpenSSH_9.6")


def test_a_healthy_two_pool_cluster_passes_every_check_per_pool():
    checks = verify.verify(OUTPUTS, TwoPools(), connect=_ssh_ok)
    assert [c.name for c in checks if not c.ok] == []
    names = {c.name for c in checks}
    for pool in ("infer", "train"):
        assert {
            f"GPU nodes advertise GPUs and EFA ({pool})",
            f"worker pods Running ({pool})",
            f"slurm nodes take jobs with GRES ({pool})",
        } <= names


def test_each_pools_nodes_are_found_by_its_pool_label():
    cluster = TwoPools()
    verify.verify(OUTPUTS, cluster, connect=_ssh_ok)
    assert cluster.selectors == [f"role=gpu,{POOL_LABEL}=infer", f"role=gpu,{POOL_LABEL}=train"]


def test_a_pool_whose_nodes_lack_its_types_efa_interfaces_fails_alone():
    checks = verify.verify(OUTPUTS, TwoPools(train_efa="1"), connect=_ssh_ok)
    assert [c.name for c in checks if not c.ok] == ["GPU nodes advertise GPUs and EFA (train)"]


def test_a_pool_with_a_missing_slurm_node_fails_alone():
    checks = verify.verify(
        OUTPUTS, TwoPools(scontrol=SCONTROL.rsplit("NodeName=train-1", 1)[0]), connect=_ssh_ok
    )
    assert [c.name for c in checks if not c.ok] == ["slurm nodes take jobs with GRES (train)"]


def test_fix_settles_each_pools_nodeset_rollout():
    cluster = TwoPools()
    checks = verify.verify(OUTPUTS, cluster, fix=True, connect=_ssh_ok, sleep=lambda s: None)
    assert cluster.nodesets_read == ["slurm-worker-infer", "slurm-worker-train"]
    fixed = {c.name: c for c in checks if c.name.startswith("rollout settled")}
    assert set(fixed) == {"rollout settled (--fix) (infer)", "rollout settled (--fix) (train)"}
    assert all(c.ok for c in fixed.values())
    assert "1 Slurm nodes take jobs" in fixed["rollout settled (--fix) (infer)"].detail
    assert "2 Slurm nodes take jobs" in fixed["rollout settled (--fix) (train)"].detail


def test_fix_with_a_pool_not_rolled_out_fails_for_that_pool_alone(monkeypatch):
    monkeypatch.setattr(verify, "FIX_TIMEOUT_SECONDS", 0)
    checks = verify.verify(
        OUTPUTS, TwoPools(train_updated=1), fix=True, connect=_ssh_ok, sleep=lambda s: None
    )
    (failed,) = [c for c in checks if not c.ok]
    assert failed.name == "rollout settled (--fix) (train)"
    assert "rollout of NodeSet slurm-worker-train in progress: updated 1/2" in failed.detail


@pytest.mark.parametrize(
    "pools",
    [
        [{"name": "infer", "instanceType": "g6e.4xlarge", "nodeCount": 1}],
        [{"name": "infer", "instanceType": "g6e.12xlarge"}],
        "infer",
    ],
)
def test_a_malformed_gpu_pools_output_is_one_clear_error(tmp_path, pools):
    import json

    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({**OUTPUTS, "gpuPools": pools}))
    with pytest.raises(verify.VerifyError) as e:
        verify.load_outputs(str(path))
    assert "gpuPools output" in str(e.value) and e.value.exit_code == verify.EXIT_BAD_INPUT
