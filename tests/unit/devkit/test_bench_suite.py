"""devkit/bench_suite.py on a repository whose make target only records where it ran: clones of
the commit asked for, N fresh and N warm runs (plus the run that makes the warm clone warm), the
clones deleted, a markdown table of median and range."""

import shutil
import subprocess

import pytest

from devkit import bench_suite

needs_tools = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make"
)


@pytest.fixture
def source(tmp_path):
    repo = tmp_path / "source"
    repo.mkdir()
    ran = tmp_path / "ran"
    (repo / "Makefile").write_text(f"bench:\n\tpwd >> {ran}\n\tcat marker >> {ran}\nbroken:\n\texit 3\n")
    (repo / "marker").write_text("first\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    first = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (repo / "marker").write_text("second\n")
    subprocess.run([*git, "commit", "-qam", "second"], check=True)
    return repo, first, ran


@needs_tools
def test_fresh_and_warm_runs_of_the_commit_asked_for(source, tmp_path, capsys):
    repo, first, ran = source
    clones = tmp_path / "clones"
    clones.mkdir()
    assert (
        bench_suite.main(
            [
                "--source",
                str(repo),
                "--commit",
                first,
                "--fresh",
                "2",
                "--warm",
                "2",
                "--target",
                "bench",
                "--beside",
                str(clones),
                "--logs",
                str(tmp_path / "logs"),
            ]
        )
        == 0
    )
    lines = ran.read_text().splitlines()
    dirs, markers = lines[::2], lines[1::2]
    assert markers == ["first"] * 4  # 2 fresh, 2 warm
    assert len(set(dirs)) == 2 and set(dirs[2:]) == {dirs[1]}  # the warm runs: in the last fresh clone
    assert list(clones.iterdir()) == []  # every clone deleted
    out = capsys.readouterr().out
    assert "| fresh clone | 2 |" in out and "| warm | 2 |" in out and first[:12] in out


@needs_tools
def test_a_failing_target_stops_the_benchmark_naming_it(source, tmp_path):
    repo, _, _ = source
    with pytest.raises(SystemExit, match="make broken in .* exited with 2"):
        bench_suite.main(
            [
                "--source",
                str(repo),
                "--fresh",
                "1",
                "--warm",
                "0",
                "--target",
                "broken",
                "--beside",
                str(tmp_path),
                "--logs",
                str(tmp_path / "logs"),
            ]
        )


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--fresh", "-1"], "--fresh -1: a number of runs, 0 or more"),
        (["--commit", "no-such-rev"], "--commit no-such-rev: not a commit"),
    ],
)
def test_bad_arguments_name_the_option_and_what_is_allowed(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        bench_suite.main([*argv, "--beside", str(tmp_path), "--logs", str(tmp_path / "logs")])
    assert message in capsys.readouterr().err


def test_the_table_gives_median_and_range():
    assert bench_suite.table([300.0, 350.4, 320.0], []).splitlines()[2:] == [
        "| fresh clone | 3 | 320 s | 300-350 s |",
        "| warm | 0 | - | - |",
    ]


@needs_tools
def test_warm_runs_alone_warm_a_clone_first(source, tmp_path, capsys):
    repo, _, ran = source
    assert (
        bench_suite.main(
            [
                "--source",
                str(repo),
                "--fresh",
                "0",
                "--warm",
                "1",
                "--target",
                "bench",
                "--beside",
                str(tmp_path),
                "--logs",
                str(tmp_path / "logs"),
            ]
        )
        == 0
    )
    assert ran.read_text().splitlines()[1::2] == ["second", "second"]  # HEAD: one to warm up, one measured
    assert "| fresh clone | 0 | - | - |" in capsys.readouterr().out
