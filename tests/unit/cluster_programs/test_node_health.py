"""cluster_programs/node_health.py's judgement, over the real H200 output (tests/data/h200-health,
driver 580.159.04: its README says how each file was captured) and faults written into it."""

import json
import posixpath
import re
import subprocess
import time
from typing import Sequence

import pytest

from cluster_programs import node_health as health
from cluster_programs import rollout
from model.builders import node_health
from model.facts.catalog import CATALOG
from tests.support.paths import REPO
from tests.support.rollout_fakes import scontrol_line

DATA = REPO / "tests/data/h200-health"
ECC_QUERY = (DATA / "nvidia-smi-q-ecc-row-remapper.txt").read_text()
FULL_QUERY = (DATA / "nvidia-smi-q.txt").read_text()
# The captured machine: one H200 of the model the catalog's H200 types name.
H200 = CATALOG["p5en.48xlarge"].gpu_model
ONE_H200 = health.Expected(pool="h200", gpus=1, gpu_model=H200, efa_interfaces=0, shared="/shared")
WHEN = "2026-12-03T11:05:35Z"


def _dev_gpus() -> list[str]:
    return re.findall(r"/dev/(nvidia\d+)$", (DATA / "ls-dev-nvidia.txt").read_text(), re.M)


def _proc_models() -> list[str]:
    return re.findall(
        r"^Model:\s*(.+?)\s*$", (DATA / "proc-driver-nvidia-gpu-information.txt").read_text(), re.M
    )


def _kernel_log() -> str:
    """The captured dmesg's first line (the capture shows grep found no Xid in the rest)."""
    return re.search(r"^\[.*$", (DATA / "kernel-log.txt").read_text(), re.M).group(0) + "\n"


def real(**changes) -> health.Observed:
    seen = dict(
        dev_gpus=_dev_gpus(),
        proc_models=_proc_models(),
        smi=ECC_QUERY,
        kernel_log=_kernel_log(),
        efa_devices=[],
        shared_error=None,
    )
    return health.Observed(**{**seen, **changes})


def _set(text: str, section: str, key: str, value: str) -> str:
    """`text` with the first `key` line after the `section` heading set to `value`."""
    head = text.index(section)
    line = re.compile(rf"^(\s*{re.escape(key)}\s+: ).*$", re.M).search(text, head)
    assert line, (section, key)
    return text[: line.start()] + line.group(1) + value + text[line.end() :]


def test_the_real_h200_is_healthy():
    assert health.faults_of(ONE_H200, real()) == []


def test_the_real_ecc_and_row_remapper_query_parses_into_one_gpu_with_both_sections():
    (gpu,) = health.parse_query(ECC_QUERY)
    assert gpu.name == "00000000:00:06.0"
    assert gpu.child("ECC Errors").child("Volatile").values["DRAM Uncorrectable"] == "0"
    assert gpu.child("Remapped Rows").values["Pending"] == "No"


def test_the_full_query_of_the_real_h200_parses_into_one_healthy_gpu():
    gpus = health.parse_query(FULL_QUERY)
    assert len(gpus) == 1 and health.memory_faults(gpus) == []


def test_a_volatile_dram_uncorrectable_error_is_a_fault():
    smi = _set(ECC_QUERY, "Volatile", "DRAM Uncorrectable", "2")
    assert health.faults_of(ONE_H200, real(smi=smi)) == ["GPU 00000000:00:06.0 2 DRAM Uncorrectable"]


def test_a_volatile_sram_uncorrectable_error_is_a_fault():
    smi = _set(ECC_QUERY, "Volatile", "SRAM Uncorrectable SEC-DED", "1")
    assert health.memory_faults(health.parse_query(smi)) == [
        "GPU 00000000:00:06.0 1 SRAM Uncorrectable SEC-DED"
    ]


def test_an_aggregate_uncorrectable_count_alone_drains_nothing():
    """Aggregate counters survive the reset that repairs the GPU."""
    smi = _set(ECC_QUERY, "Aggregate", "DRAM Uncorrectable", "5")
    assert health.faults_of(ONE_H200, real(smi=smi)) == []


def test_a_pending_row_remapping_is_a_fault():
    smi = _set(ECC_QUERY, "Remapped Rows", "Pending", "Yes")
    assert health.memory_faults(health.parse_query(smi)) == ["GPU 00000000:00:06.0 row remapping pending"]


def test_a_failed_row_remapping_is_a_fault():
    smi = _set(ECC_QUERY, "Remapped Rows", "Remapping Failure Occurred", "Yes")
    assert health.memory_faults(health.parse_query(smi)) == ["GPU 00000000:00:06.0 row remapping failed"]


def test_ecc_counters_that_read_not_available_are_no_fault():
    smi = _set(ECC_QUERY, "Volatile", "DRAM Uncorrectable", "N/A")
    assert health.memory_faults(health.parse_query(smi)) == []


def test_an_older_gpus_volatile_double_bit_total_is_a_fault():
    """Pre-Hopper drivers count Single Bit / Double Bit per memory, with a Total (nvidia-smi(1),
    "ECC Errors")."""
    older = (
        "GPU 00000000:00:1E.0\n    ECC Errors\n        Volatile\n            Single Bit\n"
        "                Device Memory                   : 3\n                Total                           : 3\n"
        "            Double Bit\n                Device Memory                   : 1\n"
        "                Total                           : 1\n        Aggregate\n            Double Bit\n"
        "                Total                           : 7\n"
    )
    assert health.memory_faults(health.parse_query(older)) == ["GPU 00000000:00:1E.0 1 double-bit ECC"]


def test_a_gpu_hidden_from_dev_is_counted_though_nvidia_smi_still_lists_it():
    """The capture's hidden-GPU probe: nvidia-smi answered for the GPU with /dev/nvidia0 gone."""
    assert "nvidia-smi -L" in (DATA / "hidden-gpu-nvidia-smi.txt").read_text()
    assert health.faults_of(ONE_H200, real(dev_gpus=[])) == ["0 of 1 GPUs in /dev"]


def test_a_gpu_hidden_from_procfs_is_counted():
    assert health.faults_of(ONE_H200, real(proc_models=[])) == ["0 of 1 GPUs in /proc/driver/nvidia"]


def test_a_node_one_gpu_short_of_its_pool_is_a_fault():
    eight = health.Expected("p5en", 8, H200, 0, "/shared")
    faults = health.faults_of(eight, real())
    assert faults == [
        "1 of 8 GPUs in /dev",
        "1 of 8 GPUs in /proc/driver/nvidia",
        "1 of 8 GPUs in nvidia-smi",
    ]


def test_a_gpu_of_another_model_is_a_fault():
    h100 = health.Expected("p5", 1, CATALOG["p5.48xlarge"].gpu_model, 0, "/shared")
    assert health.faults_of(h100, real()) == [f"GPU model {H200}, want {h100.gpu_model}"]


def test_a_failing_nvidia_smi_is_a_fault():
    faults = health.faults_of(ONE_H200, real(smi=None, smi_error="Unable to determine the device handle"))
    assert faults == ["nvidia-smi failed: Unable to determine the device handle"]


def test_a_hardware_xid_in_the_kernel_log_is_a_fault():
    log = _kernel_log() + "[ 969.1] NVRM: Xid (PCI:0000:00:06): 79, pid=2101, GPU has fallen off the bus.\n"
    assert health.faults_of(ONE_H200, real(kernel_log=log)) == ["Xid 79 on 0000:00:06"]


def test_an_application_xid_drains_nothing():
    log = "[ 12.0] NVRM: Xid (PCI:0000:00:06): 13, pid=77, Graphics Exception: ESR 0x404600=0x80000002\n"
    assert health.xid_faults(log) == []


def test_an_unreadable_kernel_log_is_skipped():
    assert health.faults_of(ONE_H200, real(kernel_log=None)) == []


def test_missing_efa_devices_are_a_fault_on_an_efa_type():
    efa = health.Expected("h200", 1, H200, 2, "/shared")
    assert health.faults_of(efa, real(efa_devices=["rdmap16s27"])) == ["1 of 2 EFA devices"]
    assert health.faults_of(efa, real(efa_devices=None)) == ["0 of 2 EFA devices"]
    assert health.faults_of(efa, real(efa_devices=["rdmap16s27", "rdmap32s27"])) == []


def test_a_type_without_efa_needs_no_efa_device():
    """The capture's /sys/class/infiniband is empty (no EFA on that machine)."""
    assert "total 0" in (DATA / "ls-sys-class-infiniband.txt").read_text()
    assert health.efa_faults(ONE_H200, []) == []


def test_a_shared_volume_that_is_not_a_writable_mount_is_a_fault():
    assert health.faults_of(ONE_H200, real(shared_error="not mounted")) == ["/shared not mounted"]


def test_mount_points_are_read_from_mountinfo_with_their_escapes():
    """Two lines of a real /proc/self/mountinfo layout (proc(5)): the fifth field, octal escapes."""
    info = (
        "36 35 98:0 /mnt1 /shared rw,noatime master:1 - nfs4 fs-1.efs:/ rw\n"
        "37 35 98:0 /x /mnt/with\\040space rw - ext4 /dev/root rw\n"
    )
    assert health.mount_points(info) == {"/shared", "/mnt/with space"}


def test_the_shared_probe_reports_a_plain_directory_as_not_mounted(tmp_path):
    assert health._shared_error(str(tmp_path), "n") == "not mounted"


def test_a_hung_probe_is_a_fault_not_a_hang():
    assert health._with_deadline(lambda: __import__("time").sleep(5), 0.1, "late") == "late"


# -- what the check tells Slurm ---------------------------------------------------------------


def _state(state: str, reason: str = "") -> health.NodeState:
    return health.parse_node(scontrol_line("h200-0", state, reason))


def test_a_healthy_node_gets_only_its_result():
    assert health.update_of("h200-0", [], _state("IDLE+DYNAMIC_NORM"), WHEN) == [
        "scontrol",
        "update",
        "nodename=h200-0",
        f"comment=health {WHEN}: ok",
    ]


def test_a_fault_drains_the_node_with_the_named_reason():
    update = health.update_of("h200-0", ["0 of 1 GPUs in /dev"], _state("MIXED"), WHEN)
    assert update[-2:] == ["state=drain", "reason=health: 0 of 1 GPUs in /dev"]
    assert f"comment=health {WHEN}: 0 of 1 GPUs in /dev" in update


def test_an_administrators_drain_is_left_alone_when_a_fault_is_found():
    update = health.update_of("h200-0", ["Xid 79 on 0000:00:06"], _state("IDLE+DRAIN", "disk swap"), WHEN)
    assert not any(a.startswith(("state=", "reason=")) for a in update)


def test_an_administrators_drain_is_left_alone_when_the_node_is_healthy():
    update = health.update_of("h200-0", [], _state("IDLE+DRAIN", "disk swap"), WHEN)
    assert not any(a.startswith(("state=", "reason=")) for a in update)


def test_the_checks_own_drain_is_undrained_once_healthy():
    update = health.update_of("h200-0", [], _state("IDLE+DRAIN", "health: 0 of 1 GPUs in /dev"), WHEN)
    assert update[-1] == "state=undrain"


def test_the_checks_own_drain_gets_the_new_reason_when_the_fault_changes():
    update = health.update_of(
        "h200-0", ["Xid 79 on 0000:00:06"], _state("IDLE+DRAIN", "health: 0 of 1 GPUs in /dev"), WHEN
    )
    assert update[-2:] == ["state=drain", "reason=health: Xid 79 on 0000:00:06"]


def test_the_checks_own_drain_with_the_same_fault_is_not_drained_again():
    update = health.update_of(
        "h200-0", ["Xid 79 on 0000:00:06"], _state("IDLE+DRAIN", "health: Xid 79 on 0000:00:06"), WHEN
    )
    assert not any(a.startswith("state=") for a in update)


def test_a_fault_quoting_an_equals_sign_reads_back_whole_from_scontrol():
    fault = "nvidia-smi failed: NVML rc=9"
    update = health.update_of("h200-0", [fault], _state("IDLE"), WHEN)
    line = scontrol_line(
        "h200-0", "IDLE+DRAIN", update[-1].removeprefix("reason="), comment=update[3].removeprefix("comment=")
    )
    (node,) = rollout.parse_scontrol(line)
    assert node.reason == "health: nvidia-smi failed: NVML rc:9"
    assert node.comment == f"health {WHEN}: nvidia-smi failed: NVML rc:9"


def test_a_node_slurm_does_not_know_yet_is_not_updated():
    assert health.parse_node("Node h200-0 not found\n") is None
    assert health.update_of("h200-0", ["x"], None, WHEN) == []


def test_the_rollout_wait_knows_the_checks_reason_prefix():
    assert rollout.HEALTH_PREFIX == health.REASON_PREFIX


def test_the_expectations_file_reads_back_as_the_pool_expects():
    text = json.dumps({"pool": "p", "gpus": 8, "gpu_model": H200, "efa_interfaces": 16, "shared": "/shared"})
    assert health.Expected.from_json(text) == health.Expected("p", 8, H200, 16, "/shared")


@pytest.mark.parametrize("name", ["nvidia-smi-q-ecc-row-remapper.txt", "nvidia-smi-q.txt"])
def test_the_parser_reads_every_gpu_section_of_the_real_output(name):
    text = (DATA / name).read_text()
    attached = int(re.search(r"Attached GPUs\s+: (\d+)", text).group(1))
    assert len(health.parse_query(text)) == attached


# -- one deadline for the whole run -----------------------------------------------------------


def test_the_release_leaves_healthcheck_timeout_to_the_default_the_budget_is_derived_from():
    """The program's SLURMD_HEALTH_CHECK_TIMEOUT is the number's one home: slurm.conf must not set
    another (model/builders/node_health.py)."""
    assert "HealthCheckTimeout" not in node_health.slurm_conf()
    assert health.SLURMD_HEALTH_CHECK_TIMEOUT == 60.0  # slurm.conf(5) at slurm-26-05-3-1
    assert health.REPORT_SECONDS < health.BUDGET < health.SLURMD_HEALTH_CHECK_TIMEOUT


def test_the_probes_own_caps_alone_would_outlast_slurmds_kill():
    """Why one deadline: the caps the check had before it (20 s per command, 10 s for /shared)
    add up past HealthCheckTimeout, and a killed check drains nothing."""
    assert 2 * health.COMMAND_TIMEOUT + health.SHARED_TIMEOUT + 2 * health.SCONTROL_TIMEOUT > health.BUDGET
    assert health.BUDGET - health.REPORT_SECONDS >= health.COMMAND_TIMEOUT + health.SHARED_TIMEOUT


def test_a_probe_gets_its_own_cap_or_what_is_left_of_the_deadline_whichever_is_less():
    now = [100.0]
    deadline = health.Deadline(30.0, clock=lambda: now[0])
    assert deadline.cap(20.0) == 20.0
    now[0] += 25.0
    assert deadline.cap(20.0) == 5.0
    now[0] += 10.0
    assert deadline.cap(20.0) == 0.0


def _slow_tools(tmp_path, monkeypatch, seconds: float) -> None:
    """dmesg and nvidia-smi that hang for `seconds`, first on the program's PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dmesg", "nvidia-smi"):
        (bin_dir / tool).write_text(f"#!/bin/sh\nexec sleep {seconds}\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setattr(health, "PATH", f"{bin_dir}:/usr/bin:/bin")


def test_hung_probes_end_within_the_shared_deadline_and_the_late_ones_are_faults(tmp_path, monkeypatch):
    """With the real caps (20 s a command), a hung dmesg and nvidia-smi: the run ends at the
    deadline, not at the sum of the caps (the check before the deadline took 20 + 20 + 10 s here),
    and what had no time left is a fault with its reason."""
    _slow_tools(tmp_path, monkeypatch, 30)
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "no-kmsg"))  # dmesg, the fallback
    start = time.monotonic()
    seen, _ = health.probe(ONE_H200, "h200-0", root=str(tmp_path), deadline=health.Deadline(1.5))
    took = time.monotonic() - start
    assert took < 1.5 + 0.5, took
    assert seen.unchecked == {
        "kernel log": "dmesg did not answer in 1.5 s",
        "nvidia-smi": "out of time",
        "/shared": "out of time",
    }
    faults = health.faults_of(ONE_H200, real(kernel_log=None, smi=None, unchecked=seen.unchecked))
    assert faults == [
        "kernel log not checked: dmesg did not answer in 1.5 s",
        "nvidia-smi not checked: out of time",
        "/shared not checked: out of time",
    ]


def test_a_probe_the_deadline_leaves_no_time_for_is_not_run():
    assert health._run(["sleep", "30"], 0.0) == (124, health.OUT_OF_TIME)
    assert health._with_deadline(lambda: None, 0.0, "late") == "late"


def test_the_whole_run_reports_to_slurm_before_the_budget_ends(tmp_path, monkeypatch):
    """main(): hung probes, then the scontrol calls, all inside BUDGET (shrunk here to 3 s, with
    1 s kept for the report), and the node is drained with the out-of-time faults."""
    _slow_tools(tmp_path, monkeypatch, 30)
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "no-kmsg"))  # dmesg, the fallback
    monkeypatch.setattr(health, "BUDGET", 3.0)
    monkeypatch.setattr(health, "REPORT_SECONDS", 1.0)
    calls = []
    real_run = health._run

    def run(argv, timeout=health.COMMAND_TIMEOUT):
        if argv[0] != "scontrol":
            return real_run(argv, timeout)
        calls.append((argv, timeout))
        return (0, scontrol_line("h200-0", "IDLE")) if argv[1] == "-o" else (0, "")

    monkeypatch.setattr(health, "_run", run)
    expected = tmp_path / "expected.json"
    expected.write_text(
        json.dumps(
            {
                "pool": "h200",
                "gpus": 0,
                "gpu_model": H200,
                "efa_interfaces": 0,
                "shared": str(tmp_path / "shared"),
            }
        )
    )
    start = time.monotonic()
    assert health.main(["--expected", str(expected), "--node", "h200-0", "--state", str(tmp_path / "s")]) == 1
    assert time.monotonic() - start < 3.0
    (show, _), (update, _) = calls
    assert all(0 < t <= health.SCONTROL_TIMEOUT for _, t in calls)
    reason = next(a for a in update if a.startswith("reason="))
    assert (
        "kernel log not checked: dmesg did not answer in" in reason
        and "nvidia-smi not checked: out of time" in reason
    )


# -- Xids since the last run ------------------------------------------------------------------

BOOT = "3c1e4b8a-0f0e-4a55-9d51-2f3b1f6a7c10"
OLD_XID = "NVRM: Xid (PCI:0000:00:06): 79, pid=2101, GPU has fallen off the bus."
NEW_XID = "NVRM: Xid (PCI:0000:00:06): 48, pid=3307, An uncorrectable double bit error."


def _boot_line() -> str:
    return _kernel_log().partition("] ")[2].rstrip("\n")


def _kmsg(*messages: str, first: int = 0, usec: Sequence[int] | None = None) -> str:
    """/dev/kmsg records (Linux Documentation/ABI/testing/dev-kmsg): "prio,seq,usec,flags;message",
    numbered from `first`, each with a continuation line as the driver's records carry."""
    usec = usec or [1_000_000 * (i + 1) for i in range(len(messages))]
    return "".join(
        f"6,{first + i},{t},-;{m}\n SUBSYSTEM=pci\n"
        for i, (m, t) in enumerate(zip(messages, usec, strict=True))
    )


def _read(
    kmsg: str, cursor: health.Cursor | None, boot: str = BOOT
) -> tuple[list[str], health.Cursor | None]:
    fresh, after = health.records_after(health.parse_kmsg(kmsg), cursor, boot)
    return health.xid_faults(fresh), after


def test_kmsg_records_parse_into_their_sequence_numbers_and_messages():
    assert health.parse_kmsg(_kmsg(_boot_line(), OLD_XID, first=7)) == [(7, _boot_line()), (8, OLD_XID)]


def test_the_first_run_of_a_boot_counts_every_xid_of_that_boot():
    """A GPU that failed before slurmd started is still caught."""
    faults, after = _read(_kmsg(_boot_line(), OLD_XID), None)
    assert faults == ["Xid 79 on 0000:00:06"] and after == health.Cursor(BOOT, 1)


def test_an_xid_counted_by_one_run_is_not_counted_again_by_the_next():
    _, cursor = _read(_kmsg(_boot_line(), OLD_XID), None)
    assert _read(_kmsg(_boot_line(), OLD_XID, "eth0: link up"), cursor) == ([], health.Cursor(BOOT, 2))


def test_a_new_xid_after_the_cursor_is_counted():
    _, cursor = _read(_kmsg(_boot_line(), OLD_XID), None)
    assert _read(_kmsg(_boot_line(), OLD_XID, NEW_XID), cursor)[0] == ["Xid 48 on 0000:00:06"]


def test_a_new_xid_is_counted_after_the_ring_buffer_wrapped():
    """The reviewer's case: without printk timestamps the old cursor was a line count, and once the
    ring buffer overwrote old lines the log had no more lines than before, so a new Xid at its end
    was taken for a line already read. Sequence numbers keep counting past what was overwritten."""
    _, cursor = _read(_kmsg(_boot_line(), OLD_XID, "eth0: link up", first=100), None)
    wrapped = _kmsg("usb 1-1: new device", NEW_XID, "eth0: link down", first=5000)
    assert _read(wrapped, cursor) == (["Xid 48 on 0000:00:06"], health.Cursor(BOOT, 5002))


def test_records_whose_stamps_are_out_of_order_are_counted_by_sequence():
    """Stamps of records logged on different CPUs can go back by microseconds; the sequence cannot."""
    _, cursor = _read(_kmsg(_boot_line(), "eth0: link up", usec=[969_100_000, 969_100_005]), None)
    later = _kmsg(_boot_line(), "eth0: link up", OLD_XID, usec=[969_100_000, 969_100_005, 969_100_001])
    assert _read(later, cursor)[0] == ["Xid 79 on 0000:00:06"]


def test_a_cursor_of_another_boot_is_not_used():
    """The boot id changed: the machine rebooted, the log is a new one; read all of it."""
    _, cursor = _read(_kmsg(_boot_line(), OLD_XID, NEW_XID), None, boot="another-boot")
    stored = health.Cursor.from_json(cursor.to_json(), BOOT)
    assert stored is None
    assert _read(_kmsg(_boot_line(), OLD_XID), stored)[0] == ["Xid 79 on 0000:00:06"]


def test_the_cursor_reads_back_from_its_file(tmp_path):
    _, cursor = _read(_kmsg(_boot_line(), OLD_XID), None)
    assert health.write_cursor(str(tmp_path / "cursor.json"), cursor) is None
    assert health.read_cursor(str(tmp_path / "cursor.json"), BOOT) == health.Cursor(BOOT, 1)
    assert health.read_cursor(str(tmp_path / "missing.json"), BOOT) is None
    (tmp_path / "bad.json").write_text("{")
    assert health.read_cursor(str(tmp_path / "bad.json"), BOOT) is None
    (tmp_path / "stamp.json").write_text(json.dumps({"boot_id": BOOT, "stamp": 969.1, "at_stamp": 1}))
    assert health.read_cursor(str(tmp_path / "stamp.json"), BOOT) is None  # the earlier format


def test_an_empty_log_leaves_the_cursor_where_it_was():
    cursor = health.Cursor(BOOT, 41)
    assert health.records_after([], cursor, BOOT) == ("", cursor)


def test_kmsg_is_read_until_eagain_and_on_past_epipe(tmp_path):
    """/dev/kmsg gives one record a read(2), EPIPE where the ring buffer overwrote the record the
    reader was at (the next read returns the oldest one left), EAGAIN once every record is read
    (opened O_NONBLOCK: no wait for the next one)."""
    (tmp_path / "kmsg").write_text("")
    answers = [
        b"6,3,10,-;eth0: link up\n",
        BrokenPipeError(),
        b"4,9,20,-;" + OLD_XID.encode() + b"\n",
        b" SUBSYSTEM=pci\n",
        BlockingIOError(),
        b"6,10,30,-;never read\n",
    ]

    def read(fd, size):
        answer = answers.pop(0)
        if isinstance(answer, OSError):
            raise answer
        return answer

    records = health.read_kmsg(str(tmp_path / "kmsg"), health.Deadline(5.0), read=read)
    assert records == [(3, "eth0: link up"), (9, OLD_XID)]
    assert len(answers) == 1


def test_a_file_of_kmsg_records_is_read_to_its_end(tmp_path):
    """What the real-Slurm tests mount at KMSG (tests/support/local_slurm.py)."""
    (tmp_path / "kmsg").write_text(_kmsg(_boot_line(), OLD_XID))
    assert health.read_kmsg(str(tmp_path / "kmsg"), health.Deadline(5.0)) == [(0, _boot_line()), (1, OLD_XID)]
    assert health.read_kmsg(str(tmp_path / "missing"), health.Deadline(5.0)) is None


def _fake_dmesg(tmp_path, monkeypatch, text: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "dmesg.txt").write_text(text)
    (bin_dir / "dmesg").write_text(f"#!/bin/sh\nexec cat {tmp_path / 'dmesg.txt'}\n")
    (bin_dir / "dmesg").chmod(0o755)
    monkeypatch.setattr(health, "PATH", f"{bin_dir}:/usr/bin:/bin")


def test_without_kmsg_dmesg_is_read_whole_and_the_cursor_never_moves(tmp_path, monkeypatch, capsys):
    """dmesg numbers nothing: the check reads the whole log at every run (an Xid counted again) and
    says so, rather than guess a position from stamps or line counts."""
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "no-kmsg"))
    _fake_dmesg(tmp_path, monkeypatch, _kernel_log() + f"[  969.100000] {OLD_XID}\n")
    cursor = health.Cursor(BOOT, 41)
    for _ in range(2):
        seen, after = health.probe(
            ONE_H200, "h200-0", root=str(tmp_path), deadline=health.Deadline(5.0), cursor=cursor, boot=BOOT
        )
        assert health.xid_faults(seen.kernel_log) == ["Xid 79 on 0000:00:06"] and after == cursor
    assert (
        "cannot be opened: the kernel log is read with dmesg, whole at every run" in capsys.readouterr().err
    )


def test_an_xid_drain_is_held_when_a_later_run_sees_nothing_wrong():
    """The line was counted by the run that drained; the GPU may still be broken: an
    administrator resumes the node once it is handled."""
    update = health.update_of("h200-0", [], _state("IDLE+DRAIN", "health: Xid 79 on 0000:00:06"), WHEN)
    assert "state=undrain" not in update and not any(a.startswith("reason=") for a in update)
    assert update[3] == (
        f"comment=health {WHEN}: ok (Xid 79 on 0000:00:06 holds the drain until the node is resumed)"
    )


def test_an_xid_stays_in_the_reason_when_the_checks_other_faults_change():
    state = _state("IDLE+DRAIN", "health: 0 of 1 GPUs in /dev; Xid 79 on 0000:00:06")
    assert health.update_of("h200-0", [], state, WHEN)[-2:] == [
        "state=drain",
        "reason=health: Xid 79 on 0000:00:06",
    ]
    update = health.update_of("h200-0", ["nvidia-smi failed"], state, WHEN)
    assert update[-1] == "reason=health: nvidia-smi failed; Xid 79 on 0000:00:06"


def test_a_resumed_node_with_no_new_xid_stays_in_service():
    """The reviewer's case: the GPU reset, the administrator resumed the node; the old Xid record is
    behind the cursor, so this run finds nothing and drains nothing."""
    records = health.parse_kmsg(_kmsg(_boot_line(), OLD_XID))
    _, cursor = health.records_after(records, None, BOOT)
    faults = health.faults_of(ONE_H200, real(kernel_log=health.records_after(records, cursor, BOOT)[0]))
    update = health.update_of("h200-0", faults, _state("IDLE"), WHEN)
    assert faults == [] and not any(a.startswith("state=") for a in update)


def test_the_cursor_moves_on_only_once_the_xid_is_in_a_health_drain():
    xid = ["Xid 79 on 0000:00:06"]
    assert health.consumes_xids(xid, _state("IDLE"))  # drained now
    assert health.consumes_xids(xid, _state("IDLE+DRAIN", "health: Xid 79 on 0000:00:06"))
    assert not health.consumes_xids(xid, None)  # not known yet
    assert not health.consumes_xids(xid, _state("IDLE+DRAIN", "disk swap"))  # another's drain
    assert health.consumes_xids([], _state("IDLE+DRAIN", "disk swap"))


def _expected(tmp_path) -> str:
    expected = tmp_path / "expected.json"
    expected.write_text(
        json.dumps(
            {"pool": "h200", "gpus": 0, "gpu_model": H200, "efa_interfaces": 0, "shared": str(tmp_path)}
        )
    )
    return str(expected)


def test_a_dry_run_leaves_the_cursor_where_it_was(tmp_path, monkeypatch):
    (tmp_path / "kmsg").write_text(_kmsg(_boot_line(), OLD_XID))
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "kmsg"))
    state = tmp_path / "cursor.json"
    health.main(["--expected", _expected(tmp_path), "--node", "h200-0", "--state", str(state), "--dry-run"])
    assert not state.exists()


# -- the cursor on the node (it outlasts the pod) ----------------------------------------------


def test_the_cursor_file_is_in_the_nodes_directory_the_nodeset_mounts():
    """The reviewer's case: in slurmd's spool (the container's writable layer) the cursor was gone
    with every pod replacement, and the new pod re-drained the node for an Xid already resumed."""
    assert posixpath.dirname(health.STATE_FILE) == node_health.STATE_DIR
    assert not health.STATE_FILE.startswith("/var/spool/")
    assert node_health.state_volume()["hostPath"] == {
        "path": node_health.STATE_DIR,
        "type": "DirectoryOrCreate",
    }
    assert node_health.state_mount() == {"name": node_health.STATE_VOLUME, "mountPath": node_health.STATE_DIR}


def test_a_new_pod_on_the_node_does_not_count_a_recorded_xid_again(tmp_path, monkeypatch):
    """Two runs of main() with the same node directory (two pods of one node, one boot): the first
    drains for the Xid and records the cursor; the second, after the resume, sees nothing new."""
    (tmp_path / "kmsg").write_text(_kmsg(_boot_line(), OLD_XID))
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "kmsg"))
    monkeypatch.setattr(health, "boot_id", lambda root="": BOOT)
    updates = []

    def run(argv, timeout=health.COMMAND_TIMEOUT):
        if argv[0] != "scontrol":
            return 0, ""  # nvidia-smi on a node of no GPUs
        if argv[1] == "-o":
            return 0, scontrol_line("h200-0", "IDLE")
        updates.append(argv)
        return 0, ""

    monkeypatch.setattr(health, "_run", run)
    monkeypatch.setattr(health, "_shared_error", lambda path, node: None)
    args = [
        "--expected",
        _expected(tmp_path),
        "--node",
        "h200-0",
        "--state",
        str(tmp_path / "node" / "xid.json"),
    ]
    (tmp_path / "node").mkdir()
    assert health.main(args) == 1 and updates[-1][-1] == "reason=health: Xid 79 on 0000:00:06"
    assert health.main(args) == 0 and not any(a.startswith("state=") for a in updates[-1])


# -- a child that does not die ----------------------------------------------------------------


class _StuckChild:
    """A Popen whose child ignores the timeout's kill: in uninterruptible sleep (an nvidia-smi
    inside the driver for a GPU that fell off the bus), SIGKILL takes effect only once the kernel
    call returns. wait() without a limit would block; here it blocks for HANG seconds."""

    HANG = 4.0
    made: list["_StuckChild"] = []

    def __init__(self, argv, **kwargs):
        self.args, self.waits, self.killed = argv, [], False
        self.returncode, self.stdout, self.stderr, self.stdin, self.pid = None, None, None, None, 424242
        _StuckChild.made.append(self)

    def communicate(self, input=None, timeout=None):
        time.sleep(timeout or 0)
        raise subprocess.TimeoutExpired(self.args, timeout)

    def kill(self):
        self.killed = True

    def terminate(self):
        self.killed = True

    def poll(self):
        return None

    def wait(self, timeout=None):
        self.waits.append(timeout)
        time.sleep(self.HANG if timeout is None else min(timeout, self.HANG))
        if timeout is not None and timeout < self.HANG:
            raise subprocess.TimeoutExpired(self.args, timeout)
        self.returncode = -9
        return -9

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_child_that_outlives_its_kill_is_abandoned_after_a_bounded_wait(monkeypatch):
    """The reviewer's case: subprocess.run kills the child at the timeout and then waits for it with
    no limit, so a check with a stuck nvidia-smi ran into slurmd's kill and drained nothing."""
    _StuckChild.made.clear()
    monkeypatch.setattr(subprocess, "Popen", _StuckChild)
    start = time.monotonic()
    rc, out = health._run(["nvidia-smi", "-q"], 0.5)
    took = time.monotonic() - start
    assert (rc, out) == (124, "nvidia-smi did not answer in 0.5 s")
    (child,) = _StuckChild.made
    assert child.killed and child.waits and all(w is not None and w <= health.KILL_WAIT for w in child.waits)
    assert took < 0.5 + health.KILL_WAIT + 0.5, took


# -- telling Slurm ----------------------------------------------------------------------------


def test_each_scontrol_call_has_slurms_message_timeout_and_the_report_both():
    """scontrol waits MessageTimeout (10 s by default, slurm.conf(5) at slurm-26-05-3-1) for
    slurmctld; the release sets none, so that default is what the calls must allow for."""
    assert health.SLURM_MESSAGE_TIMEOUT == 10.0
    assert "MessageTimeout" not in node_health.slurm_conf()
    assert "MessageTimeout" not in (REPO / "model/builders/slurm_values.py").read_text()
    assert health.SCONTROL_TIMEOUT > health.SLURM_MESSAGE_TIMEOUT
    assert health.REPORT_SECONDS >= 2 * health.SCONTROL_TIMEOUT
    assert health.REPORT_SECONDS < health.BUDGET


def _main_with_show(tmp_path, monkeypatch, shown: tuple[int, str]) -> tuple[int, list[list[str]]]:
    (tmp_path / "kmsg").write_text(_kmsg(_boot_line()))
    monkeypatch.setattr(health, "KMSG", str(tmp_path / "kmsg"), raising=False)
    calls = []

    def run(argv, timeout=health.COMMAND_TIMEOUT):
        calls.append(argv)
        if argv[0] != "scontrol":
            return 0, ""  # nvidia-smi on a node of no GPUs
        return shown if argv[1] == "-o" else (0, "")

    monkeypatch.setattr(health, "_run", run)
    monkeypatch.setattr(health, "_shared_error", lambda path, node: None)
    rc = health.main(
        ["--expected", _expected(tmp_path), "--node", "h200-0", "--state", str(tmp_path / "s.json")]
    )
    return rc, [c for c in calls if c[0] == "scontrol"]


def test_a_show_node_that_times_out_is_a_failure_of_its_own_not_an_unknown_node(
    tmp_path, monkeypatch, capsys
):
    rc, calls = _main_with_show(tmp_path, monkeypatch, (124, "scontrol did not answer in 15.0 s"))
    assert rc == 3 and len(calls) == 1
    out = capsys.readouterr()
    assert "scontrol show node h200-0 failed (exit 124): nothing recorded: scontrol did not answer" in out.err
    assert "not known to Slurm" not in out.out


def test_a_show_node_that_cannot_reach_slurmctld_is_a_failure(tmp_path, monkeypatch):
    rc, calls = _main_with_show(
        tmp_path, monkeypatch, (1, "slurm_load_node error: Unable to contact slurm controller")
    )
    assert rc == 3 and len(calls) == 1


def test_a_node_slurm_does_not_know_is_said_so_and_nothing_recorded(tmp_path, monkeypatch, capsys):
    """What scontrol says for a node it does not know: exit 1, "Node NAME not found"
    (src/scontrol/info_node.c at slurm-26-05-3-1)."""
    rc, calls = _main_with_show(tmp_path, monkeypatch, (1, "Node h200-0 not found\n"))
    assert rc == 0 and len(calls) == 1
    assert "node h200-0 is not known to Slurm yet: nothing recorded" in capsys.readouterr().out
