"""tools/verify.py on an autoscaling pool: checked at the size the scaler holds it at (at least its
floor, at most maxNodes, the nodes of Running workers only), and its scaler's state and last
decision reported from KEDA's ScaledObject and HPA (tools/scaler_state.py)."""

from tests.support.rollout_fakes import nodeset, scontrol_line
from tools import scaler_state, verify
from tools.verify import Check, Node, Pod

OUTPUTS = {
    "gpuInstanceType": "g6.12xlarge",
    "gpuNodeCount": 2,
    "kubeconfig": "{}",
    "loginHostname": "k8s-slurm-login-0123.elb.us-west-2.amazonaws.com",
    "gpuPools": [
        {"name": "slinky", "instanceType": "g6.12xlarge", "nodeCount": 2, "minNodes": 0, "maxNodes": 4}
    ],
}
SMI = "".join(f"GPU {i}: NVIDIA L4 (UUID: GPU-{i})\n" for i in range(4))
DEVICES = {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}

# As KEDA 2.20 and the HPA controller write them (condition types: the ScaledObject CRD's status,
# Kubernetes autoscaling/v2 HorizontalPodAutoscalerStatus).
READY = {
    "status": {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "ScaledObjectReady",
                "message": "ScaledObject is defined correctly and is ready for scaling",
            },
            {
                "type": "Active",
                "status": "True",
                "reason": "ScalerActive",
                "message": "Scaling is performed because triggers are active",
            },
            {
                "type": "Fallback",
                "status": "False",
                "reason": "NoFallbackFound",
                "message": "No fallbacks are active on this scaled object",
            },
        ]
    }
}
HPA = {
    "status": {
        "currentReplicas": 1,
        "desiredReplicas": 2,
        "lastScaleTime": "2026-12-03T10:41:07Z",
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "reason": "SucceededRescale",
                "message": "the HPA controller was able to update the target scale to 2",
            },
            {
                "type": "ScalingActive",
                "status": "True",
                "reason": "ValidMetricFound",
                "message": "the HPA was able to successfully calculate a replica count from external metric s0-prometheus",
            },
            {
                "type": "ScalingLimited",
                "status": "False",
                "reason": "DesiredWithinRange",
                "message": "the desired count is within the acceptable range",
            },
        ],
    }
}


class Scaled:
    """A cluster whose pool `slinky` runs `running` workers of the `asked` its NodeSet wants."""

    def __init__(self, asked=2, running=2, pending=0, scaled_object=READY, hpa=HPA, extra_node=False):
        self.asked, self.running, self.pending = asked, running, pending
        self._scaled_object, self._hpa = scaled_object, hpa
        self.extra_node = extra_node
        self.read = []

    def pods(self, namespace):
        workers = [Pod(f"slurm-worker-slinky-{i}", "Running", f"gpu-{i}") for i in range(self.running)]
        workers += [
            Pod(f"slurm-worker-slinky-{self.running + i}", "Pending", None) for i in range(self.pending)
        ]
        return [
            Pod("slurm-controller-0", "Running", "core-a"),
            Pod("slurm-restapi-6d9f", "Running", "core-b"),
            Pod("slurm-login-slinky-7c8d", "Running", "core-a"),
            *workers,
        ]

    def nodes(self, label_selector):
        # A node CA has not removed yet (its pod gone) advertises nothing any more.
        extra = [Node("gpu-9", {})] if self.extra_node else []
        return [Node(f"gpu-{i}", dict(DEVICES)) for i in range(self.running)] + extra

    def exec(self, namespace, pod, container, command):
        if command[0] == "scontrol":
            # The record of a node the scaler took away stays, down.
            lines = [scontrol_line(f"slinky-{i}", "IDLE+DYNAMIC_NORM") for i in range(self.running)]
            lines.append(scontrol_line("slinky-7", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", "Not responding"))
            return 0, "\n".join(lines) + "\n"
        return 0, {
            "srun": "MPI plugin types are...\n\tpmix\n",
            "nvidia-smi": SMI,
            "/opt/amazon/efa/bin/fi_info": "provider: efa\n",
        }[command[0]]

    def nodeset(self, namespace, name):
        return nodeset(replicas=self.running, updated=self.running, ready=self.running, desired=self.asked)

    def pod_objects(self, namespace, label_selector):
        return []

    def scaled_object(self, namespace, name):
        self.read.append(("ScaledObject", name))
        return self._scaled_object

    def hpa(self, namespace, name):
        self.read.append(("HPA", name))
        return self._hpa


def _ssh_ok(host):
    return Check("login endpoint accepts SSH", True, f"{host}:22 SSH-2.0-OpenSSH_9.6")


def _run(cluster):
    return verify.verify(OUTPUTS, cluster, connect=_ssh_ok)


def _named(checks, name):
    (check,) = [c for c in checks if c.name == name]
    return check


def test_an_autoscaling_pool_at_the_scalers_size_passes():
    checks = _run(Scaled())
    assert [c.name for c in checks if not c.ok] == []
    assert _named(checks, "worker pods at the scaler's size").detail.startswith(
        "2 Running; the NodeSet asks for 2 (bounds 0-4, floor 0)"
    )


def test_a_pool_meant_to_be_at_zero_passes_with_no_worker():
    checks = _run(Scaled(asked=0, running=0))
    assert [c.name for c in checks if not c.ok] == []


def test_workers_still_coming_beyond_the_floor_do_not_fail_the_pool():
    checks = _run(Scaled(asked=3, running=1, pending=2))
    assert _named(checks, "worker pods at the scaler's size").ok


def test_a_pool_below_its_floor_fails():
    outputs = {**OUTPUTS, "gpuPools": [{**OUTPUTS["gpuPools"][0], "minNodes": 2}]}
    checks = verify.verify(outputs, Scaled(asked=2, running=1, pending=1), connect=_ssh_ok)
    assert not _named(checks, "worker pods at the scaler's size").ok


def test_a_node_the_autoscaler_has_not_removed_yet_is_not_checked():
    assert _named(_run(Scaled(extra_node=True)), "GPU nodes advertise GPUs and EFA").ok


def test_the_slurm_record_of_a_node_scaled_away_is_not_a_failure():
    assert _named(_run(Scaled()), "slurm nodes take jobs with GRES").ok


def test_the_scalers_state_and_last_decision_are_reported():
    cluster = Scaled()
    check = _named(_run(cluster), "scaler")
    assert (
        check.ok
        and ("ScaledObject", "scale-slinky") in cluster.read
        and ("HPA", "keda-hpa-scale-slinky") in cluster.read
    )
    assert "Active=True (ScalerActive Scaling is performed because triggers are active)" in check.detail
    assert "HPA replicas 1 -> 2, last scaled 2026-12-03T10:41:07Z" in check.detail
    assert "AbleToScale=True (SucceededRescale" in check.detail


def test_a_scaled_object_that_is_not_ready_fails_saying_why():
    broken = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "ScaledObjectCheckFailed",
                    "message": "ScaledObject doesn't have correct scaleTargetRef specification",
                }
            ]
        }
    }
    check = _named(_run(Scaled(scaled_object=broken)), "scaler")
    assert not check.ok and "Ready=False (ScaledObjectCheckFailed" in check.detail


def test_a_missing_scaled_object_fails_naming_it():
    ok, detail = scaler_state.assess(None, None, "scale-slinky")
    assert not ok and detail.startswith("no ScaledObject scale-slinky")


def test_an_hpa_unable_to_scale_fails():
    stuck = {
        "status": {
            "currentReplicas": 1,
            "desiredReplicas": 1,
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "False",
                    "reason": "FailedGetScale",
                    "message": "no matches for kind",
                }
            ],
        }
    }
    ok, detail = scaler_state.assess(READY, stuck, "scale-slinky")
    assert not ok and "AbleToScale=False (FailedGetScale no matches for kind)" in detail


def test_a_fixed_pool_has_no_scaler_check():
    fixed = {**OUTPUTS, "gpuPools": [{**OUTPUTS["gpuPools"][0], "minNodes": 2, "maxNodes": 2}]}
    cluster = Scaled()
    checks = verify.verify(fixed, cluster, connect=_ssh_ok)
    assert not [c for c in checks if c.name == "scaler"] and cluster.read == []
