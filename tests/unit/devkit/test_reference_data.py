"""devkit/reference_data.py: the tests find the upstream reference data at $SLINKY_EKS_REF, beside
the checkout (../shared/ref) or where `make reference-data` fetched it, say which, and a missing
place is an error naming it."""

import pytest

from devkit import reference_data


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    (tmp_path / "charts" / "slurm-1.2.1").mkdir(parents=True)
    (tmp_path / "pulumi-project.schema.json").write_text("{}")
    monkeypatch.setenv(reference_data.ENV, str(tmp_path))
    return tmp_path


def test_the_environment_variable_wins(elsewhere):
    assert reference_data.ref_root() == elsewhere
    assert reference_data.path("pulumi-project.schema.json") == elsewhere / "pulumi-project.schema.json"
    assert reference_data.chart_dir("slurm", "1.2.1") == elsewhere / "charts" / "slurm-1.2.1"


def test_a_slinky_chart_released_from_a_staged_branch_is_found_in_the_branch(elsewhere):
    branch = reference_data.RELEASE_BRANCHES["1.2.2"]
    (elsewhere / "charts" / branch.directory / "slurm-operator").mkdir(parents=True)
    assert reference_data.chart_dir("slurm-operator", "1.2.2") == (
        elsewhere / "charts" / branch.directory / "slurm-operator"
    )


def test_only_the_slinky_charts_are_looked_up_in_a_release_branch():
    assert reference_data.release_branch("slurm", "1.2.2") == reference_data.RELEASE_BRANCHES["1.2.2"]
    assert reference_data.release_branch("slurm", "1.2.1") is None
    assert reference_data.release_branch("cert-manager", "1.2.2") is None


def test_the_log_says_the_environment_variable_was_used(elsewhere):
    assert reference_data.source() == f"reference data: {elsewhere} ($SLINKY_EKS_REF)"


def test_without_the_variable_the_data_beside_the_checkout_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv(reference_data.ENV, raising=False)
    monkeypatch.setattr(reference_data, "BESIDE", tmp_path)
    assert reference_data.ref_root() == tmp_path
    assert reference_data.source() == f"reference data: {tmp_path} (beside the checkout)"


def test_a_missing_variable_target_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(reference_data.ENV, str(tmp_path / "nowhere"))
    with pytest.raises(reference_data.ReferenceDataMissing, match=r"not found at \$SLINKY_EKS_REF=.*nowhere"):
        reference_data.ref_root()


def test_without_a_copy_beside_the_checkout_the_fetched_one_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv(reference_data.ENV, raising=False)
    monkeypatch.setattr(reference_data, "BESIDE", tmp_path / "shared" / "ref")
    monkeypatch.setattr(reference_data, "FETCHED", tmp_path)
    assert reference_data.ref_root() == tmp_path
    assert reference_data.source() == f"reference data: {tmp_path} (fetched)"


def test_the_copy_beside_the_checkout_comes_before_the_fetched_one(tmp_path, monkeypatch):
    monkeypatch.delenv(reference_data.ENV, raising=False)
    (tmp_path / "beside").mkdir()
    (tmp_path / "fetched").mkdir()
    monkeypatch.setattr(reference_data, "BESIDE", tmp_path / "beside")
    monkeypatch.setattr(reference_data, "FETCHED", tmp_path / "fetched")
    assert reference_data.ref_root() == tmp_path / "beside"


def test_nothing_anywhere_says_how_to_fetch_it_or_point_elsewhere(tmp_path, monkeypatch):
    monkeypatch.delenv(reference_data.ENV, raising=False)
    monkeypatch.setattr(reference_data, "BESIDE", tmp_path / "shared" / "ref")
    monkeypatch.setattr(reference_data, "FETCHED", tmp_path / "cache" / "ref")
    with pytest.raises(
        reference_data.ReferenceDataMissing,
        match=r"set \$SLINKY_EKS_REF to use another place, or fetch it: make reference-data",
    ):
        reference_data.source()


def test_a_missing_file_is_named(elsewhere):
    with pytest.raises(
        reference_data.ReferenceDataMissing, match="slinky-1.2.1.*is missing from the reference data"
    ):
        reference_data.path("slinky-1.2.1", "helm", "slurm", "values.yaml")


def test_a_chart_without_an_upstream_copy_is_named(elsewhere):
    with pytest.raises(
        reference_data.ReferenceDataMissing, match="no reference chart for cert-manager v9.9.9"
    ):
        reference_data.chart_dir("cert-manager", "v9.9.9")


def test_the_test_log_says_when_the_data_is_missing(tmp_path, monkeypatch):
    from tests.conftest import pytest_report_header

    monkeypatch.setenv(reference_data.ENV, str(tmp_path / "nowhere"))
    assert pytest_report_header(None)[0].startswith(
        f"reference data: MISSING (reference data not found at $SLINKY_EKS_REF={tmp_path / 'nowhere'})"
    )
