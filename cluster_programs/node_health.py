#!/usr/local/bin/python3 -I
"""The node health check slurmd runs on every GPU worker (slurm.conf HealthCheckProgram): it
looks at the node, drains it with the reason `health: <what failed>` when something is wrong,
undrains it when the check itself drained it and nothing is wrong any more, and leaves the last
result in the node's Comment (`scontrol show node` prints it). A drain with any other reason (an
administrator's, the operator's) is never touched. docs/health.md says what is checked and why.

How slurmd runs it (SchedMD/slurm at slurm-26-05-3-1): as root, with no arguments and an
environment holding only SLURMD_NODENAME (and SLURM_NODE_IS_HEALTHY where slurmctld sends its
view) -- src/slurmd/slurmd/slurmd.c run_script_health_check builds it from env_array_create(), so
there is no PATH -- killed after HealthCheckTimeout (60 s by default, doc/man/man5/slurm.conf.5).
slurmctld asks for it every HealthCheckInterval (src/slurmctld/ping_nodes.c run_health_check),
and slurmd runs it once more at start, before it registers.

The interpreter is the slurmd image's python3 (image/Dockerfile: the wrapper /usr/local/bin/python3);
standard library only. The pool's expectations (GPU count and model, EFA interfaces, the shared
mount) are the JSON file beside this program: each NodeSet mounts its own pool's
(model/node_health.py). Everything that reads the machine is in `probe`; the judgement is pure.

By hand, in a worker pod:  /etc/slinky-eks/health/node-health --dry-run
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

# What the check's own drains carry; the rollout wait (rollout.py HEALTH_PREFIX) and verify read it.
REASON_PREFIX = "health: "
# slurmd's environment has no PATH; nvidia-smi is /usr/bin/nvidia-smi where the NVIDIA container
# toolkit injects it and /usr/local/nvidia/bin on some hosts (tests/data/h200-health/README.md).
PATH = "/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Each probe gets a share of slurmd's 60 s: a hung nvidia-smi or NFS mount is a fault, reported
# before slurmd kills the check (a killed check drains nothing).
COMMAND_TIMEOUT = 20.0
SHARED_TIMEOUT = 10.0
# Xids that mean the GPU or its memory needs a reset, a reboot or a replacement, not that one
# application misbehaved (NVIDIA's Xid catalog,
# https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): 48 double-bit ECC error,
# 63/64 row remapping pending / failed, 74 NVLink error, 79 fallen off the bus, 92 high single-bit
# ECC rate, 94/95 contained / uncontained ECC error, 119/120 GSP timeout / error, 140 unrecovered
# ECC error. Application faults (13, 31, 43, 45 ...) drain nothing.
HARDWARE_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})
# The driver's kernel log line: "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, ..." (older drivers
# print the bus id without "PCI:").
XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+)")


@dataclass(frozen=True)
class Expected:
    """One pool's node, from the catalog (model/node_health.py writes it)."""
    pool: str
    gpus: int
    gpu_model: str
    efa_interfaces: int
    shared: str

    @classmethod
    def from_json(cls, text: str) -> "Expected":
        d = json.loads(text)
        return cls(d["pool"], int(d["gpus"]), d["gpu_model"], int(d["efa_interfaces"]), d["shared"])


@dataclass(frozen=True)
class Observed:
    """What the probe saw; None where the source could not be read."""
    dev_gpus: Sequence[str]                   # /dev/nvidiaN names
    proc_models: Sequence[str]                # "Model:" of each /proc/driver/nvidia/gpus/*/information
    smi: str | None                           # `nvidia-smi -q -d ECC,ROW_REMAPPER`, None if it failed
    smi_error: str = ""
    kernel_log: str | None = None             # dmesg; None when not readable
    efa_devices: Sequence[str] | None = None  # /sys/class/infiniband entries; None when absent
    shared_error: str | None = None           # why /shared is not a writable mount; None when it is


# -- nvidia-smi -q ---------------------------------------------------------------------------

@dataclass
class Section:
    name: str
    values: dict[str, str] = field(default_factory=dict)
    children: list["Section"] = field(default_factory=list)

    def child(self, name: str) -> "Section | None":
        return next((c for c in self.children if c.name == name), None)


def parse_query(text: str) -> list[Section]:
    """`nvidia-smi -q` as one Section per GPU ("GPU 00000000:00:06.0"), nested by indentation:
    a line without " : " opens a section, "Key : Value" sets a value of the innermost open one
    (the layout of tests/data/h200-health/nvidia-smi-q*.txt, driver 580)."""
    gpus: list[Section] = []
    stack: list[tuple[int, Section]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        key, sep, value = line.partition(" : ")
        if not sep and line.endswith(":"):   # "Key :" with an empty value
            key, sep, value = line[:-1], " : ", ""
        if indent == 0:
            stack = []
            if not sep and line.startswith("GPU "):
                gpu = Section(line[4:].strip())
                gpus.append(gpu)
                stack = [(0, gpu)]
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            continue
        parent = stack[-1][1]
        if sep:
            parent.values[key.strip()] = value.strip()
        else:
            section = Section(line)
            parent.children.append(section)
            stack.append((indent, section))
    return gpus


def _count(value: str) -> int:
    """An error counter; "N/A" (ECC off, or not reported by this GPU) counts as none."""
    return int(value) if value.isdigit() else 0


def memory_faults(gpus: Sequence[Section]) -> list[str]:
    """Uncorrectable ECC errors since the driver loaded (the Volatile counters: Aggregate ones
    persist across resets, so a repaired GPU would stay drained), a pending row remapping (a GPU
    reset activates it) and a failed one. Hopper and later count by class (SRAM/DRAM
    Uncorrectable ...); older GPUs under "Double Bit"."""
    faults = []
    for gpu in gpus:
        errors = []
        volatile = (gpu.child("ECC Errors") or Section("")).child("Volatile")
        if volatile is not None:
            for key, value in volatile.values.items():
                if "Uncorrectable" in key and _count(value):
                    errors.append(f"{value} {key}")
            double = volatile.child("Double Bit")
            if double is not None and _count(double.values.get("Total", "")):
                errors.append(f"{double.values['Total']} double-bit ECC")
        remapped = gpu.child("Remapped Rows")
        if remapped is not None:
            if remapped.values.get("Pending") == "Yes":
                errors.append("row remapping pending")
            if remapped.values.get("Remapping Failure Occurred") == "Yes":
                errors.append("row remapping failed")
        if errors:
            faults.append(f"GPU {gpu.name} " + ", ".join(errors))
    return faults


# -- the judgement ---------------------------------------------------------------------------

def gpu_faults(expected: Expected, seen: Observed) -> list[str]:
    """The GPUs this pod sees, counted three ways: nvidia-smi keeps listing a GPU whose device
    file or procfs entry is gone (tests/data/h200-health/hidden-gpu-nvidia-smi.txt), and Slurm's
    gpu/nvidia plugin schedules by the procfs entries."""
    faults = []
    want = expected.gpus
    if len(seen.dev_gpus) != want:
        faults.append(f"{len(seen.dev_gpus)} of {want} GPUs in /dev")
    if len(seen.proc_models) != want:
        faults.append(f"{len(seen.proc_models)} of {want} GPUs in /proc/driver/nvidia")
    wrong = sorted({m for m in seen.proc_models if m != expected.gpu_model})
    if wrong:
        faults.append(f"GPU model {', '.join(wrong)}, want {expected.gpu_model}")
    if seen.smi is None:
        faults.append(f"nvidia-smi failed: {seen.smi_error}" if seen.smi_error else "nvidia-smi failed")
        return faults
    gpus = parse_query(seen.smi)
    if len(gpus) != want:
        faults.append(f"{len(gpus)} of {want} GPUs in nvidia-smi")
    return faults + memory_faults(gpus)


def xid_faults(kernel_log: str | None) -> list[str]:
    if kernel_log is None:
        return []
    seen: dict[int, set[str]] = {}
    for bus, code in XID_LINE.findall(kernel_log):
        if int(code) in HARDWARE_XIDS:
            seen.setdefault(int(code), set()).add(bus)
    return [f"Xid {code} on {', '.join(sorted(buses))}" for code, buses in sorted(seen.items())]


def efa_faults(expected: Expected, devices: Sequence[str] | None) -> list[str]:
    if expected.efa_interfaces == 0:
        return []
    found = len(devices or ())
    return [] if found == expected.efa_interfaces else [f"{found} of {expected.efa_interfaces} EFA devices"]


def shared_faults(expected: Expected, error: str | None) -> list[str]:
    return [f"{expected.shared} {error}"] if error else []


def faults_of(expected: Expected, seen: Observed) -> list[str]:
    return (gpu_faults(expected, seen) + xid_faults(seen.kernel_log) + efa_faults(expected, seen.efa_devices)
            + shared_faults(expected, seen.shared_error))


# -- what to tell Slurm ----------------------------------------------------------------------

@dataclass(frozen=True)
class NodeState:
    flags: frozenset[str]   # base state and flags of scontrol's State=IDLE+DRAIN+...
    reason: str

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def ours(self) -> bool:
        return self.drained and self.reason.startswith(REASON_PREFIX)


def parse_node(text: str) -> NodeState | None:
    """`scontrol -o show node NAME`; None when Slurm does not know the node (a dynamic node
    before its first registration)."""
    state = re.search(r"\bState=(\S+)", text)
    if not state:
        return None
    reason = re.search(r"\bReason=(.*?)(?:\s+\[[^\]]*\])?(?=\s+[A-Za-z]+=|\s*$)", text)
    return NodeState(frozenset(state.group(1).upper().split("+")), reason.group(1).strip() if reason else "")


def _one_field(faults: Sequence[str]) -> str:
    """The faults as one `scontrol -o show node` field: readers split that line at "Key=", so a
    fault quoting a tool's "a=b" must not add one."""
    return "; ".join(faults).replace("=", ":")


def reason_of(faults: Sequence[str]) -> str:
    return REASON_PREFIX + _one_field(faults)


def comment_of(faults: Sequence[str], when: str) -> str:
    return f"health {when}: " + (_one_field(faults) if faults else "ok")


def update_of(node: str, faults: Sequence[str], state: NodeState | None, when: str) -> list[str]:
    """The one `scontrol update` this run makes: the result in the Comment always; a drain when
    something failed and nobody has drained the node (or a new reason for the check's own drain);
    an undrain when the check's own drain is no longer warranted. [] when the node is unknown."""
    if state is None:
        return []
    argv = ["scontrol", "update", f"nodename={node}", f"comment={comment_of(faults, when)}"]
    if faults and (not state.drained or (state.ours and state.reason != reason_of(faults))):
        argv += ["state=drain", f"reason={reason_of(faults)}"]
    elif not faults and state.ours:
        argv += ["state=undrain"]
    return argv


# -- the machine -----------------------------------------------------------------------------

def _run(argv: list[str], timeout: float = COMMAND_TIMEOUT) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env={"PATH": PATH, "LC_ALL": "C"})
        return done.returncode, done.stdout + (done.stderr if done.returncode else "")
    except FileNotFoundError:
        return 127, f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not answer in {timeout:.0f} s"


def _listdir(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def _proc_models(root: str) -> list[str]:
    models = []
    for bus in _listdir(f"{root}/proc/driver/nvidia/gpus") or []:
        try:
            with open(f"{root}/proc/driver/nvidia/gpus/{bus}/information") as f:
                text = f.read()
        except OSError:
            models.append("(unreadable)")
            continue
        model = re.search(r"^Model:\s*(.+?)\s*$", text, re.M)
        models.append(model.group(1) if model else "(no model)")
    return models


def mount_points(mountinfo: str) -> set[str]:
    """The mount points of /proc/self/mountinfo (the fifth field, with space, tab, newline and
    backslash octal-escaped: proc(5), "/proc/pid/mountinfo"). os.path.ismount compares devices,
    which a bind mount from the same filesystem does not change."""
    points = set()
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def _shared_error(path: str, node: str) -> str | None:
    try:
        with open("/proc/self/mountinfo") as f:
            mounted = path in mount_points(f.read())
    except OSError:
        mounted = os.path.ismount(path)
    if not mounted:
        return "not mounted"
    probe = os.path.join(path, f".health-{node}")
    try:
        with open(probe, "w") as f:
            f.write(f"{time.time()}\n")
        os.unlink(probe)
    except OSError as e:
        return f"not writable ({e.strerror})"
    return None


def _with_deadline(fn: Callable[[], str | None], timeout: float, late: str) -> str | None:
    """fn's answer, or `late` when it has not answered in time (a hung NFS mount)."""
    box: list[str | None] = []
    worker = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    worker.start()
    worker.join(timeout)
    return box[0] if box else late


def probe(expected: Expected, node: str, root: str = "") -> Observed:
    dev = [n for n in _listdir(f"{root}/dev") or [] if re.fullmatch(r"nvidia\d+", n)]
    rc, smi = _run(["nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER"])
    log_rc, log = _run(["dmesg"])
    efa = _listdir(f"{root}/sys/class/infiniband")
    shared = _with_deadline(lambda: _shared_error(f"{root}{expected.shared}", node), SHARED_TIMEOUT,
                            f"did not answer in {SHARED_TIMEOUT:.0f} s")
    smi_error = "" if rc == 0 else (smi.strip().splitlines() or [f"exit {rc}"])[-1]
    return Observed(dev_gpus=dev, proc_models=_proc_models(root), smi=smi if rc == 0 else None, smi_error=smi_error,
                    kernel_log=log if log_rc == 0 else None, efa_devices=efa, shared_error=shared)


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(prog="node-health", description=__doc__.split("\n\n")[0])
    p.add_argument("--expected", default=os.path.join(here, "expected.json"),
                   help="the pool's expectations (default: expected.json beside this program)")
    p.add_argument("--node", default=os.environ.get("SLURMD_NODENAME") or os.uname().nodename)
    p.add_argument("--dry-run", action="store_true", help="print the result; tell Slurm nothing")
    args = p.parse_args(argv)
    with open(args.expected) as f:
        expected = Expected.from_json(f.read())
    faults = faults_of(expected, probe(expected, args.node))
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(comment_of(faults, when))
    if args.dry_run:
        return 1 if faults else 0
    rc, shown = _run(["scontrol", "-o", "show", "node", args.node])
    state = parse_node(shown) if rc == 0 else None
    update = update_of(args.node, faults, state, when)
    if not update:
        print(f"node {args.node} is not known to Slurm yet: nothing recorded ({shown.strip()[-200:]})")
    else:
        urc, out = _run(update)
        if urc != 0:
            print(f"{' '.join(update[:3])} failed: {out.strip()[-300:]}")
            return 2
    # A non-zero status puts the faults into slurmd's log too ("health_check failed: rc:1 output:").
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
