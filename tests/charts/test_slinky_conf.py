"""The test cluster's Slurm configuration is the one the Slinky operator v1.2.1 builds from the
release the chart renders from the program's values (slinky_conf.py cites the operator's sources)."""

from __future__ import annotations

import copy

import pytest

from model.facts.contract import CONTROLLER_POD
from tests.support.slinky_conf import Release, merged_config, slurmd_conf


@pytest.fixture(scope="module")
def release(rendered) -> Release:
    return Release.from_documents(rendered["slurm"])


def test_slurm_conf_has_the_operators_auth_and_configless_keys(release):
    lines = release.slurm_conf().splitlines()
    for line in (
        "AuthType=auth/slurm",
        "CredType=cred/slurm",
        "AuthAltTypes=auth/jwt",
        "AuthInfo=use_client_ids",
        "SlurmctldParameters=enable_configless,reconfig_on_restart",
        "SlurmctldPort=6817",
        "SlurmdPort=6818",
        "SlurmctldHost=slurm-controller-0(slurm-controller.slurm)",
        "ClusterName=slurm_slurm",
    ):
        assert line in lines, line


def test_the_controller_is_named_as_the_operator_names_it(release):
    # SlinkyProject/slurm-operator v1.2.1 api/v1beta1/controller_keys.go: Key() is
    # <name>-controller, PrimaryName() its pod <Key>-0, ServiceFQDNShort() <Key>.<namespace>; the
    # pod is the one model/facts/contract.py execs scontrol in (verify --fix).
    assert (release.primary_host, release.service_host) == ("slurm-controller-0", "slurm-controller.slurm")
    assert release.primary_host == CONTROLLER_POD


def test_slurm_conf_declares_the_rendered_nodeset_and_the_programs_extra_config(release):
    conf = release.slurm_conf()
    assert "### NODESET & PARTITION ###\nNodeSet=slinky Feature=slinky\n" in conf
    extra = conf.split("### EXTRA CONFIG ###\n", 1)[1]
    assert "GresTypes=gpu" in extra and "ReturnToService=2" in extra
    assert "PartitionName=slinky Nodes=slinky" in extra


def test_gres_conf_is_the_rendered_config_file(release):
    assert release.config_files["gres.conf"].strip() == "AutoDetect=nvidia"


def test_slurmd_conf_is_the_nodesets_features_and_gres(release):
    assert slurmd_conf(release.nodesets[0]) == "Features=slinky Gres=gpu:nvidia_l4:4"


def test_a_slurmctld_parameter_in_the_extra_config_is_merged_with_the_operators():
    merged = merged_config(
        "SlurmctldParameters=idle_on_node_suspend\n",
        {"SlurmctldParameters": ["enable_configless", "reconfig_on_restart"]},
    )
    assert merged == ["SlurmctldParameters=enable_configless,idle_on_node_suspend,reconfig_on_restart"]


def test_keys_the_extra_config_does_not_set_are_not_merged():
    assert merged_config("GresTypes=gpu\n", {"SlurmctldParameters": ["enable_configless"]}) == []


def test_a_malformed_nodeset_extra_conf_item_is_refused(release):
    nodeset = copy.deepcopy(release.nodesets[0])
    nodeset["spec"]["extraConf"] = "Gres"
    with pytest.raises(ValueError, match="malformed NodeSet extraConf item 'Gres'"):
        slurmd_conf(nodeset)


def test_a_release_without_one_controller_is_refused(release):
    with pytest.raises(ValueError, match="expected one Controller"):
        Release.from_documents(
            [d for d in [release.controller, *release.nodesets] if d["kind"] != "Controller"]
        )


# With the release's Accounting (tests/support/slurm_cluster.py rendered_with_accounting): the
# operator's ACCOUNTING lines (controller_config.go) and its slurmdbd.conf (accounting_config.go
# buildSlurmdbdConf), SlinkyProject/slurm-operator v1.2.1.


@pytest.fixture(scope="module")
def with_accounting(dev) -> Release:
    from tests.support.slurm_cluster import rendered_with_accounting

    return Release.from_documents(rendered_with_accounting(dev))


def test_slurm_conf_points_at_the_accountings_slurmdbd_service(with_accounting):
    conf = with_accounting.slurm_conf()
    assert (
        "### ACCOUNTING ###\nAccountingStorageType=accounting_storage/slurmdbd\n"
        "AccountingStorageHost=slurm-accounting\nAccountingStoragePort=6819\n"
    ) in conf


def test_slurm_conf_without_an_accounting_stores_nothing(release):
    controller = copy.deepcopy(release.controller)
    controller["spec"].pop("accountingRef", None)
    bare = Release(controller, release.nodesets, release.config_maps, release.accountings)
    assert "### ACCOUNTING ###\nAccountingStorageType=accounting_storage/none\n" in bare.slurm_conf()


def test_slurmdbd_conf_is_the_operators_for_the_accountings_storage(with_accounting):
    assert with_accounting.slurmdbd_conf("s3cret") == (
        "#\n### GENERAL ###\nDbdHost=slurm-accounting-0\nDbdPort=6819\nSlurmUser=slurm\n"
        "#\n### PLUGINS & PARAMETERS ###\nAuthType=auth/slurm\nAuthAltTypes=auth/jwt\n"
        "AuthAltParameters=jwt_key=/etc/slurm/jwt.key\nAuthInfo=use_client_ids\n"
        "#\n### STORAGE ###\nStorageType=accounting_storage/mysql\nStorageHost=mariadb\nStoragePort=3306\n"
        "StorageUser=slurmdbd\nStorageLoc=slurm_acct_db\nStoragePass=s3cret\n"
        "#\n### LOGGING ###\nLogFile=/dev/null\n"
        "#\n### EXTRA CONFIG ###\n"
        "StorageParameters=SSL_CA=/etc/slinky-eks/accounting-ca/rds-ca-bundle.pem\n"
    )


def test_a_controller_whose_accounting_is_missing_stores_nothing(with_accounting):
    # BuildControllerConfig ignores an accountingRef it cannot find.
    missing = Release(with_accounting.controller, with_accounting.nodesets, with_accounting.config_maps, {})
    assert "AccountingStorageType=accounting_storage/none" in missing.slurm_conf()


def _with_scripts(release: Release, refs: dict[str, dict[str, str]]) -> Release:
    """The release with the Controller naming one ConfigMap per script ref, of these files (and no
    other: the dev release's own DCGM scripts are dropped)."""
    controller = copy.deepcopy(release.controller)
    for key in (
        "prologScriptRefs",
        "epilogScriptRefs",
        "prologSlurmctldScriptRefs",
        "epilogSlurmctldScriptRefs",
    ):
        controller["spec"].pop(key, None)
    maps = dict(release.config_maps)
    for key, files in refs.items():
        controller["spec"][key] = [{"name": f"cm-{key}"}]
        maps[f"cm-{key}"] = {"kind": "ConfigMap", "metadata": {"name": f"cm-{key}"}, "data": files}
    return Release(controller, release.nodesets, maps, release.accountings)


def test_the_dev_releases_scripts_are_the_dcgm_job_mapping_and_the_container_jobs(release):
    # Metrics on (the default): the chart's vendor.nvidia.dcgm prolog and epilog; and the container
    # jobs' per-job directories (model/builders/containers.py), nothing else.
    from model.builders.containers import EPILOG_SCRIPT, PROLOG_SCRIPT

    assert sorted(release.scripts) == sorted(
        ["epilog-90-dcgm.sh", "prolog-90-dcgm.sh", f"prolog-{PROLOG_SCRIPT}", f"epilog-{EPILOG_SCRIPT}"]
    )
    assert (
        f"Prolog=prolog-90-dcgm.sh\nProlog=prolog-{PROLOG_SCRIPT}\n"
        f"Epilog=epilog-90-dcgm.sh\nEpilog=epilog-{EPILOG_SCRIPT}\n"
    ) in release.slurm_conf()


def test_script_refs_become_the_operators_prolog_and_epilog_lines(release):
    # controller_config.go buildPrologEpilogSlurmctldConf (/etc/slurm/<key>) then
    # buildPrologEpilogConf (the bare key), each sorted, after ACCOUNTING and before the NodeSets.
    conf = _with_scripts(
        release,
        {
            "prologScriptRefs": {"prolog-b.sh": "b", "prolog-a.sh": "a"},
            "epilogScriptRefs": {"epilog-x.sh": "x"},
            "prologSlurmctldScriptRefs": {"p.sh": "p"},
        },
    ).slurm_conf()
    assert (
        "AccountingStoragePort=6819\n#\n### SLURMCTLD PROLOG & EPILOG ###\n"
        "PrologSlurmctld=/etc/slurm/p.sh\n#\n### PROLOG & EPILOG ###\nProlog=prolog-a.sh\nProlog=prolog-b.sh\n"
        "Epilog=epilog-x.sh\n#\n### NODESET & PARTITION ###\n"
    ) in conf, conf


def test_the_scripts_are_the_referenced_configmaps_files(release):
    scripts = _with_scripts(release, {"prologScriptRefs": {"prolog-a.sh": "#!/bin/sh\n"}}).scripts
    assert scripts == {"prolog-a.sh": "#!/bin/sh\n"}


def test_controller_metrics_add_the_operators_metricstype_line_before_accounting(dev):
    """controller_config.go buildSlurmConf: Spec.Metrics.Enabled adds MetricsType=metrics/openmetrics
    right after SlurmctldParameters; the chart's controller.metrics values set Spec.Metrics."""
    from tests.support.slurm_cluster import rendered_with_metrics

    lines = Release.from_documents(rendered_with_metrics(dev)).slurm_conf().splitlines()
    at = lines.index("MetricsType=metrics/openmetrics")
    assert lines[at - 1].startswith("SlurmctldParameters=") and lines[at + 2] == "### ACCOUNTING ###"


def test_without_controller_metrics_slurm_conf_has_no_metricstype(release):
    controller = copy.deepcopy(release.controller)
    controller["spec"]["metrics"] = {"enabled": False}
    off = Release(controller, release.nodesets, release.config_maps, release.accountings)
    assert not [line for line in off.slurm_conf().splitlines() if line.startswith("MetricsType")]
