"""What verify's commands print on the cluster, parsed: the GRES each Slurm node registered
(`scontrol -o show node`), the GPUs a worker sees (`nvidia-smi -L`), the libfabric providers
(`fi_info -p efa`) and srun's MPI plugin types (`srun --mpi=list`).

A Slurm node's state is not read here: cluster_programs/rollout.py's SlurmNode and parse_scontrol
are the one model of it (its usable and stuck), for the readiness Job and verify alike.
"""

from __future__ import annotations

import re


def gres_by_node(text: str) -> dict[str, str]:
    """`scontrol -o show node`: each node's Gres field as printed, e.g. gpu:nvidia_l4:4(S:0), or
    (null) where the node registered none (or the record has no Gres field)."""
    out = {}
    for line in text.splitlines():
        name = re.search(r"\bNodeName=(\S+)", line)
        if name:
            gres = re.search(r"\bGres=(\S+)", line)
            out[name.group(1)] = gres.group(1) if gres else "(null)"
    return out


def without_sockets(gres: str) -> str:
    """GRES without the socket suffix: gpu:nvidia_l4:4(S:0) -> gpu:nvidia_l4:4."""
    return re.sub(r"\(S:[^)]*\)", "", gres)


def parse_gpu_list(text: str) -> list[str]:
    """`nvidia-smi -L`: the model of each GPU ('GPU 0: NVIDIA L4 (UUID: ...)')."""
    return re.findall(r"^GPU \d+: (.+?) \(UUID", text, re.M)


def efa_provider_listed(text: str) -> bool:
    """`fi_info -p efa`: at least one 'provider: efa' entry (no device gives -61, no entries)."""
    return bool(re.search(r"^\s*provider:\s*efa\s*$", text, re.M))


def mpi_types(text: str) -> list[str]:
    """`srun --mpi=list`: 'MPI plugin types are...' then one type per line (newer: 'srun: ...')."""
    types = []
    for line in text.splitlines():
        line = re.sub(r"^srun:\s*", "", line).strip()
        if line and not line.lower().startswith(("mpi plugin types", "specific pmix")):
            types.append(line)
    return types
