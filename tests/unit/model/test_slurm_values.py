"""The Slurm release's computed values (model/builders/slurm_values.py), called directly. What the
chart renders from the dev stack's values is specified in tests/charts/test_rendered_charts.py; the
scheduling lines in tests/unit/model/test_scheduling.py."""

import dataclasses

from model.builders import containers, metrics
from model.builders.scheduling import DEFAULT
from model.builders.slurm_values import (
    SlurmValuesArgs,
    gpu_resources,
    partitions,
    slurm_values,
)
from model.checks.gpu_pools import GpuPool
from model.facts import catalog
from model.facts.contract import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    LOGINSET,
    SHARED_MOUNT_OPTIONS,
    SHARED_MOUNT_OPTIONS_ENV,
)

P5 = catalog.lookup("p5.48xlarge")
TRAIN = GpuPool("train", P5, 2, "us-west-2a", 400, 0)
INFER = GpuPool("infer", catalog.lookup("g6.12xlarge"), 3, "us-west-2a", 400, 1, 1, 4)
ARGS = SlurmValuesArgs(
    gpu_pools=[TRAIN],
    image_repository="123456789012.dkr.ecr.us-west-2.amazonaws.com/slurmd",
    image_digest="sha256:" + "0" * 64,
    image_tag="26.05.5-ubuntu24.04-1",
    ssh_public_key="",
    users=[],
    init_security={},
    shared_claim="shared",
    state_claim="slurm-controller-state",
    slurm_key_secret="slurm-auth-slurm",
    jwt_key_secret="slurm-auth-jwt",
    slinky_images={
        name: f"ghcr.io/slinkyproject/{name}:26.05.5-ubuntu24.04@sha256:{'1' * 64}"
        for name in ("slurmctld", "slurmrestd", "slurmdbd", "login-pyxis")
    },
    accounting_host="db.example",
    accounting_password_secret="slurm-accounting-database",
    scheduling=DEFAULT,
    metrics=False,
    partition_topologies={},
    registry=containers.EcrRegistry("123456789012", "us-west-2", "aws", "amazonaws.com"),
)


def test_a_slurmd_pod_requests_every_gpu_and_every_efa_interface_of_its_node():
    amounts = {GPU_RESOURCE: P5.gpus, EFA_RESOURCE: P5.efa_interfaces}
    assert gpu_resources(P5) == {"limits": amounts, "requests": amounts}


def test_one_pools_own_partition_is_the_default():
    assert partitions([TRAIN], {}) == {
        "train": {
            "enabled": True,
            "nodesets": ["train"],
            "configMap": {"Default": "YES", "MaxTime": "UNLIMITED", "State": "UP"},
        }
    }


def test_with_several_pools_the_partition_all_over_every_pool_is_the_default():
    found = partitions([TRAIN, INFER], {})
    assert found["all"]["nodesets"] == ["train", "infer"] and found["all"]["configMap"]["Default"] == "YES"
    assert "Default" not in found["train"]["configMap"] and "Default" not in found["infer"]["configMap"]


def test_each_pool_gets_a_nodeset_at_its_initial_size_running_the_slurmd_image_by_digest():
    values = slurm_values(dataclasses.replace(ARGS, gpu_pools=[TRAIN, INFER]))
    assert {name: n["replicas"] for name, n in values["nodesets"].items()} == {"train": 2, "infer": 1}
    assert values["nodesets"]["train"]["slurmd"]["image"]["digest"] == ARGS.image_digest


def test_the_keys_and_the_database_password_are_passed_by_reference_only():
    values = slurm_values(ARGS)
    assert values["slurmKey"] == {
        "create": False,
        "secretRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
    }
    assert values["accounting"]["storageConfig"]["passwordKeyRef"]["name"] == "slurm-accounting-database"


def test_without_a_root_key_the_login_pod_gets_no_authorized_keys_and_with_one_it_does():
    assert "rootSshAuthorizedKeys" not in slurm_values(ARGS)["loginsets"][LOGINSET]
    with_key = slurm_values(dataclasses.replace(ARGS, ssh_public_key="ssh-ed25519 AAAA root"))
    assert with_key["loginsets"][LOGINSET]["rootSshAuthorizedKeys"] == "ssh-ed25519 AAAA root\n"


def test_the_login_service_is_cluster_internal_since_the_program_owns_the_login_load_balancer():
    assert slurm_values(ARGS)["loginsets"][LOGINSET]["service"] == {"spec": {"type": "ClusterIP"}}


def test_metrics_turn_on_slurmctlds_metrics_and_the_dcgm_job_mapping_and_are_absent_without():
    assert "vendor" not in slurm_values(ARGS) and "metrics" not in slurm_values(ARGS)["controller"]
    values = slurm_values(dataclasses.replace(ARGS, metrics=True))
    assert values["controller"]["metrics"] == metrics.CONTROLLER_METRICS_VALUES
    assert values["vendor"]["nvidia"]["dcgm"] == {
        "enabled": True,
        "jobMappingDir": metrics.DCGM_JOB_MAPPING_DIR,
    }


def test_every_pod_that_mounts_shared_rolls_when_its_mount_options_change():
    """The EFS CSI driver applies the PV's mount options only to a new pod's mount."""
    values = slurm_values(ARGS)
    expected = {"name": SHARED_MOUNT_OPTIONS_ENV, "value": ",".join(SHARED_MOUNT_OPTIONS)}
    assert expected in values["nodesets"]["train"]["slurmd"]["env"]
    assert expected in values["loginsets"][LOGINSET]["login"]["env"]


def test_a_placed_pools_partition_runs_on_its_topology_and_all_keeps_the_default():
    found = partitions([TRAIN, INFER], {"train": "tree"})
    assert found["train"]["configMap"]["Topology"] == "tree"
    assert "Topology" not in found["infer"]["configMap"]
    assert "Topology" not in found["all"]["configMap"]


def test_a_stack_without_placed_pools_names_no_topology():
    assert "Topology" not in partitions([TRAIN], {})["train"]["configMap"]


def test_pyxis_is_in_plugstack_conf_which_slurmctld_serves_to_every_node():
    from model.builders import containers

    assert slurm_values(ARGS)["configFiles"]["plugstack.conf"] == containers.plugstack_conf()


def test_pmix_settings_are_in_mpi_conf_which_slurmctld_serves_to_every_node():
    from model.builders import job_environment

    assert slurm_values(ARGS)["configFiles"]["mpi.conf"] == job_environment.mpi_conf()


def test_the_login_pod_runs_slinkys_pyxis_flavour_of_the_login_image():
    login = slurm_values(ARGS)["loginsets"][LOGINSET]["login"]
    assert login["image"] == ARGS.slinky_images["login-pyxis"]


def test_the_login_pod_stays_unprivileged_with_container_jobs():
    loginset = slurm_values(ARGS)["loginsets"][LOGINSET]
    contexts = [
        loginset["login"].get("securityContext") or {},
        loginset["podSpec"].get("securityContext") or {},
    ]
    assert not any(c.get("privileged") for c in contexts)


def test_every_slurmd_mounts_enroot_conf_and_the_node_local_disk():
    from model.builders import containers

    nodeset = slurm_values(dataclasses.replace(ARGS, gpu_pools=[TRAIN, INFER]))["nodesets"]
    for pool in ("train", "infer"):
        mounts = {m["mountPath"]: m for m in nodeset[pool]["slurmd"]["volumeMounts"]}
        volumes = {v["name"]: v for v in nodeset[pool]["podSpec"]["volumes"]}
        assert mounts[containers.ENROOT_CONF]["subPath"] == "enroot.conf"
        assert (
            volumes[mounts[containers.ENROOT_CONF]["name"]]["configMap"]["name"]
            == containers.ENROOT_CONFIGMAP
        )
        assert volumes[mounts[containers.NODE_LOCAL_MOUNT]["name"]] == {
            "name": containers.NODE_LOCAL_VOLUME,
            "emptyDir": {},
        }


def test_every_nodeset_pod_makes_the_node_local_tree_first_with_the_slurmd_image_by_digest():
    from model.builders import containers

    args = dataclasses.replace(ARGS, gpu_pools=[TRAIN, INFER], init_security={"readOnlyRootFilesystem": True})
    nodeset = slurm_values(args)["nodesets"]
    for pool in ("train", "infer"):
        assert nodeset[pool]["podSpec"]["initContainers"] == [
            containers.init_container(f"{ARGS.image_repository}@{ARGS.image_digest}", args.init_security)
        ]


def test_the_release_renders_the_enroot_conf_the_slurmd_pods_mount():
    from model.builders import containers

    (cm,) = [
        o for o in slurm_values(ARGS)["extraObjects"] if o["metadata"]["name"] == containers.ENROOT_CONFIGMAP
    ]
    assert cm["data"] == {
        "enroot.conf": containers.enroot_conf(containers.PATHS),
        containers.CREDENTIALS_KEY: containers.credentials([ARGS.registry]),
    }


def test_the_job_scratch_prolog_and_epilog_run_beside_the_named_users_prolog():
    from model.builders import containers, identities
    from model.checks.users import User

    with_users = dataclasses.replace(ARGS, users=[User("ada", 2001, ("ssh-ed25519 AAAA ada",))])
    for args, extra in ((ARGS, set()), (with_users, {identities.PROLOG_SCRIPT})):
        values = slurm_values(args)
        assert set(values["prologScripts"]) == {containers.PROLOG_SCRIPT} | extra
        assert set(values["epilogScripts"]) == {containers.EPILOG_SCRIPT}
