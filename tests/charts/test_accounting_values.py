"""The Accounting custom resource chart 1.2.1 renders from the program's values: slurmdbd pointed
at the RDS database and the password Secret, its container checked like every other Slinky
container (the chart copies it whole: tests/support/chart_walk.py COPIED_WHOLE)."""

from model.facts.contract import ACCOUNTING_PASSWORD_KEY, ACCOUNTING_PASSWORD_SECRET
from tests.charts.test_rendered_charts import by_name, rerender
from tests.support import chart_walk
from tests.support import rendered_checks as rc
from tests.support.slinky_conf import Release


def test_the_accounting_resource_points_slurmdbd_at_the_database_and_the_secret(dev, rendered):
    spec = by_name(rendered["slurm"], "Accounting", "slurm")["spec"]
    assert spec["storageConfig"] == dev.named("slurm-release").inputs["values"]["accounting"]["storageConfig"]
    assert spec["storageConfig"]["passwordKeyRef"] == {
        "name": ACCOUNTING_PASSWORD_SECRET,
        "key": ACCOUNTING_PASSWORD_KEY,
    }


def test_the_controller_refers_to_the_accounting_resource(rendered):
    # With it, the operator writes AccountingStorageType=accounting_storage/slurmdbd into slurm.conf
    # (SlinkyProject/slurm-operator v1.2.1 internal/builder/controllerbuilder/controller_config.go).
    assert by_name(rendered["slurm"], "Controller", "slurm")["spec"]["accountingRef"]["name"] == "slurm"


def test_kubernetes_check_catches_a_misspelling_inside_the_slurmdbd_container(dev):
    objects = rerender(dev, "slurm", lambda v: v["accounting"]["slurmdbd"].update(securityContxt={}))
    problems = rc.embedded_kubernetes_problems(by_name(objects, "Accounting", "slurm"), "1.36")
    assert len(problems) == 1 and problems[0].startswith("Accounting/slurm.spec.slurmdbd:")
    assert "securityContxt" in problems[0]


def test_the_walk_still_refuses_an_unknown_accounting_key_outside_the_copied_blocks(dev):
    values = dev.named("slurm-release").inputs["values"]
    misspelled = {
        **values,
        "accounting": {
            **values["accounting"],
            "storageConfig": {**values["accounting"]["storageConfig"], "hots": "x"},
        },
    }
    assert chart_walk.unknown_keys(misspelled, chart_walk.load_chart()) == ["accounting.storageConfig.hots"]


def test_slurmctld_sends_its_records_to_the_accounting_service(rendered):
    # The Service the operator puts in front of slurmdbd: <Accounting name>-accounting, port 6819
    # (SlinkyProject/slurm-operator v1.2.1 api/v1beta1/accounting_keys.go, ServiceKey).
    conf = Release.from_documents(rendered["slurm"]).slurm_conf()
    assert (
        "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=slurm-accounting\n"
        "AccountingStoragePort=6819\n" in conf
    )
