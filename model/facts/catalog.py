"""Facts about EFA-capable NVIDIA GPU instance types: the one place they live.

Sources, cited below by tag:
  K1-K4 the hardware (vCPUs, memory, GPUs, network cards, max EFA interfaces): EC2
     DescribeInstanceTypes as generated into aws/karpenter-provider-aws
     website/content/en/preview/reference/instance-types.md, pkg/providers/instancetype/
     zz_generated.vpclimits.go and pkg/fake/zz_generated.describe_instance_types.go
  D1 the same DescribeInstanceTypes records, as moto 5.2.5 (PyPI) ships them in
     moto/ec2/resources/instance_types.json.gz, read in place by devkit/instance_type_records.py
     (../shared/ref/aws/describe-instance-types.json is them narrowed to the GPU and EFA types and
     seven fields): VCpuInfo.DefaultVCpus, MemoryInfo, GpuInfo.Gpus[0],
     NetworkInfo.EfaInfo.MaximumEfaInterfaces, NetworkInfo.NetworkCards[*].InterfaceTypes,
     InstanceStorageInfo (Disks[0].Count and SizeInGB, NvmeSupport);
     tests/unit/model/test_catalog_records.py holds every field below that the records carry equal
     to them. Karpenter's generated table (K1 at 1d927085dd81, 2026-08-21: the
     karpenter.k8s.aws/instance-local-nvme label, GB of NVMe instance store) gives the same total
     for every type here
  V1 the nvidia-smi product names (what gpu_model holds; NVIDIA GPU feature discovery's
     nvidia.com/gpu.product label is the same name with '-' for ' '):
     NVIDIA H100 80GB HBM3: https://docs.nvidia.com/datacenter/tesla/hgx-software-guide/ (HGX H100);
     NVIDIA RTX PRO 6000 Blackwell Server Edition: NVIDIA's product page
     https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/ and the R580
     TRD1 confidential computing release notes
     https://docs.nvidia.com/confidential-computing/release-notes/r580-trd1.md;
     NVIDIA B300 SXM6 AC: NVIDIA BioNeMo Boltz-2 NIM release notes 1.7.0 ("NVIDIA B300
     (NVIDIA-B300-SXM6-AC)"), https://docs.nvidia.com/nim/bionemo/boltz2/release-notes/2026/5/18.md
  C1 CUDA 13.0 release notes (support for compute capability < 7.5 removed):
     https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
  C3 CUDA C++ Programming Guide, "Features and Technical Specifications" (bfloat16 arithmetic
     from compute capability 8.0): https://docs.nvidia.com/cuda/cuda-c-programming-guide/;
     Hugging Face transformers TrainingArguments(bf16=True) raises on a GPU without it
     (https://huggingface.co/docs/transformers/main_classes/trainer)
  C2 NVIDIA RTX PRO Blackwell product line: https://www.nvidia.com/en-us/products/workstations/
     (an RTX PRO 4500 Blackwell workstation card and an RTX PRO 4500 Blackwell Server Edition)
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

import difflib
import re
from dataclasses import dataclass

# The AL2023 NVIDIA AMI covers every type below (E3).
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"


# EC2's on-demand quotas count vCPUs per instance family group ("Running On-Demand G and VT
# instances", "Running On-Demand P instances"): EC2 user guide, "Amazon EC2 service quotas",
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html
ON_DEMAND_G_AND_VT = ("L-DB2E81BA", "Running On-Demand G and VT instances")
ON_DEMAND_P = ("L-417A185B", "Running On-Demand P instances")


# What DescribeInstanceTypes lists for a network card that takes EFA (D1).
ALL_INTERFACE_TYPES = ("interface", "efa", "efa-only")


@dataclass(frozen=True)
class InstanceStore:
    """A type's instance store as DescribeInstanceTypes lists it (D1 InstanceStorageInfo): `disks`
    disks of `disk_gb` GB each (Disks[0].Count, SizeInGB), reached over NVMe or not (NvmeSupport
    "required" or "supported", against "unsupported")."""

    disks: int
    disk_gb: int
    nvme: bool


def _nvme(disks: int, disk_gb: int) -> InstanceStore:
    return InstanceStore(disks, disk_gb, nvme=True)


@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    vcpus: int  # what the on-demand vCPU quota counts
    memory_gib: int
    gpus: int
    gpu_model: str  # what nvidia-smi / /proc/driver/nvidia reports
    gpu_memory_mib: int
    network_gbps: int
    efa_interfaces: int  # EC2 EfaInfo.MaximumEfaInterfaces (D1)
    gpudirect_rdma: bool  # aws-ofi-nccl marks the platform gdr_required (A1, A3)
    nvswitch: bool  # NVLink through NVSwitch; False means PCIe-only between GPUs
    # The instance store EC2 lists for the type (D1 InstanceStorageInfo), None where it has none:
    # its nodes then keep everything on the root volume (model/builders/node_templates.py).
    instance_store: InstanceStore | None
    # NetworkInfo.NetworkCards[*].InterfaceTypes in card order (D1); () means every one of the
    # efa_interfaces cards takes interface, efa and efa-only, as on every type but p6-b300.
    network_cards: tuple[tuple[str, ...], ...] = ()

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
    def cards(self) -> tuple[tuple[str, ...], ...]:
        """Each network card's interface types, in card order (D1)."""
        return self.network_cards or ((ALL_INTERFACE_TYPES,) * self.efa_interfaces)

    @property
    def network_interfaces(self) -> list[dict]:
        """Launch-template interfaces: the primary on card 0 and one on each other card that takes
        EFA, from the cards' interface types (D1; https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
        card 0 is the primary interface at device index 0, ENA+EFA where the card takes EFA, plain
        ENA where it does not (p6-b300's card 0); every other EFA card carries an EFA-only
        interface at device index 1 (an efa-only interface can never be primary)."""
        out = []
        for card, types in enumerate(self.cards):
            if card == 0:
                kind = "efa" if "efa" in types else "interface"
            elif "efa-only" in types:
                kind = "efa-only"
            else:
                continue  # an ENA-only secondary card carries no EFA device
            out.append(
                {
                    "network_card_index": card,
                    "device_index": 0 if card == 0 else 1,
                    "interface_type": kind,
                    "delete_on_termination": "true",
                }
            )
        return out

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


def _g(name, vcpus, mem, gpus, model, gmem, gbps, efa, store, cards=()):
    return GpuInstanceType(
        name,
        vcpus,
        mem,
        gpus,
        model,
        gmem,
        gbps,
        efa,
        gpudirect_rdma=False,
        nvswitch=False,
        instance_store=store,
        network_cards=cards,
    )


def _p(name, vcpus, mem, gpus, model, gmem, gbps, efa, store, cards=(), nvswitch=True):
    return GpuInstanceType(
        name,
        vcpus,
        mem,
        gpus,
        model,
        gmem,
        gbps,
        efa,
        gpudirect_rdma=True,
        nvswitch=nvswitch,
        instance_store=store,
        network_cards=cards,
    )


# p6-b300.48xlarge: card 0 takes ENA only, cards 1-16 take EFA (D1 NetworkInfo.NetworkCards).
_B300_CARDS = (("interface",),) + (ALL_INTERFACE_TYPES,) * 16


# g7e's GPU (D1 "RTX PRO Server 6000"; name V1).
_RTX_PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Server Edition"

# vCPUs, memory, GPUs and network per type: EC2 "Accelerated computing instances" specifications,
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html. The last positional argument is the
# instance store, _nvme(disks, GB per disk): every type here has NVMe SSDs (D1 InstanceStorageInfo).
_TYPES = [
    # G family: PCIe-only GPUs, one EFA except g6e.24/48xlarge; no GPUDirect RDMA (A1, A3).
    _g("g5.8xlarge", 32, 128, 1, "NVIDIA A10G", 22888, 25, 1, _nvme(1, 900)),
    _g("g5.12xlarge", 48, 192, 4, "NVIDIA A10G", 22888, 40, 1, _nvme(1, 3800)),
    _g("g5.16xlarge", 64, 256, 1, "NVIDIA A10G", 22888, 25, 1, _nvme(1, 1900)),
    _g("g5.24xlarge", 96, 384, 4, "NVIDIA A10G", 22888, 50, 1, _nvme(1, 3800)),
    _g("g5.48xlarge", 192, 768, 8, "NVIDIA A10G", 22888, 100, 1, _nvme(2, 3800)),
    _g("g6.8xlarge", 32, 128, 1, "NVIDIA L4", 22888, 25, 1, _nvme(2, 450)),
    _g("g6.12xlarge", 48, 192, 4, "NVIDIA L4", 22888, 40, 1, _nvme(4, 940)),
    _g("g6.16xlarge", 64, 256, 1, "NVIDIA L4", 22888, 25, 1, _nvme(2, 940)),
    _g("g6.24xlarge", 96, 384, 4, "NVIDIA L4", 22888, 50, 1, _nvme(4, 940)),
    _g("g6.48xlarge", 192, 768, 8, "NVIDIA L4", 22888, 100, 1, _nvme(8, 940)),
    _g("gr6.8xlarge", 32, 256, 1, "NVIDIA L4", 22888, 25, 1, _nvme(2, 450)),
    _g("g6e.8xlarge", 32, 256, 1, "NVIDIA L40S", 45776, 25, 1, _nvme(2, 450)),
    _g("g6e.12xlarge", 48, 384, 4, "NVIDIA L40S", 45776, 100, 1, _nvme(2, 1900)),
    _g("g6e.16xlarge", 64, 512, 1, "NVIDIA L40S", 45776, 35, 1, _nvme(2, 950)),
    _g("g6e.24xlarge", 96, 768, 4, "NVIDIA L40S", 45776, 200, 2, _nvme(2, 1900)),
    _g("g6e.48xlarge", 192, 1536, 8, "NVIDIA L40S", 45776, 400, 4, _nvme(4, 1900)),
    # g7e: RTX PRO 6000 Blackwell Server Edition, PCIe-only between GPUs. GPUDirect RDMA is left
    # off: aws-ofi-nccl src/platform-aws.cpp (A1) has no platform block that matches g7e, so none
    # marks it gdr_required, and FI_EFA_USE_DEVICE_RDMA=1 where the device lacks it aborts
    # libfabric (L1), while leaving it off costs only bandwidth.
    _g("g7e.8xlarge", 32, 256, 1, _RTX_PRO_6000, 98304, 100, 1, _nvme(1, 1900)),
    _g("g7e.12xlarge", 48, 512, 2, _RTX_PRO_6000, 98304, 400, 1, _nvme(1, 3800)),
    _g("g7e.24xlarge", 96, 1024, 4, _RTX_PRO_6000, 98304, 800, 2, _nvme(2, 3800)),
    _g("g7e.48xlarge", 192, 2048, 8, _RTX_PRO_6000, 98304, 1600, 4, _nvme(4, 3800)),
    # P family: 8 GPUs on NVSwitch, GPUDirect RDMA over EFA.
    _p("p4d.24xlarge", 96, 1152, 8, "NVIDIA A100-SXM4-40GB", 40960, 400, 4, _nvme(8, 1000)),
    _p("p4de.24xlarge", 96, 1152, 8, "NVIDIA A100-SXM4-80GB", 81920, 400, 4, _nvme(8, 1000)),
    _p("p5.48xlarge", 192, 2048, 8, "NVIDIA H100 80GB HBM3", 81920, 3200, 32, _nvme(8, 3800)),
    # One H100 SXM of the p5 system (D1; name V1): GPUDirect RDMA over its one EFA (aws-ofi-nccl
    # src/platform-aws.cpp: the "p5/p5e" block, regex ^p5(e?\..*), gdr_required, A1; EC2 P5 page,
    # https://aws.amazon.com/ec2/instance-types/p5/), no peer GPU to reach over NVSwitch.
    _p("p5.4xlarge", 16, 256, 1, "NVIDIA H100 80GB HBM3", 81920, 100, 1, _nvme(1, 3800), nvswitch=False),
    _p("p5e.48xlarge", 192, 2048, 8, "NVIDIA H200", 144384, 3200, 32, _nvme(8, 3800)),
    _p("p5en.48xlarge", 192, 2048, 8, "NVIDIA H200", 144384, 3200, 16, _nvme(8, 3800)),
    _p("p6-b200.48xlarge", 192, 2048, 8, "NVIDIA B200", 183359, 3200, 8, _nvme(8, 3800)),
    # Eight B300 on NVSwitch, GPUDirect RDMA over 16 EFA cards (D1; name V1; aws-ofi-nccl
    # src/platform-aws.cpp: the "p-series" block, p6 and later, gdr_required, A1; EC2 P6 page,
    # https://aws.amazon.com/ec2/instance-types/p6/); card 0 is ENA only (D1).
    _p(
        "p6-b300.48xlarge", 192, 4096, 8, "NVIDIA B300 SXM6 AC", 275040, 6400, 16, _nvme(8, 3800), _B300_CARDS
    ),
]

CATALOG: dict[str, GpuInstanceType] = {t.name: t for t in _TYPES}

# EFA NVIDIA types the records list (D1) that this project refuses, and why: the reason is what a
# config error says after the key.
# g7: EC2 names the GPU "RTX PRO 4500" only (D1), and NVIDIA sells two products of that name
# (C2), so no NVIDIA source pins the string nvidia-smi reports.
_NO_MODEL_NAME = (
    "GPU model name cannot be sourced: NVIDIA sells two RTX PRO 4500 Blackwell "
    "products (a workstation card and a Server Edition) and EC2 names only "
    '"RTX PRO 4500", so the nvidia-smi string the GRES name derives from cannot '
    "be pinned"
)
REFUSED: dict[str, str] = {
    **{f"g7.{size}": _NO_MODEL_NAME for size in ("8xlarge", "12xlarge", "24xlarge", "48xlarge")},
    # V100 is compute capability 7.0; CUDA 13 dropped support below 7.5 (C1).
    "p3dn.24xlarge": (
        "a GPU the image cannot serve: V100 is compute capability 7.0, below the 7.5 that CUDA 13 requires"
    ),
    # T4 is compute capability 7.5; bfloat16 arithmetic needs 8.0 and TrainingArguments(bf16=True)
    # raises without it (C3), which jobs/train.py sets on every GPU.
    **{
        f"g4dn.{size}": (
            "a GPU the jobs cannot train on: T4 is compute capability 7.5, and the "
            "fine-tuning job trains in bfloat16, which needs 8.0"
        )
        for size in ("8xlarge", "12xlarge", "16xlarge", "metal")
    },
}

# NVIDIA GPU families whose other sizes exist but carry no EFA (K1: e.g. g6.4xlarge,
# gr6.4xlarge), so a wrong size gets a precise message rather than "unknown type".
_GPU_FAMILIES = {
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "gr6",
    "g6f",
    "gr6f",
    "p3",
    "p3dn",
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "p6-b300",
    "p6e-gb200",
    "g7",
    "g7e",
}
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")


def efa_gpu_types() -> list[str]:
    return sorted(CATALOG)


def lookup(name: str) -> GpuInstanceType | None:
    return CATALOG.get(name)


# The sizes EC2 names its instance types with, after the family and the dot: nano to xlarge,
# <n>xlarge, metal and metal-<n>xl (aws/aws-cdk packages/aws-cdk-lib/aws-ec2/lib/instance-types.ts,
# enum InstanceSize: https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_ec2.InstanceSize.html).
_SIZE = re.compile(r"nano|micro|small|medium|large|xlarge|\d+xlarge|metal(-\d+xl)?")


def describe_unsupported(name: str) -> str:
    """Why a name is not an EFA GPU type: used in config errors. A name that is no EC2 type (a
    size EC2 does not use, as in p5.48xl) is offered the closest catalog type, as an unknown key
    is offered the closest key."""
    if not _INSTANCE_TYPE.match(name or "") or not _SIZE.fullmatch(name.split(".", 1)[1]):
        close = difflib.get_close_matches(name or "", efa_gpu_types(), n=1, cutoff=0.75)
        return "not an EC2 instance type name" + (f" (did you mean {close[0]}?)" if close else "")
    if name in REFUSED:
        return f"refused: {REFUSED[name]}"
    family = name.split(".", 1)[0]
    if family in _GPU_FAMILIES:
        sizes = [t for t in efa_gpu_types() if t.startswith(family + ".")]
        if sizes:
            return f"a GPU size without EFA (EFA sizes of {family}: {', '.join(sizes)})"
        return "a GPU type this project has no verified facts for"
    return "not an NVIDIA GPU instance type"


def is_instance_type_name(name: str) -> bool:
    return bool(_INSTANCE_TYPE.match(name or ""))
