"""cluster_programs/node_health.py's judgement, over the real H200 output (tests/data/h200-health,
driver 580.159.04: its README says how each file was captured) and faults written into it."""
import json
import re

import pytest

from cluster_programs import node_health as health
from cluster_programs import rollout
from model.catalog import CATALOG
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
    return re.findall(r"^Model:\s*(.+?)\s*$", (DATA / "proc-driver-nvidia-gpu-information.txt").read_text(), re.M)


def _kernel_log() -> str:
    """The captured dmesg's first line (the capture shows grep found no Xid in the rest)."""
    return re.search(r"^\[.*$", (DATA / "kernel-log.txt").read_text(), re.M).group(0) + "\n"


def real(**changes) -> health.Observed:
    seen = dict(dev_gpus=_dev_gpus(), proc_models=_proc_models(), smi=ECC_QUERY, kernel_log=_kernel_log(),
                efa_devices=[], shared_error=None)
    return health.Observed(**{**seen, **changes})


def _set(text: str, section: str, key: str, value: str) -> str:
    """`text` with the first `key` line after the `section` heading set to `value`."""
    head = text.index(section)
    line = re.compile(rf"^(\s*{re.escape(key)}\s+: ).*$", re.M).search(text, head)
    assert line, (section, key)
    return text[:line.start()] + line.group(1) + value + text[line.end():]


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
    assert health.memory_faults(health.parse_query(smi)) == ["GPU 00000000:00:06.0 1 SRAM Uncorrectable SEC-DED"]


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
    older = ("GPU 00000000:00:1E.0\n    ECC Errors\n        Volatile\n            Single Bit\n"
             "                Device Memory                   : 3\n                Total                           : 3\n"
             "            Double Bit\n                Device Memory                   : 1\n"
             "                Total                           : 1\n        Aggregate\n            Double Bit\n"
             "                Total                           : 7\n")
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
    assert faults == ["1 of 8 GPUs in /dev", "1 of 8 GPUs in /proc/driver/nvidia", "1 of 8 GPUs in nvidia-smi"]


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
    info = ("36 35 98:0 /mnt1 /shared rw,noatime master:1 - nfs4 fs-1.efs:/ rw\n"
            "37 35 98:0 /x /mnt/with\\040space rw - ext4 /dev/root rw\n")
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
        "scontrol", "update", "nodename=h200-0", f"comment=health {WHEN}: ok"]


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
    update = health.update_of("h200-0", ["Xid 79 on 0000:00:06"],
                              _state("IDLE+DRAIN", "health: 0 of 1 GPUs in /dev"), WHEN)
    assert update[-2:] == ["state=drain", "reason=health: Xid 79 on 0000:00:06"]


def test_the_checks_own_drain_with_the_same_fault_is_not_drained_again():
    update = health.update_of("h200-0", ["Xid 79 on 0000:00:06"],
                              _state("IDLE+DRAIN", "health: Xid 79 on 0000:00:06"), WHEN)
    assert not any(a.startswith("state=") for a in update)


def test_a_fault_quoting_an_equals_sign_reads_back_whole_from_scontrol():
    fault = "nvidia-smi failed: NVML rc=9"
    update = health.update_of("h200-0", [fault], _state("IDLE"), WHEN)
    line = scontrol_line("h200-0", "IDLE+DRAIN", update[-1].removeprefix("reason="),
                         comment=update[3].removeprefix("comment="))
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
