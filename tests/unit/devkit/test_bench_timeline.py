"""devkit/bench_timeline.py's image build: its stages by builder and the deployer's link, the
sizes it moves, and its command line. The timeline of the real graph is
tests/graph/scenarios/test_up_timeline.py."""

import math

import pytest

from devkit import bench_timeline as bt

LAPTOP_20, LAPTOP_100, CI_RUNNER = bt.DEPLOYERS


def _stages(builder, deployer):
    return dict(bt.build_stages(builder, deployer))


def test_every_size_and_rate_names_its_source():
    said = [bt.DLC_PULLED, bt.DLC_UNPACKED, bt.IMAGE_PUSHED, bt.BUILD_WORK, bt.CODEBUILD_START, *bt.DEPLOYERS]
    assert all(len(x.source) > 20 for x in said) and len(bt.IN_REGION_SOURCE) > 20


def test_a_transfer_takes_size_times_eight_over_the_rate():
    # The figure: a 5 GB push at 20 Mbit/s is about 33 minutes.
    assert bt.transfer(bt.IMAGE_PUSHED, 20) == pytest.approx(2000)
    assert bt.transfer(5.0, math.inf) == 0


def test_a_local_build_pulls_over_the_downlink_and_pushes_over_the_uplink():
    asymmetric = bt.Deployer("asymmetric", 100, 10, "test")
    stages = _stages(bt.LOCAL, asymmetric)
    assert stages["pull the DLC over the deployer's downlink"] == pytest.approx(bt.DLC_PULLED.gigabytes * 80)
    assert stages["push the image over the deployer's uplink"] == pytest.approx(
        bt.IMAGE_PUSHED.gigabytes * 800
    )
    assert stages["build on the deployer's machine"] == bt.BUILD_WORK.seconds


def test_an_in_region_build_sends_only_the_context_over_the_deployers_link():
    slow, fast = bt.Deployer("slow", 1, 1, "test"), bt.INFINITE
    by_link = {d.name: _stages(bt.CODEBUILD, d) for d in (slow, fast)}
    changed = {k for k in by_link["slow"] if by_link["slow"][k] != by_link[fast.name][k]}
    assert changed == {"upload the build context (image/) over the uplink"}
    assert by_link["slow"]["pull the DLC inside AWS"] == pytest.approx(
        bt.transfer(bt.DLC_PULLED, bt.IN_REGION_MBITS)
    )


def test_the_context_is_measured_from_the_files(tmp_path):
    (tmp_path / "Dockerfile").write_bytes(b"x" * 1000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.sh").write_bytes(b"y" * 500)
    assert bt.context_gigabytes(tmp_path) == pytest.approx(1500 / 1e9)
    assert 0 < bt.context_gigabytes() < 1e-3  # image/ is tens of kB


def test_an_unknown_builder_is_refused_naming_the_builders():
    with pytest.raises(ValueError, match="builder 'docker': expected one of codebuild, local"):
        bt.build_stages("docker", LAPTOP_20)


def test_a_local_build_does_not_fit_on_a_github_hosted_runner():
    assert "15.5 GB unpacked" in bt.fits(bt.LOCAL, CI_RUNNER) and "14 GB" in bt.fits(bt.LOCAL, CI_RUNNER)
    assert bt.fits(bt.CODEBUILD, CI_RUNNER) is None and bt.fits(bt.LOCAL, LAPTOP_20) is None


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--link-down", "fast"], "argument --link-down: 'fast' is not a number of Mbit/s"),
        (["--link-up", "0"], "argument --link-up: '0': a link speed is a positive number of Mbit/s"),
        (["--link-up", "inf"], "argument --link-up: 'inf': a link speed is a positive number of Mbit/s"),
        (["--builder", "docker"], "argument --builder: invalid choice: 'docker' (choose from"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_status_2(argv, said, capsys):
    with pytest.raises(SystemExit) as exited:
        bt.main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and err.startswith(f"bench_timeline: {said}")
