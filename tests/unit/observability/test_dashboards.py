"""The dashboards (observability/dashboards/*.json) as Grafana provisions them, and every query of
the dashboards and the rules held to the series the exporters really export: the DCGM exporter's
from observability/dcgm-counters.csv, slurmctld's from its captured output (tests/data/slurm-metrics/,
tests/support/capture_slurm_metrics.py; tests/slurm/test_metrics.py runs them on the live one)."""

from __future__ import annotations

import re

import pytest

from model.builders.metrics import DATASOURCE_UID, DCGM_COUNTERS_FILE
from tests.support.observability_queries import (
    Query,
    dashboard_queries,
    dashboards,
    exported_dcgm_series,
    is_gpu_query,
    recorded_names,
    rule_queries,
    series_names,
    unexported_gpu_series,
)
from tests.support.paths import REPO

CAPTURED = REPO / "tests/data/slurm-metrics"


def _all_queries() -> list[Query]:
    return dashboard_queries() + rule_queries()


def test_there_is_a_cluster_and_a_gpu_dashboard_each_with_a_unique_uid():
    boards = dashboards()
    assert {"slurm-cluster.json", "gpus.json"} <= set(boards)
    uids = [b["uid"] for b in boards.values()]
    assert len(set(uids)) == len(uids) and all(uids)


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_every_panel_and_variable_queries_the_stacks_datasource(name):
    board = dashboards()[name]
    wrong = []
    for panel in board["panels"]:
        if panel["type"] == "text":
            continue
        if panel.get("datasource", {}).get("uid") != DATASOURCE_UID:
            wrong.append(f"panel {panel['title']!r}")
        wrong += [
            f"panel {panel['title']!r} target {t['refId']}"
            for t in panel["targets"]
            if t.get("datasource", {}).get("uid") != DATASOURCE_UID or not t.get("expr")
        ]
    wrong += [
        f"variable {v['name']}"
        for v in board["templating"]["list"]
        if v.get("datasource", {}).get("uid") != DATASOURCE_UID
    ]
    assert not wrong, f"{name}: not on datasource uid {DATASOURCE_UID!r}: {wrong}"


@pytest.mark.parametrize("name", sorted(dashboards()))
def test_every_panel_has_a_unique_id_and_fits_the_grid(name):
    panels = dashboards()[name]["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    assert all(0 <= p["gridPos"]["x"] and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)


def test_every_gpu_query_names_only_series_the_pinned_exporter_exports():
    gpu = [q for q in _all_queries() if is_gpu_query(q)]
    assert len(gpu) > 10
    assert unexported_gpu_series(gpu) == []


def test_a_gpu_query_naming_an_unexported_series_is_found():
    # The encoder utilisation is in the image's default list, and left out of ours on purpose.
    assert "DCGM_FI_DEV_ENC_UTIL" not in exported_dcgm_series(DCGM_COUNTERS_FILE.read_text())
    query = Query("a panel", 'avg by (Hostname) (DCGM_FI_DEV_ENC_UTIL{Hostname=~"$node"})')
    assert unexported_gpu_series([query]) == ["a panel: DCGM_FI_DEV_ENC_UTIL"]


def test_the_counters_file_names_only_fields_the_exporter_image_knows(shared_ref):
    """Each field is one of the image's default list, commented out or not: a misspelt field
    would make the exporter refuse the file."""
    known = set(
        re.findall(
            r"DCGM_FI_[A-Z0-9_]+", (shared_ref / "dcgm-exporter-4.5.3-4.8.2-default-counters.csv").read_text()
        )
    )
    chosen = exported_dcgm_series(DCGM_COUNTERS_FILE.read_text())
    assert chosen and chosen <= known, sorted(chosen - known)


def test_the_uncorrectable_ecc_alert_reads_a_field_the_counters_file_adds():
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in exported_dcgm_series(DCGM_COUNTERS_FILE.read_text())


def _captured_names() -> set[str]:
    return {
        m for p in CAPTURED.glob("*.txt") for m in re.findall(r"^([a-zA-Z_:][\w:]*)[{ ]", p.read_text(), re.M)
    }


def test_every_slurm_series_a_query_names_is_in_slurmctlds_real_output():
    captured = _captured_names()
    assert "slurm_partition_nodes_drained" in captured
    missing = [
        f"{q.where}: {n}"
        for q in _all_queries()
        if not is_gpu_query(q)
        for n in sorted(series_names(q.expr))
        if n != "up" and n not in captured | recorded_names()
    ]
    assert not missing, missing


def test_a_query_naming_a_series_slurmctld_does_not_export_is_found():
    names = series_names('sum by (partition) (slurm_partition_nodes_drainedd{partition=~"$partition"})')
    assert names == {"slurm_partition_nodes_drainedd"} and not names <= _captured_names()


@pytest.mark.parametrize(
    "expr, names",
    [
        (
            "sum(slurm_jobs_pending) / sum(rate(slurm_sdiag_jobs_started[5m]) > 0)",
            {"slurm_jobs_pending", "slurm_sdiag_jobs_started"},
        ),
        ("max by (partition) (a) > on (partition) b:c and on (partition) d > 0", {"a", "b:c", "d"}),
        ('min by (partition) ({__name__=~"x_down|x_drain"})', {"x_down", "x_drain"}),
        ("label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)", {"DCGM_FI_DEV_GPU_UTIL"}),
        ('up{job=~"slurmctld-.+|dcgm-exporter"} == 0', {"up"}),
    ],
)
def test_the_series_of_an_expression_are_read_apart_from_functions_labels_and_keywords(expr, names):
    assert series_names(expr) == names
