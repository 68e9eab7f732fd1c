"""tools/report.py: nccl-tests and fine-tune output as tables, charts and verdicts."""

import pytest

from tests.support.paths import DATA
from tools import report

PNG = b"\x89PNG\r\n\x1a\n"
# The walkthrough's fine-tune lines, as the trainer prints them.
WALKTHROUGH_FINETUNE = """\
{'loss': 2.214, 'mean_token_accuracy': 0.5411, 'epoch': 0.16}
{'loss': 2.103, 'mean_token_accuracy': 0.5530, 'epoch': 0.32}
{'loss': 1.98, 'mean_token_accuracy': 0.5764, 'epoch': 0.64}
{'loss': 1.871, 'mean_token_accuracy': 0.6144, 'epoch': 0.96}
{'train_loss': 1.798, 'mean_token_accuracy': 0.6144, 'epoch': 1}
Done. LoRA adapters saved to /shared/lora-out
"""


def test_nccl_report_writes_a_table_a_chart_and_a_verdict(tmp_path):
    ok = report.nccl_report(
        [DATA / "nccl-allreduce-8x-l4.log", DATA / "nccl-allgather-8x-l4.log"], "g6.12xlarge", tmp_path
    )
    assert ok
    md = (tmp_path / "nccl-report.md").read_text()
    assert "## all_reduce: PASS" in md and "## all_gather: PASS" in md
    assert "| 4294967296 |" in md and "of the 40 Gbps (5 GB/s) EFA line rate" in md
    assert (tmp_path / "nccl-busbw.png").read_bytes().startswith(PNG)


def test_chart_draws_the_catalogs_line_rate():
    result = report.nccl_tests.parse((DATA / "nccl-allreduce-8x-l4.log").read_text())
    fig = report.busbw_figure([("all_reduce", result)], "p5.48xlarge", True)
    (ax,) = fig.axes
    reference = [line for line in ax.lines if line.get_label().startswith("EFA line rate")]
    assert reference and list(reference[0].get_ydata()) == [400.0, 400.0]
    assert ax.get_xscale() == "log"


def test_nccl_report_fails_on_socket_fallback(tmp_path):
    assert not report.nccl_report([DATA / "nccl-allreduce-socket.log"], "g6.12xlarge", tmp_path)
    assert "## all_reduce: FAIL" in (tmp_path / "nccl-report.md").read_text()


def test_cli_exit_status(tmp_path):
    assert (
        report.main(
            [
                "nccl",
                str(DATA / "nccl-allreduce-wrong.log"),
                "--instance-type",
                "g6.12xlarge",
                "--out",
                str(tmp_path),
            ]
        )
        == 1
    )


def test_walkthrough_finetune_log_becomes_curves(tmp_path, capsys):
    log = tmp_path / "finetune-1.out"
    log.write_text(WALKTHROUGH_FINETUNE)
    assert report.finetune_report(log, tmp_path)
    summary = capsys.readouterr().out
    assert "loss 2.214 -> 1.871, train_loss 1.798, mean_token_accuracy 0.5411 -> 0.6144" in summary
    assert (tmp_path / "finetune-curves.png").read_bytes().startswith(PNG)


def test_metrics_lines_win_over_the_trainers_printed_dicts():
    text = (
        'METRICS {"step": 1, "loss": 5.9, "mean_token_accuracy": 0.1}\n'
        "{'loss': '5.906', 'mean_token_accuracy': '0.1', 'epoch': '0.03'}\n"
    )
    assert report.finetune_metrics(text) == [{"step": 1, "loss": 5.9, "mean_token_accuracy": 0.1}]


def test_string_numbers_from_transformers_5_are_read_as_numbers():
    assert report.finetune_metrics("{'loss': '5.906', 'epoch': '0.03125'}") == [
        {"loss": 5.906, "epoch": 0.03125}
    ]


def test_a_log_without_loss_lines_fails(tmp_path):
    log = tmp_path / "empty.out"
    log.write_text("Traceback (most recent call last):\n")
    assert not report.finetune_report(log, tmp_path)


@pytest.mark.parametrize("name", ["nccl-allreduce-8x-l4.log"])
def test_label_comes_from_the_binary_or_the_file_name(name):
    assert report._label(DATA / name, "") == "all_reduce"
    assert report._label(DATA / name, "# ./build/all_gather_perf -b 8") == "all_gather"


@pytest.mark.parametrize("kind", ["nccl", "finetune"])
def test_a_missing_log_is_one_line_and_exit_status_2(tmp_path, capsys, kind):
    missing = tmp_path / "nccl-allreduce-7.out"
    extra = ["--instance-type", "g6.12xlarge"] if kind == "nccl" else []
    assert report.main([kind, str(missing), *extra, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"report: {missing}: no such file; the jobs write /shared/work/<user>/<name>-<jobid>.out on "
        "the cluster: copy it here (e.g. scp <you>@<loginHostname>:/shared/work/<you>/<file> .)\n"
    )


def test_a_directory_given_as_log_is_refused(tmp_path, capsys):
    assert report.main(["finetune", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "not a file" in capsys.readouterr().err


def test_a_log_without_result_rows_fails_without_a_traceback(tmp_path, capsys):
    log = tmp_path / "nccl-allreduce-8.out"
    log.write_text("srun: error: Unable to create step for job 8\n")
    assert report.main(["nccl", str(log), "--instance-type", "g6.12xlarge", "--out", str(tmp_path)]) == 1
    assert "no result rows" in (tmp_path / "nccl-report.md").read_text()


# The real run on an H200 (tests/data/h200-run/README.md).
REAL = DATA / "h200-run"


def test_real_off_efa_run_reports_pass_with_its_table_and_chart(tmp_path):
    logs = [REAL / "nccl-allreduce-3.ranks.log", REAL / "nccl-allgather-4.ranks.log"]
    assert (
        report.main(
            [
                "nccl",
                *map(str, logs),
                "--instance-type",
                "p5en.48xlarge",
                "--expect-efa",
                "0",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    md = (tmp_path / "nccl-report.md").read_text()
    assert "## all_reduce: PASS" in md and "## all_gather: PASS" in md
    assert "| 536870912 | 288809.0 | 1.86 | 1.86 | 0 |" in md
    assert (tmp_path / "nccl-busbw.png").read_bytes().startswith(PNG)


def test_real_off_efa_run_reported_as_an_efa_cluster_fails(tmp_path):
    assert (
        report.main(
            [
                "nccl",
                str(REAL / "nccl-allreduce-3.ranks.log"),
                "--instance-type",
                "p5en.48xlarge",
                "--out",
                str(tmp_path),
            ]
        )
        == 1
    )
    assert "## all_reduce: FAIL" in (tmp_path / "nccl-report.md").read_text()


def test_real_finetune_log_becomes_curves(tmp_path, capsys):
    assert report.finetune_report(REAL / "finetune-6.out", tmp_path)
    assert "steps 8: loss 5.906 -> 5.839, train_loss 5.872" in capsys.readouterr().out
    assert (tmp_path / "finetune-curves.png").read_bytes().startswith(PNG)


def test_an_off_efa_chart_draws_no_line_rate_so_its_runs_stay_visible():
    result = report.nccl_tests.parse((REAL / "nccl-allreduce-3.ranks.log").read_text())
    (ax,) = report.busbw_figure([("all_reduce", result)], "p5en.48xlarge", True, expect_efa=False).axes
    assert not [line for line in ax.lines if line.get_label().startswith("EFA line rate")]
    assert ax.get_ylim()[1] < 10  # scaled to the 1.86 GB/s of the run, not to 400 GB/s
