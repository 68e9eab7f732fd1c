"""jobs/lib/nccl_tests.py: the verdict the nccl-tests jobs exit with (and the reports draw)."""

import subprocess
import sys

import pytest

from tests.support.jobs_lib import PATH, nccl_tests
from tests.support.paths import DATA


def _run(log, *args):
    return subprocess.run([sys.executable, str(PATH), str(DATA / log), *args], capture_output=True, text=True)


def test_parses_every_row_and_the_summary():
    result = nccl_tests.parse((DATA / "nccl-allreduce-8x-l4.log").read_text())
    assert len(result.rows) == 30 and result.rows[0].size == 8 and result.rows[-1].size == 4 * 2**30
    assert result.ranks == 8 and result.out_of_bounds == 0 and result.efa_lines == 8
    assert result.avg_busbw == pytest.approx(2.291)
    assert result.peak_busbw == pytest.approx(4.20)


def test_healthy_run_passes_and_reports_the_share_of_line_rate():
    out = _run("nccl-allreduce-8x-l4.log", "--line-rate-gbps", "40", "--expect-efa", "1")
    assert out.returncode == 0, out.stdout
    assert "84% of the 40 Gbps (5 GB/s) EFA line rate" in out.stdout and "NCCL-TESTS OK" in out.stdout


def test_all_gather_rows_parse_too():
    result = nccl_tests.parse((DATA / "nccl-allgather-8x-l4.log").read_text())
    assert len(result.rows) == 30 and result.peak_busbw == pytest.approx(4.64)


def test_wrong_values_fail_the_job():
    out = _run("nccl-allreduce-wrong.log", "--line-rate-gbps", "40", "--expect-efa", "1")
    assert out.returncode == 1 and "#wrong = 6 (must be 0)" in out.stdout
    assert "out of bounds values: 1 (must be 0)" in out.stdout


def test_socket_fallback_fails_the_job():
    out = _run("nccl-allreduce-socket.log", "--line-rate-gbps", "40", "--expect-efa", "1")
    assert out.returncode == 1
    assert "socket fallback: 8 NET/Socket lines" in out.stdout and "EFA provider never selected" in out.stdout


def test_an_empty_log_fails():
    ok, notes = nccl_tests.verdict(nccl_tests.parse("NCCL WARN something\n"), 40, True)
    assert not ok and notes == ["no result rows: the benchmark did not run"]


def test_wrong_column_na_counts_as_zero():
    line = (
        "     1048576        262144     float     sum      -1    512.3    2.05    3.58    N/A"
        "    510.9    2.05    3.59    N/A"
    )
    (row,) = nccl_tests.parse(line).rows
    assert row.wrong == 0 and row.busbw == 3.58


def test_ranks_that_missed_efa_fail_the_job():
    text = (DATA / "nccl-allreduce-8x-l4.log").read_text()
    lines = text.splitlines(keepends=True)
    efa = [i for i, line in enumerate(lines) if "Selected provider is efa" in line]
    ok, notes = nccl_tests.verdict(nccl_tests.parse("".join(lines[: efa[0]] + lines[efa[-1] :])), 40, True)
    assert not ok and "only 1 of 8 ranks selected the EFA provider" in notes


# nccl-tests v2.17.9 src/util.cu writeBenchmarkLineBody prints #wrong with "%6g" and times and
# bandwidths through getFloatStr, which uses "%7.1e" once a value has too many digits.
BIG_WRONG_ROW = (
    "  2147483648     536870912     float     sum      -1  1.2e+05   17.89   31.30  5.36871e+08"
    "  1.2e+05   17.90   31.33  5.36871e+08"
)


def test_wrong_counts_printed_with_g_fail_the_run_with_a_verdict():
    (row,) = nccl_tests.parse(BIG_WRONG_ROW).rows
    assert row.wrong == 2 * 536871000 and row.time_us == 1.2e5
    ok, notes = nccl_tests.verdict(
        nccl_tests.parse(BIG_WRONG_ROW + "\n# Out of bounds values : 0 OK\n"), None, False
    )
    assert not ok and "#wrong = 1073742000 (must be 0)" in notes


def test_a_run_with_g_counts_exits_with_the_verdict_not_a_traceback(tmp_path):
    log = tmp_path / "wrong.log"
    log.write_text(BIG_WRONG_ROW + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 31.3 \n")
    out = subprocess.run([sys.executable, str(PATH), str(log)], capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "NCCL-TESTS FAILED" in out.stdout


# The real run on an H200 (tests/data/h200-run/README.md): two ranks over TCP sockets, no EFA.
REAL = "h200-run"


def test_real_off_efa_all_reduce_parses_every_size_of_the_sweep():
    result = nccl_tests.parse((DATA / REAL / "nccl-allreduce-3.ranks.log").read_text())
    assert [r.size for r in result.rows] == [8 * 2**i for i in range(27)]  # 8 B .. 512 MiB
    assert result.ranks == 2 and result.out_of_bounds == 0
    assert result.peak_busbw == 1.86 and result.efa_lines == 0 and result.socket_lines == 14


def test_real_off_efa_runs_pass_with_sockets_as_their_transport():
    for log in ("nccl-allreduce-3.ranks.log", "nccl-allgather-4.ranks.log"):
        out = _run(f"{REAL}/{log}", "--line-rate-gbps", "3200", "--expect-efa", "0")
        assert out.returncode == 0, out.stdout
        assert "#wrong = 0 on every row" in out.stdout
        assert "transport: TCP sockets (14 NET/Socket lines; EFA not expected)" in out.stdout


def test_the_same_real_run_fails_where_efa_is_expected():
    out = _run(f"{REAL}/nccl-allreduce-3.ranks.log", "--line-rate-gbps", "3200", "--expect-efa", "1")
    assert out.returncode == 1
    assert (
        "socket fallback: 14 NET/Socket lines" in out.stdout and "EFA provider never selected" in out.stdout
    )


def test_a_real_run_whose_net_plugin_failed_has_no_rows_and_fails():
    out = _run(f"{REAL}/nccl-allreduce-2.ranks.log", "--line-rate-gbps", "3200", "--expect-efa", "1")
    assert out.returncode == 1 and "no result rows: the benchmark did not run" in out.stdout
    assert "Failed to initialize any NET plugin" in (DATA / REAL / "nccl-allreduce-2.ranks.log").read_text()


def test_expect_efa_defaults_to_the_jobs_environment(monkeypatch):
    log = str(DATA / REAL / "nccl-allreduce-3.ranks.log")
    monkeypatch.setenv("EXPECT_EFA", "0")
    assert nccl_tests.main([log]) == 0
    monkeypatch.setenv("EXPECT_EFA", "1")
    assert nccl_tests.main([log]) == 1
