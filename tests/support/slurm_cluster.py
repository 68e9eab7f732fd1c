"""A real Slurm cluster for a test module: the jobs' cluster, started from the dev stack's render."""

import contextlib
import copy
import os
from typing import Iterator, Sequence

import pytest

from model.checks.users import User
from model.facts.catalog import CATALOG
from tests.support.local_slurm import LocalSlurm, RootMissing
from tests.support.slinky_conf import Release

# The walkthrough's g6.12xlarge: the instance type of the job tests' cluster.
WALKTHROUGH = CATALOG["g6.12xlarge"]


@contextlib.contextmanager
def running_cluster(
    tmp_path_factory,
    rendered,
    who: str,
    suite: str = "sid",
    users: Sequence[User] = (),
    login_files: dict[str, str] | None = None,
    login_dirs: Sequence[str] = (),
    worker_files: dict | None = None,
    worker_env: dict[str, str] | None = None,
) -> Iterator[LocalSlurm]:
    """A real Slurm cluster in the Slinky shape (tests/local_slurm.py) from the dev stack's rendered
    `slurm` release, for the walkthrough's g6.12xlarge, with `users` known in every pod; `who`
    names the tests in the failure. `login_files`, `login_dirs`, `worker_files` and `worker_env`:
    LocalSlurm's."""
    if os.geteuid() != 0:
        pytest.fail(f"{who} start a real Slurm cluster in namespaces: they need root")
    release = Release.from_documents(rendered["slurm"])
    if suite == "trixie":
        release = _without_containers(_without_metrics(release))
    try:
        cluster = LocalSlurm(
            tmp_path_factory.mktemp(suite),
            release,
            WALKTHROUGH.gpu_model,
            WALKTHROUGH.gpus,
            suite=suite,
            users=users,
            login_files=login_files,
            login_dirs=login_dirs,
            worker_files=worker_files,
            worker_env=worker_env,
        )
    except RootMissing as e:
        pytest.fail(str(e))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _without_metrics(release: Release) -> Release:
    """The release with slurmctld's metrics off: trixie's Slurm 24.11 (the PMIx tests' root) has no
    metrics plugin (SchedMD/slurm: src/plugins/metrics first appears at tag slurm-25-11-0-1; none at
    slurm-24-11-5-1), so it refuses the MetricsType line and slurmctld does not start."""
    controller = copy.deepcopy(release.controller)
    controller["spec"]["metrics"] = {"enabled": False}
    return Release(controller, release.nodesets, release.config_maps, release.accountings)


def _without_containers(release: Release) -> Release:
    """The release without plugstack.conf: the trixie root (the PMIx tests') has no pyxis built
    (tests/slurm/roots/sid.build is the sid root's), and a `required` plugin that does not load
    fails every step (https://slurm.schedmd.com/spank.html#SECTION_CONFIGURATION)."""
    config_maps = {
        name: {**cm, "data": {k: v for k, v in cm.get("data", {}).items() if k != "plugstack.conf"}}
        for name, cm in release.config_maps.items()
    }
    return Release(release.controller, release.nodesets, config_maps, release.accountings)


# Where the accounting tests' MariaDB serves, set over the release's accounting.storageConfig
# (slurm chart 1.2.1 values.yaml: host, port, database); the user and its password's Secret stay
# the program's.
TEST_DATABASE = {"host": "mariadb", "port": 3306, "database": "slurm_acct_db"}


def rendered_with_accounting(dev, storage: dict = TEST_DATABASE) -> list[dict]:
    """The dev stack's `slurm` release rendered from chart 1.2.1 with its Accounting enabled and
    pointed at the test's database: the program's values with `accounting.enabled` and
    `accounting.storageConfig` set over them (the RDS address is not known offline), and the
    scheduling policy the program adds to values that enable accounting (the dev stack's: the
    keys' defaults)."""
    from components._parts.helm import merge
    from devkit.chart_render import RELEASE_TYPE, kube_version, release_request, render
    from model.builders.scheduling import DEFAULT
    from model.builders.slurm_values import with_scheduling

    (release,) = [r for r in dev.of_type(RELEASE_TYPE) if release_request(r)["release_name"] == "slurm"]
    request = release_request(release)
    values = with_scheduling(
        merge(request["values"], {"accounting": {"enabled": True, "storageConfig": dict(storage)}}), DEFAULT
    )
    return render(
        request["chart"], request["version"], values, "slurm", request["namespace"], kube_version(dev)
    )


def rendered_with_metrics(dev) -> list[dict]:
    """The dev stack's `slurm` release rendered from chart 1.2.1 with slurmctld's metrics on
    (model/builders/metrics.py CONTROLLER_METRICS_VALUES set over the program's values: the same release
    whether or not the program's own values already enable them)."""
    from components._parts.helm import merge
    from devkit.chart_render import RELEASE_TYPE, kube_version, release_request, render
    from model.builders.metrics import CONTROLLER_METRICS_VALUES

    (release,) = [r for r in dev.of_type(RELEASE_TYPE) if release_request(r)["release_name"] == "slurm"]
    request = release_request(release)
    values = merge(request["values"], {"controller": {"metrics": dict(CONTROLLER_METRICS_VALUES)}})
    return render(
        request["chart"], request["version"], values, "slurm", request["namespace"], kube_version(dev)
    )
