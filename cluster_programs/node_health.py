#!/usr/local/bin/python3 -I
"""The node health check slurmd runs on every GPU worker (slurm.conf HealthCheckProgram): it
looks at the node, drains it with the reason `health: <what failed>` when something is wrong,
undrains it when the check itself drained it and nothing is wrong any more (an Xid drain waits
for an administrator's resume: below), and leaves the last result in the node's Comment
(`scontrol show node` prints it). A drain with any other reason (an administrator's, the
operator's) is never touched. docs/health.md says what is checked and why.

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

One deadline for the whole run: slurmd kills the check after HealthCheckTimeout, and a killed
check drains nothing, so a hung nvidia-smi would go unreported. The run has BUDGET seconds from its
start (SLURMD_HEALTH_CHECK_TIMEOUT less a margin for the interpreter); each probe may take its own
cap or what is left, whichever is less, and the last REPORT_SECONDS are kept for telling Slurm. A
probe the deadline leaves no time for is a fault ("nvidia-smi not checked: out of time"): the node
is drained with a reason, never passed unexamined.

Xids are counted once. The driver's Xid lines stay in the kernel log after the GPU reset that
repairs the fault, until the node reboots; counting every line of the log would drain the node again
at every run, even after an administrator resumed it. So the check keeps a cursor -- the boot id
and the sequence number of the last kernel log record it examined (/dev/kmsg numbers every record of
a boot, strictly increasing: Linux Documentation/ABI/testing/dev-kmsg) -- in STATE_FILE, in a
directory of the node itself (a hostPath the NodeSet mounts, model/node_health.py STATE_DIR): it
lasts as long as the boot it describes, so a new pod (the operator replaces pods at every NodeSet
template change) does not read an Xid that was already drained and resumed again. A run reads only
the records after the cursor; the first run after a reboot (the boot id differs) or ever on a node
reads every record of this boot, so a GPU that failed before slurmd started is still caught. Where
/dev/kmsg cannot be opened the check falls back to `dmesg`, which numbers nothing: it then reads the
whole log at every run, never moves the cursor, and says so. The cursor moves on only once an Xid is
in a health drain's reason (not in a dry run, not while Slurm does not know the node yet, not while
someone else's drain keeps the check from draining): an Xid is never consumed unreported.
An Xid drain is sticky: the run that sees the Xid drains the node with `health: Xid N on <bus>`,
and later runs keep that Xid in the reason, even when they see nothing else wrong, until an
administrator resumes the node (after the GPU reset or the replacement that handles it). Every
other fault is still undrained by the check once it is gone: those probes look at the GPU as it is
now, an Xid line only says what happened once.

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
from typing import Callable, Mapping, Sequence

# What the check's own drains carry; the rollout wait (rollout.py HEALTH_PREFIX) and verify read it.
REASON_PREFIX = "health: "
# slurmd's environment has no PATH; nvidia-smi is /usr/bin/nvidia-smi where the NVIDIA container
# toolkit injects it and /usr/local/nvidia/bin on some hosts (tests/data/h200-health/README.md).
PATH = "/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# slurmd kills the check after HealthCheckTimeout; the release leaves it at its default, 60 s
# (SchedMD/slurm doc/man/man5/slurm.conf.5 at slurm-26-05-3-1, "HealthCheckTimeout";
# model/node_health.py slurm_conf() sets no HealthCheckTimeout, and a unit test holds it to that).
SLURMD_HEALTH_CHECK_TIMEOUT = 60.0
# The whole run, from the program's start: 10 s under slurmd's kill for the interpreter's start and
# exit and a loaded node's scheduling, so the check always reports before it is killed.
BUDGET = SLURMD_HEALTH_CHECK_TIMEOUT - 10.0
# scontrol waits up to slurm.conf's MessageTimeout for slurmctld's answer: 10 s by default
# (SchedMD/slurm doc/man/man5/slurm.conf.5 at slurm-26-05-3-1, "MessageTimeout"), and the release
# sets none (model/slurm_values.py, model/node_health.py slurm_conf()). Each scontrol call gets that
# and 5 s for its own start and connect, so a slow but answering slurmctld is not read as a failure.
SLURM_MESSAGE_TIMEOUT = 10.0
SCONTROL_TIMEOUT = SLURM_MESSAGE_TIMEOUT + 5.0
# The end of the budget kept for telling Slurm: `scontrol show node` and `scontrol update`.
REPORT_SECONDS = 2 * SCONTROL_TIMEOUT
# Each probe's own cap, within what the deadline leaves (BUDGET - REPORT_SECONDS: 20 s for all of
# them): a hung nvidia-smi, dmesg or NFS mount is a fault, and the probes after it still get their
# turn while there is time. nvidia-smi's query answers in well under a second on a healthy node
# (tests/data/h200-health/README.md); one that needs 10 s is as good as hung.
COMMAND_TIMEOUT = 10.0
SHARED_TIMEOUT = 5.0
# After a timeout the child is killed and waited for this long at most: a process in uninterruptible
# sleep (an nvidia-smi inside the driver for a GPU that fell off the bus) does not die of SIGKILL
# until the kernel call returns, and an unbounded wait would hold the check until slurmd kills it,
# which drains nothing. Such a child is abandoned (slurmd reaps what its check leaves when it ends).
KILL_WAIT = 1.0
OUT_OF_TIME = "out of time"
# The Xid cursor (the module docstring), in the node's own directory: model/node_health.py STATE_DIR
# is the path's one home (this program imports nothing of the repository; a unit test holds the two
# to each other). Not slurmd's spool: that is the container's writable layer, gone with the pod.
STATE_FILE = "/var/lib/slinky-eks/node-health/xid-cursor.json"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# The kernel log's records, each "prio,seq,usec,flags[,...];message" with continuation lines
# starting with a space (Linux Documentation/ABI/testing/dev-kmsg). The slurmd container is
# privileged and runs as root (SlinkyProject/slurm-operator v1.2.1
# internal/builder/workerbuilder/worker_app.go), so it can read it. The real-Slurm tests bind-mount a
# file of such records here (tests/support/local_slurm.py).
KMSG = "/dev/kmsg"
KMSG_READ = 16384  # more than one record's size: a read(2) of /dev/kmsg returns one whole record
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

    dev_gpus: Sequence[str]  # /dev/nvidiaN names
    proc_models: Sequence[str]  # "Model:" of each /proc/driver/nvidia/gpus/*/information
    smi: str | None  # `nvidia-smi -q -d ECC,ROW_REMAPPER`, None if it failed
    smi_error: str = ""
    kernel_log: str | None = None  # the kernel log after the cursor; None when not readable
    efa_devices: Sequence[str] | None = None  # /sys/class/infiniband entries; None when absent
    shared_error: str | None = None  # why /shared is not a writable mount; None when it is
    # What the deadline kept from being looked at, and why ("out of time", "... did not answer"):
    # "nvidia-smi", "kernel log", or the shared mount's path.
    unchecked: Mapping[str, str] = field(default_factory=dict)


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
        if not sep and line.endswith(":"):  # "Key :" with an empty value
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
    if seen.smi is None and "nvidia-smi" in seen.unchecked:
        return faults  # faults_of reports it as not checked
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


def unchecked_faults(seen: Observed) -> list[str]:
    """What the deadline kept from being looked at: a fault, so the node is drained with the reason
    rather than passed unexamined."""
    return [f"{what} not checked: {why}" for what, why in seen.unchecked.items()]


def faults_of(expected: Expected, seen: Observed) -> list[str]:
    return (
        gpu_faults(expected, seen)
        + xid_faults(seen.kernel_log)
        + efa_faults(expected, seen.efa_devices)
        + shared_faults(expected, seen.shared_error)
        + unchecked_faults(seen)
    )


# -- the Xid cursor --------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """Where the last recorded run stopped reading the kernel log: the boot, and the sequence
    number of the last /dev/kmsg record examined."""

    boot_id: str
    seq: int

    def to_json(self) -> str:
        return json.dumps({"boot_id": self.boot_id, "seq": self.seq}) + "\n"

    @classmethod
    def from_json(cls, text: str, boot_id: str) -> "Cursor | None":
        """The stored cursor if it is of this boot; None (read the whole log) when it is of another
        boot, unreadable (a cursor of the earlier, stamp-based format too), or when the boot id
        cannot be read (no cursor can be trusted then)."""
        try:
            d = json.loads(text)
            cursor = cls(str(d["boot_id"]), int(d["seq"]))
        except (ValueError, KeyError, TypeError):
            return None
        return cursor if cursor.boot_id == boot_id and boot_id else None


def parse_kmsg(data: str) -> list[tuple[int, str]]:
    """/dev/kmsg's records as (seq, message): the header's second field is the sequence number;
    continuation lines (" KEY=value") and anything without a header are left out."""
    records = []
    for line in data.splitlines():
        head, sep, message = line.partition(";")
        fields = head.split(",")
        if not sep or line.startswith(" ") or len(fields) < 4 or not fields[1].isdigit():
            continue
        records.append((int(fields[1]), message))
    return records


def records_after(
    records: Sequence[tuple[int, str]], cursor: Cursor | None, boot_id: str
) -> tuple[str, Cursor | None]:
    """The messages of the records after `cursor` (all of them without one), one a line, and the
    cursor at the last record (`cursor` itself when there is none). Records the ring buffer
    overwrote since the last run are simply gone; every record still there is numbered past it."""
    fresh = "".join(f"{message}\n" for seq, message in records if cursor is None or seq > cursor.seq)
    last = max((seq for seq, _ in records), default=None)
    if last is None or (cursor is not None and last <= cursor.seq):
        return fresh, cursor
    return fresh, Cursor(boot_id, last)


# -- what to tell Slurm ----------------------------------------------------------------------


@dataclass(frozen=True)
class NodeState:
    flags: frozenset[str]  # base state and flags of scontrol's State=IDLE+DRAIN+...
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


def node_unknown(rc: int, shown: str, node: str) -> bool:
    """Whether `scontrol -o show node NODE` said Slurm does not know the node (a dynamic node before
    its first registration): exit 1 and "Node NODE not found" (SchedMD/slurm
    src/scontrol/info_node.c scontrol_print_node at slurm-26-05-3-1). Any other failure -- a
    timeout, "Unable to contact slurm controller" -- is not this."""
    return rc == 1 and f"Node {node} not found" in shown


def _one_field(faults: Sequence[str]) -> str:
    """The faults as one `scontrol -o show node` field: readers split that line at "Key=", so a
    fault quoting a tool's "a=b" must not add one."""
    return "; ".join(faults).replace("=", ":")


def reason_of(faults: Sequence[str]) -> str:
    return REASON_PREFIX + _one_field(faults)


def held_xids(state: NodeState | None) -> list[str]:
    """The Xid faults of the check's own drain: they hold it until an administrator resumes the
    node (the module docstring). A later run sees no Xid line for them: that line was counted."""
    if state is None or not state.ours:
        return []
    return [f for f in state.reason.removeprefix(REASON_PREFIX).split("; ") if f.startswith("Xid ")]


def comment_of(faults: Sequence[str], when: str, held: Sequence[str] = ()) -> str:
    text = _one_field(faults) if faults else "ok"
    if held:
        text += f" ({_one_field(held)} holds the drain until the node is resumed)"
    return f"health {when}: {text}"


def update_of(node: str, faults: Sequence[str], state: NodeState | None, when: str) -> list[str]:
    """The one `scontrol update` this run makes: the result in the Comment always; a drain when
    something failed and nobody has drained the node (or a new reason for the check's own drain);
    an undrain when the check's own drain is no longer warranted -- never while an Xid holds it.
    [] when the node is unknown."""
    if state is None:
        return []
    held = [x for x in held_xids(state) if x not in faults]
    argv = ["scontrol", "update", f"nodename={node}", f"comment={comment_of(faults, when, held)}"]
    drain = [*faults, *held]
    if drain and (not state.drained or (state.ours and state.reason != reason_of(drain))):
        argv += ["state=drain", f"reason={reason_of(drain)}"]
    elif not drain and state.ours:
        argv += ["state=undrain"]
    return argv


def consumes_xids(faults: Sequence[str], state: NodeState | None) -> bool:
    """Whether a recorded run may move the Xid cursor on: when its Xid faults (if any) are in a
    health drain's reason once its update is made. Not while Slurm does not know the node (the
    run at slurmd's start), and not while someone else's drain keeps the check from draining:
    once that drain is lifted, the next run still sees the Xid and drains the node."""
    if state is None:
        return False
    return not any(f.startswith("Xid ") for f in faults) or not state.drained or state.ours


# -- the machine -----------------------------------------------------------------------------


class Deadline:
    """One end for the whole run; each probe gets its own cap or what is left, the lesser."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.end = clock() + seconds

    def left(self) -> float:
        return max(0.0, self.end - self.clock())

    def cap(self, limit: float) -> float:
        return min(limit, self.left())


def _run(argv: list[str], timeout: float = COMMAND_TIMEOUT) -> tuple[int, str]:
    """argv's status and output, within `timeout`. Not subprocess.run: after its timeout it kills the
    child and then waits for it without a limit (CPython Lib/subprocess.py run()), and a child in
    uninterruptible sleep outlives SIGKILL (KILL_WAIT). Here the wait after the kill is bounded, and
    a child still there after it is abandoned."""
    if timeout <= 0:
        return 124, OUT_OF_TIME
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PATH": PATH, "LC_ALL": "C"},
        )
    except FileNotFoundError:
        return 127, f"{argv[0]} not found"
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        try:
            child.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            pass  # abandoned: still in the kernel; its pipes close with this process
        return 124, f"{argv[0]} did not answer in {timeout:.1f} s"
    return child.returncode, out + (err if child.returncode else "")


def read_kmsg(
    path: str, deadline: "Deadline", read: Callable[[int, int], bytes] = os.read
) -> list[tuple[int, str]] | None:
    """The kernel log's records from /dev/kmsg (`path`), or None when it cannot be opened. Opened
    non-blocking, so the reads end at EAGAIN once every record is read instead of waiting for the
    next one; EPIPE says the ring buffer overwrote the records the read was at, and the next read
    goes on with the oldest one left (Documentation/ABI/testing/dev-kmsg). A plain file of records
    (the tests') ends at end of file. The reads stop at the deadline too: a flood of new records
    must not keep the check from reporting."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    chunks = []
    try:
        while deadline.left() > 0:
            try:
                chunk = read(fd, KMSG_READ)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8", "replace")
    return parse_kmsg(text if text.endswith("\n") or not text else text + "\n")


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
    return write_probe(path, node)


# A new file only, never through a symbolic link: with O_CREAT, O_EXCL fails on any existing name,
# a symbolic link included, and O_NOFOLLOW says so even where O_EXCL were dropped (open(2)).
_PROBE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_probe(directory: str, node: str) -> str | None:
    """Creates, writes and removes `<directory>/.health-<node>`; why it could not, or None. The
    check runs as root: a name already there (a run killed midway, or a link someone planted) is
    unlinked first, which removes the link itself and never what it points to, and the probe is
    then a file of its own, mode 0600, or nothing."""
    probe = os.path.join(directory, f".health-{node}")
    try:
        try:
            os.unlink(probe)
        except FileNotFoundError:
            pass
        fd = os.open(probe, _PROBE_FLAGS, 0o600)
        try:
            os.write(fd, f"{time.time()}\n".encode())
        finally:
            os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"not writable ({e.strerror})"
    return None


def _with_deadline(fn: Callable[[], str | None], timeout: float, late: str) -> str | None:
    """fn's answer, or `late` when it has not answered in time (a hung NFS mount)."""
    if timeout <= 0:
        return late
    box: list[str | None] = []
    worker = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    worker.start()
    worker.join(timeout)
    return box[0] if box else late


def read_cursor(path: str, boot_id: str) -> Cursor | None:
    try:
        with open(path) as f:
            return Cursor.from_json(f.read(), boot_id)
    except OSError:
        return None


def write_cursor(path: str, cursor: Cursor) -> str | None:
    """Replaces the stored cursor in one rename (a run killed midway leaves the old one); why not,
    or None."""
    try:
        with open(f"{path}.new", "w") as f:
            f.write(cursor.to_json())
        os.replace(f"{path}.new", path)
    except OSError as e:
        return f"{path}: {e.strerror}"
    return None


def boot_id(root: str = "") -> str:
    try:
        with open(f"{root}{BOOT_ID}") as f:
            return f.read().strip()
    except OSError:
        return ""


def probe(
    expected: Expected,
    node: str,
    root: str = "",
    deadline: Deadline | None = None,
    cursor: Cursor | None = None,
    boot: str = "",
) -> tuple[Observed, Cursor | None]:
    """What the machine shows, within `deadline` (BUDGET less REPORT_SECONDS from now when not
    given), and the Xid cursor at the end of the kernel log read. The quick file system reads
    first; then the kernel log (the Xid that says why a GPU hangs is there even when nvidia-smi
    hangs), nvidia-smi, and the shared mount."""
    deadline = deadline or Deadline(BUDGET - REPORT_SECONDS)
    unchecked: dict[str, str] = {}
    dev = [n for n in _listdir(f"{root}/dev") or [] if re.fullmatch(r"nvidia\d+", n)]
    models = _proc_models(root)
    efa = _listdir(f"{root}/sys/class/infiniband")
    kernel_log, after = None, cursor
    records = read_kmsg(KMSG, deadline)
    if records is not None:
        kernel_log, after = records_after(records, cursor, boot)
    else:
        # No sequence numbers: every run reads the whole log, and the cursor stays where it is
        # (main() says so), so an Xid is counted again by every run of this boot.
        print(
            f"{KMSG} cannot be opened: the kernel log is read with dmesg, whole at every run", file=sys.stderr
        )
        log_rc, log = _run(["dmesg"], deadline.cap(COMMAND_TIMEOUT))
        if log_rc == 0:
            kernel_log = log
        elif log_rc == 124:  # out of time, or hung: not the unreadable log that is skipped
            unchecked["kernel log"] = log
    rc, smi = _run(["nvidia-smi", "-q", "-d", "ECC,ROW_REMAPPER"], deadline.cap(COMMAND_TIMEOUT))
    if rc == 124 and smi == OUT_OF_TIME:
        unchecked["nvidia-smi"] = OUT_OF_TIME
    smi_error = "" if rc == 0 else (smi.strip().splitlines() or [f"exit {rc}"])[-1]
    shared_time = deadline.cap(SHARED_TIMEOUT)
    if shared_time > 0:
        shared = _with_deadline(
            lambda: _shared_error(f"{root}{expected.shared}", node),
            shared_time,
            f"did not answer in {shared_time:.1f} s",
        )
    else:
        shared = None
        unchecked[expected.shared] = OUT_OF_TIME
    return Observed(
        dev_gpus=dev,
        proc_models=models,
        smi=smi if rc == 0 else None,
        smi_error=smi_error,
        kernel_log=kernel_log,
        efa_devices=efa,
        shared_error=shared,
        unchecked=unchecked,
    ), after


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(prog="node-health", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--expected",
        default=os.path.join(here, "expected.json"),
        help="the pool's expectations (default: expected.json beside this program)",
    )
    p.add_argument("--node", default=os.environ.get("SLURMD_NODENAME") or os.uname().nodename)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the result; tell Slurm nothing and leave the Xid cursor where it is",
    )
    p.add_argument("--state", default=STATE_FILE, help=f"the Xid cursor's file (default: {STATE_FILE})")
    args = p.parse_args(argv)
    # From the program's start: what ran before this line counts against slurmd's timeout too.
    run = Deadline(BUDGET)
    with open(args.expected) as f:
        expected = Expected.from_json(f.read())
    boot = boot_id()
    seen, after = probe(
        expected,
        args.node,
        deadline=Deadline(max(0.0, run.left() - REPORT_SECONDS)),
        cursor=read_cursor(args.state, boot),
        boot=boot,
    )
    faults = faults_of(expected, seen)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(comment_of(faults, when))
    if args.dry_run:
        return 1 if faults else 0
    rc, shown = _run(["scontrol", "-o", "show", "node", args.node], run.cap(SCONTROL_TIMEOUT))
    if not node_unknown(rc, shown, args.node) and (rc != 0 or parse_node(shown) is None):
        # Not "unknown": slurmctld did not answer (or answered nonsense), so nothing can be decided
        # about the node's drain; said on stderr, and a status no other case has.
        print(
            f"scontrol show node {args.node} failed (exit {rc}): nothing recorded: {shown.strip()[-300:]}",
            file=sys.stderr,
        )
        return 3
    state = parse_node(shown) if rc == 0 else None
    update = update_of(args.node, faults, state, when)
    if not update:
        print(f"node {args.node} is not known to Slurm yet: nothing recorded ({shown.strip()[-200:]})")
    else:
        urc, out = _run(update, run.cap(SCONTROL_TIMEOUT))
        if urc != 0:
            print(f"{' '.join(update[:3])} failed: {out.strip()[-300:]}")
            return 2
        if after is not None and consumes_xids(faults, state):
            if (why := write_cursor(args.state, after)) is not None:
                # Not a fault: without the cursor the next run reads the whole log again, as the
                # first run of a pod does, and reports an old Xid once more.
                print(f"the Xid cursor was not saved: {why}")
    # A non-zero status puts the faults into slurmd's log too ("health_check failed: rc:1 output:").
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
