"""What the cluster's own commands print, parsed; and the decisions taken from it."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str      # sinfo %T, e.g. idle, down*, drained, idle+drain
    gres: str       # sinfo %G, e.g. gpu:nvidia_l4:4(S:0) or (null)

    @property
    def gres_plain(self) -> str:
        """GRES without the socket suffix: gpu:nvidia_l4:4(S:0) -> gpu:nvidia_l4:4."""
        return re.sub(r"\(S:[^)]*\)", "", self.gres)

    @property
    def needs_resume(self) -> bool:
        """DOWN or DRAIN: how the dynamic nodes come back after an image change
        (DOWN+DYNAMIC_NORM; DRAIN with reason 'Pod is terminating': SlinkyProject/slurm-operator
        issue #249)."""
        s = self.state.lower()
        return "down" in s or "drain" in s


def parse_sinfo(text: str) -> list[SlurmNode]:
    """`sinfo -N -h -o '%N %T %G'`, one line per node (and partition)."""
    nodes: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            nodes.setdefault(parts[0], SlurmNode(parts[0], parts[1], parts[2]))
    return list(nodes.values())


def parse_scontrol_nodes(text: str) -> list[SlurmNode]:
    """`scontrol show node` (multi-line records or -o one-liners)."""
    out = []
    for record in re.split(r"\n\s*\n|\n(?=NodeName=)", text.strip()):
        name = re.search(r"NodeName=(\S+)", record)
        if not name:
            continue
        state = re.search(r"\bState=(\S+)", record)
        gres = re.search(r"\bGres=(\S+)", record)
        out.append(SlurmNode(name.group(1), state.group(1).lower() if state else "unknown",
                             gres.group(1) if gres else "(null)"))
    return out


def nodes_to_resume(nodes: list[SlurmNode]) -> list[str]:
    return sorted(n.name for n in nodes if n.needs_resume)


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
