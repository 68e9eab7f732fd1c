"""Facts about EFA-capable NVIDIA GPU instance types: the one place they live.

Sources, cited below by tag:
  K1-K4 the hardware (vCPUs, memory, GPUs, network cards, max EFA interfaces): EC2
     DescribeInstanceTypes as generated into aws/karpenter-provider-aws
     website/content/en/preview/reference/instance-types.md, pkg/providers/instancetype/
     zz_generated.vpclimits.go and pkg/fake/zz_generated.describe_instance_types.go
  S1 GRES type names: SchedMD/slurm src/plugins/gpu/common/gpu_common.c
     (gpu_common_underscorify_tolower) on the model name src/plugins/gpu/nvidia/gpu_nvidia.c reads
  S2 https://slurm.schedmd.com/gres.html#AutoDetect
  A1 aws/aws-ofi-nccl v1.21.1: src/platform-aws.cpp, src/nccl_ofi_interface_nvidia.cpp,
     doc/efa-env-var.md
  A3 aws/aws-ofi-nccl issue #547 (no RDMA on g6e)
  A4 awslabs/awsome-distributed-ai micro-benchmarks/nccl-tests/nccl-tests.Dockerfile
  L1 ofiwg/libfabric man/fi_efa.7.md (FI_EFA_USE_DEVICE_RDMA)
  N4 NVIDIA/nccl issues #631 and #199 (broken PCIe P2P; NCCL_P2P_DISABLE costs only speed)
  N5 https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
  G1-G3 ray-project/ray issue #39471, NVIDIA/TensorRT-LLM issue #1034, llm-d-incubation/llm-d-infra
     PR #181 (no P2P between the GPUs of AWS G instances)
  E3 https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html
  P1 NVIDIA/nccl-tests doc/PERFORMANCE.md (busbw)
Everything instance-specific downstream (GRES string, EFA resource count, NCCL/EFA environment,
launch-template interfaces, the nccl-tests reference line rate) is derived from here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# The AL2023 NVIDIA AMI covers every type below (E3).
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"


# EC2's on-demand quotas count vCPUs per instance family group ("Running On-Demand G and VT
# instances", "Running On-Demand P instances"): EC2 user guide, "Amazon EC2 service quotas",
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html
ON_DEMAND_G_AND_VT = ("L-DB2E81BA", "Running On-Demand G and VT instances")
ON_DEMAND_P = ("L-417A185B", "Running On-Demand P instances")


@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    vcpus: int              # what the on-demand vCPU quota counts
    memory_gib: int
    gpus: int
    gpu_model: str          # what nvidia-smi / /proc/driver/nvidia reports
    gpu_memory_mib: int
    network_gbps: int
    efa_interfaces: int     # EC2 MaximumEfaInterfaces == network cards for every type here
    gpudirect_rdma: bool    # aws-ofi-nccl marks the platform gdr_required (A1, A3)
    nvswitch: bool          # NVLink through NVSwitch; False means PCIe-only between GPUs

    @property
    def gres_type(self) -> str:
        # Slurm lower-cases the model name and turns spaces into '_' (S1); hyphens stay.
        # The full name, not a short form: 'l4' is also a substring of 'nvidia_l40s' (S2).
        return self.gpu_model.lower().replace(" ", "_")

    @property
    def on_demand_quota(self) -> tuple[str, str]:
        """(quota code, quota name) of the on-demand vCPU quota this type counts against."""
        return ON_DEMAND_P if self.name.startswith("p") else ON_DEMAND_G_AND_VT

    @property
    def gres(self) -> str:
        return f"gpu:{self.gres_type}:{self.gpus}"

    @property
    def efa_line_rate_gbytes(self) -> float:
        """Per-node network line rate in GB/s: the busbw ceiling of a NIC-bound ring (P1)."""
        return self.network_gbps / 8

    @property
    def network_interfaces(self) -> list[dict]:
        """Launch-template interfaces, one per network card
        (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
        card 0 is the primary ENA+EFA interface at device index 0; every other card carries an
        EFA-only interface at device index 1 (an efa-only interface can never be primary)."""
        return [
            {"network_card_index": card,
             "device_index": 0 if card == 0 else 1,
             "interface_type": "efa" if card == 0 else "efa-only",
             "delete_on_termination": "true"}
            for card in range(self.efa_interfaces)
        ]

    @property
    def nccl_environment(self) -> dict[str, str]:
        """NCCL/libfabric variables every job sources (A1, L1, N5).

        Left unset on purpose: FI_PROVIDER, FI_EFA_FORK_SAFE, NCCL_PROTO, buffer sizes: the
        aws-ofi-nccl plugin sets them itself (A1)."""
        env = {
            # Bootstrap over the pod interface; never exclude eth in pods (A4, N5).
            "NCCL_SOCKET_IFNAME": "^docker,lo,veth",
            # Pin the OFI plugin: a plugin that fails to load aborts instead of silently
            # falling back to NET/Socket (N5; A1 nccl_ofi_interface_nvidia.cpp).
            "NCCL_NET": "Libfabric",
            "NCCL_DEBUG": "INFO",
            "NCCL_DEBUG_SUBSYS": "INIT,NET",
            # Pre-allocated huge pages make fork() in DataLoader workers fail with ENOMEM (A1 doc).
            "FI_EFA_USE_HUGE_PAGE": "0",
        }
        if self.gpudirect_rdma:
            # Only where the hardware has it: on g5/g6/g6e setting it aborts libfabric (L1).
            env["FI_EFA_USE_DEVICE_RDMA"] = "1"
        if not self.nvswitch and self.gpus > 1:
            # PCIe P2P between GPUs is broken on AWS G instances (ACS; G1-G3, N4): shared memory
            # instead costs only performance. Never on NVSwitch parts: it would bypass NVLink.
            env["NCCL_P2P_DISABLE"] = "1"
        return env


def _g(name, vcpus, mem, gpus, model, gmem, gbps, efa):
    return GpuInstanceType(name, vcpus, mem, gpus, model, gmem, gbps, efa,
                           gpudirect_rdma=False, nvswitch=False)


def _p(name, vcpus, mem, gpus, model, gmem, gbps, efa):
    return GpuInstanceType(name, vcpus, mem, gpus, model, gmem, gbps, efa,
                           gpudirect_rdma=True, nvswitch=True)


# vCPUs, memory, GPUs and network per type: EC2 "Accelerated computing instances" specifications,
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
_TYPES = [
    # G family: PCIe-only GPUs, one EFA except g6e.24/48xlarge; no GPUDirect RDMA (A1, A3).
    _g("g5.8xlarge", 32, 128, 1, "NVIDIA A10G", 22888, 25, 1),
    _g("g5.12xlarge", 48, 192, 4, "NVIDIA A10G", 22888, 40, 1),
    _g("g5.16xlarge", 64, 256, 1, "NVIDIA A10G", 22888, 25, 1),
    _g("g5.24xlarge", 96, 384, 4, "NVIDIA A10G", 22888, 50, 1),
    _g("g5.48xlarge", 192, 768, 8, "NVIDIA A10G", 22888, 100, 1),
    _g("g6.8xlarge", 32, 128, 1, "NVIDIA L4", 22888, 25, 1),
    _g("g6.12xlarge", 48, 192, 4, "NVIDIA L4", 22888, 40, 1),
    _g("g6.16xlarge", 64, 256, 1, "NVIDIA L4", 22888, 25, 1),
    _g("g6.24xlarge", 96, 384, 4, "NVIDIA L4", 22888, 50, 1),
    _g("g6.48xlarge", 192, 768, 8, "NVIDIA L4", 22888, 100, 1),
    _g("gr6.8xlarge", 32, 256, 1, "NVIDIA L4", 22888, 25, 1),
    _g("g6e.8xlarge", 32, 256, 1, "NVIDIA L40S", 45776, 25, 1),
    _g("g6e.12xlarge", 48, 384, 4, "NVIDIA L40S", 45776, 100, 1),
    _g("g6e.16xlarge", 64, 512, 1, "NVIDIA L40S", 45776, 35, 1),
    _g("g6e.24xlarge", 96, 768, 4, "NVIDIA L40S", 45776, 200, 2),
    _g("g6e.48xlarge", 192, 1536, 8, "NVIDIA L40S", 45776, 400, 4),
    # P family: 8 GPUs on NVSwitch, GPUDirect RDMA over EFA.
    _p("p4d.24xlarge", 96, 1152, 8, "NVIDIA A100-SXM4-40GB", 40960, 400, 4),
    _p("p4de.24xlarge", 96, 1152, 8, "NVIDIA A100-SXM4-80GB", 81920, 400, 4),
    _p("p5.48xlarge", 192, 2048, 8, "NVIDIA H100 80GB HBM3", 81920, 3200, 32),
    _p("p5e.48xlarge", 192, 2048, 8, "NVIDIA H200", 144384, 3200, 32),
    _p("p5en.48xlarge", 192, 2048, 8, "NVIDIA H200", 144384, 3200, 16),
    _p("p6-b200.48xlarge", 192, 2048, 8, "NVIDIA B200", 183359, 3200, 8),
]

CATALOG: dict[str, GpuInstanceType] = {t.name: t for t in _TYPES}

# NVIDIA GPU families whose other sizes exist but carry no EFA (K1: e.g. g6.4xlarge,
# gr6.4xlarge), so a wrong size gets a precise message rather than "unknown type".
_GPU_FAMILIES = {"g4dn", "g5", "g6", "g6e", "gr6", "g6f", "gr6f", "p3", "p3dn", "p4d", "p4de",
                 "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200", "g7", "g7e"}
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")


def efa_gpu_types() -> list[str]:
    return sorted(CATALOG)


def lookup(name: str) -> GpuInstanceType | None:
    return CATALOG.get(name)


def describe_unsupported(name: str) -> str:
    """Why a name is not an EFA GPU type: used in config errors."""
    if not _INSTANCE_TYPE.match(name or ""):
        return "not an EC2 instance type name"
    family = name.split(".", 1)[0]
    if family in _GPU_FAMILIES:
        sizes = [t for t in efa_gpu_types() if t.startswith(family + ".")]
        if sizes:
            return f"a GPU size without EFA (EFA sizes of {family}: {', '.join(sizes)})"
        return "a GPU type this project has no verified facts for"
    return "not an NVIDIA GPU instance type"


def is_instance_type_name(name: str) -> bool:
    return bool(_INSTANCE_TYPE.match(name or ""))
