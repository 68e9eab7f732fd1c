"""The NVIDIA and EFA device plugins' values: what components/device_plugins.py's two releases get
over their reviewed bases (charts-values/nvidia-device-plugin.yaml,
charts-values/aws-efa-k8s-device-plugin.yaml). Both run on the GPU nodes only."""

from __future__ import annotations

from model.facts.contract import GPU_LABELS, GPU_TOLERATION


def gpu_placement() -> dict:
    """Run on the GPU nodes only, through their NoSchedule taint. Both charts ship without a
    toleration for it (EFA: aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml
    at chart v0.5.30 tolerates only CriticalAddonsOnly; a plugin that never schedules means 0 EFA
    devices)."""
    return {
        "nodeSelector": dict(GPU_LABELS),
        "tolerations": [dict(GPU_TOLERATION), {"key": "CriticalAddonsOnly", "operator": "Exists"}],
    }


def nvidia_values() -> dict:
    """The NVIDIA plugin's values. The chart's default affinity wants NFD's PCI label or
    nvidia.com/gpu.present, which nodeadm sets only from Kubernetes 1.35 on (NVIDIA/k8s-device-plugin
    v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml; awslabs/amazon-eks-ami
    nodeadm/internal/kubelet/config.go): select by our label."""
    return {
        **gpu_placement(),
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": k, "operator": "In", "values": [v]} for k, v in GPU_LABELS.items()
                            ]
                        }
                    ]
                }
            }
        },
    }


def efa_values() -> dict:
    """The EFA plugin's values: the GPU nodes' placement, nothing else."""
    return gpu_placement()
