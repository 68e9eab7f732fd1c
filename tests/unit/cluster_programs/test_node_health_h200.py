"""The shipped node health check on the real H200: the output of
tests/support/gpu_health_evidence.sh on the lent machine (tests/data/h200-health/README.md, "The
health check on the H200"). It passed as the machine was, and failed with the named reason once
its GPU was hidden from /dev, from /proc/driver/nvidia, or both, and once an Xid line was in the
real kernel log (/dev/kmsg); and what it said then is what the check's judgement says today of what
each run saw. No Slurm runs there: as slurmd runs it, the check cannot read its node and exits 3
(NO_SLURM), after its verdict; `--dry-run` asks Slurm nothing and exits with the judgement."""

import re

import pytest

from cluster_programs import node_health as health
from tests.support.paths import REPO

DATA = REPO / "tests/data/h200-health"
EXPECTED = health.Expected.from_json((DATA / "health-check-expected.json").read_text())
ECC_QUERY = (DATA / "nvidia-smi-q-ecc-row-remapper.txt").read_text()
# One verdict line per run: "health <UTC time>: ok" or "health <UTC time>: <fault>; <fault>".
VERDICT = re.compile(r"^health (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ): (.+)$", re.M)
# Without /dev/nvidia0 (in a read-only /dev) `nvidia-smi -q` fails too; without the procfs entry
# alone it still answers (tests/data/h200-health/hidden-gpu-nvidia-smi.txt).
NO_SMI = "nvidia-smi failed: No devices were found"
SCENARIOS = {
    "check-pass.txt": "ok",
    "check-hidden-dev.txt": f"0 of 1 GPUs in /dev; {NO_SMI}",
    "check-hidden-proc.txt": "0 of 1 GPUs in /proc/driver/nvidia",
    "check-hidden-both.txt": f"0 of 1 GPUs in /dev; 0 of 1 GPUs in /proc/driver/nvidia; {NO_SMI}",
}
# The exit status of a run that cannot read its node from Slurm (node_health.py main).
NO_SLURM = 3


def _runs(name: str) -> list[tuple[str, int]]:
    """(verdict, exit status) of each run in a scenario's output: as slurmd runs it, then --dry-run."""
    text = (DATA / name).read_text()
    verdicts = [v for _, v in VERDICT.findall(text)]
    codes = [int(c) for c in re.findall(r"^exit=(\d+)$", text, re.M)][1:]  # the first is nvidia-smi -L's
    return list(zip(verdicts, codes, strict=True))


def _listed(name: str, command: str) -> list[str]:
    """The lines a scenario's output shows under `$ <command>`, up to the next command."""
    block = (DATA / name).read_text().split(f"$ {command}\n", 1)[1]
    return [line for line in block.split("$ ", 1)[0].splitlines() if line and not line.startswith("exit=")]


def test_the_evidence_ran_on_one_h200_with_the_one_h200_expectations():
    env = (DATA / "environment.txt").read_text()
    assert "# gpu: NVIDIA H200, 580." in env
    # The run printed the file with its blanks taken out.
    printed = env.split("# expected.json: ", 1)[1].splitlines()[0]
    assert printed == "".join((DATA / "health-check-expected.json").read_text().split())
    assert (EXPECTED.gpus, EXPECTED.gpu_model, EXPECTED.efa_interfaces) == (1, "NVIDIA H200", 0)


def test_the_check_passes_on_the_real_h200_as_slurmd_runs_it():
    assert _runs("check-pass.txt") == [("ok", NO_SLURM), ("ok", 0)]


def test_a_run_that_cannot_read_its_node_says_so_and_records_nothing():
    assert (
        "scontrol show node h200-0 failed (exit 127): nothing recorded"
        in (DATA / "check-pass.txt").read_text()
    )


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "check-pass.txt"])
def test_a_hidden_gpu_fails_the_check_with_the_named_reason(name):
    assert _runs(name) == [(SCENARIOS[name], NO_SLURM), (SCENARIOS[name], 1)]


def test_an_xid_in_the_real_kernel_log_fails_the_check_naming_it():
    # ok before; an Xid 79 record written to /dev/kmsg; then the dry run and slurmd's run name it.
    text = (DATA / "check-kmsg-xid.txt").read_text()
    verdicts = [v for _, v in VERDICT.findall(text)]
    codes = [int(c) for c in re.findall(r"^exit=(\d+)", text, re.M)]
    assert verdicts == ["ok", "Xid 79 on 0000:00:06", "Xid 79 on 0000:00:06"]
    assert codes == [0, 0, 1, NO_SLURM]  # the dry run, the write to /dev/kmsg, the dry run, slurmd's
    assert "] NVRM: Xid (PCI:0000:00:06): 79, pid=1" in text  # dmesg printed the record


def test_the_xid_the_h200_run_wrote_is_what_the_judgement_calls_a_hardware_fault():
    line = "NVRM: Xid (PCI:0000:00:06): 79, pid=1, GPU has fallen off the bus.\n"
    assert health.xid_faults(line) == ["Xid 79 on 0000:00:06"]


def test_the_gpu_was_hidden_only_from_what_each_scenario_names():
    shown = {
        name: (_listed(name, "ls /dev | grep '^nvidia'"), _listed(name, "ls /proc/driver/nvidia/gpus"))
        for name in SCENARIOS
    }
    assert "nvidia0" in shown["check-pass.txt"][0] and shown["check-pass.txt"][1] == ["0000:00:06.0"]
    assert "nvidia0" not in shown["check-hidden-dev.txt"][0] and shown["check-hidden-dev.txt"][1]
    assert "nvidia0" in shown["check-hidden-proc.txt"][0] and not shown["check-hidden-proc.txt"][1]
    assert "nvidia0" not in shown["check-hidden-both.txt"][0] and not shown["check-hidden-both.txt"][1]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_todays_judgement_says_of_each_run_what_the_check_said_on_the_h200(name):
    # What the run saw, from its own listing: the /dev names, one H200 per procfs entry, and the
    # real ECC/row-remapper query wherever nvidia-smi still listed the GPU, and where it did not,
    # the error `nvidia-smi -q` gave there.
    dev = [n for n in _listed(name, "ls /dev | grep '^nvidia'") if re.fullmatch(r"nvidia\d+", n)]
    procfs = _listed(name, "ls /proc/driver/nvidia/gpus")
    listed_by_smi = [line for line in _listed(name, "nvidia-smi -L") if line.startswith("GPU ")]
    seen = health.Observed(
        dev_gpus=dev,
        proc_models=[EXPECTED.gpu_model] * len(procfs),
        smi=ECC_QUERY if len(listed_by_smi) == 1 else None,
        smi_error="" if listed_by_smi else "No devices were found",
        kernel_log="",
        efa_devices=[],
        shared_error=None,
    )
    faults = health.faults_of(EXPECTED, seen)
    assert ("; ".join(faults) or "ok") == SCENARIOS[name]
