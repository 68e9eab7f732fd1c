"""What the Helm releases put into the cluster, rendered from the upstream charts at the
pinned versions (devkit/chart_render.py): placement, the service account Pod Identity names, the
Slinky custom resources, Services and images. Each check also runs on a broken input to show it
fails."""

import copy

import pytest
import yaml

from devkit import chart_render, offline_account, reference_data
from devkit.offline_run import PROJECT_DIR, built_image_digest, run_program
from model.builders.slurm_values import gpu_resources
from model.facts import versions
from model.facts.catalog import lookup
from tests.support import rendered_checks as rc

RELEASES = {
    "nvidia-device-plugin",
    "aws-efa-k8s-device-plugin",
    "cert-manager",
    "slurm-operator-crds",
    "dcgm-exporter",
    "aws-load-balancer-controller",
    "slurm-operator",
    "slurm",
    "grafana",
}
LBC = versions.AWS_LOAD_BALANCER_CONTROLLER.version
CONTROL_PLANE = ("cert-manager", "slurm-operator", "aws-load-balancer-controller", "slurm")


def rerender(graph, release: str, change) -> list[dict]:
    """One release of the graph rendered again after `change(values)` edited a copy of its values."""
    resource = next(r for r in graph.of_type(chart_render.RELEASE_TYPE) if r.inputs["name"] == release)
    request = chart_render.release_request(resource)
    values = copy.deepcopy(request["values"])
    change(values)
    return chart_render.render(
        request["chart"],
        request["version"],
        values,
        release,
        request["namespace"],
        chart_render.kube_version(graph),
    )


@pytest.fixture(scope="module")
def gpu_nodes(dev):
    group = dev.named("nodes-gpu").inputs
    (taint,) = group["taints"]
    return group["labels"], {**taint, "effect": rc.EKS_EFFECTS[taint["effect"]]}


@pytest.fixture(scope="module")
def core_labels(dev):
    return dev.named("nodes-core").inputs["labels"]


def of_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def by_name(objects, kind, name):
    (found,) = [o for o in of_kind(objects, kind) if o["metadata"]["name"] == name]
    return found


# The renderer


def test_every_release_renders_from_the_reference_charts(rendered):
    assert set(rendered) == RELEASES
    assert all(rendered[name] for name in RELEASES)


def test_a_version_without_a_reference_chart_fails_naming_the_directory():
    with pytest.raises(reference_data.ReferenceDataMissing, match="slurm-9.9.9"):
        chart_render.render("slurm", "9.9.9", {}, "slurm", "slurm")


def test_a_chart_refusing_its_values_fails_naming_the_release():
    with pytest.raises(chart_render.ChartRenderError, match="aws-load-balancer-controller.*clusterName"):
        chart_render.render(
            "aws-load-balancer-controller", LBC, {}, "aws-load-balancer-controller", "kube-system"
        )


def test_lists_are_flattened_and_notes_left_out(rendered):
    kinds = {o["kind"] for objects in rendered.values() for o in objects}
    assert "List" not in kinds and {"IngressClass", "IngressClassParams"} <= kinds
    assert all(isinstance(o, dict) and "kind" in o for objects in rendered.values() for o in objects)


def test_the_charts_crds_directory_is_installed(rendered):
    crds = {
        o["metadata"]["name"]
        for o in of_kind(rendered["aws-load-balancer-controller"], "CustomResourceDefinition")
    }
    assert "targetgroupbindings.elbv2.k8s.aws" in crds


def test_crds_of_a_subchart_come_only_when_it_is_enabled():
    def nfd_crds(values):
        return [
            o["metadata"]["name"]
            for o in chart_render.render(
                "nvidia-device-plugin",
                versions.NVIDIA_DEVICE_PLUGIN.version,
                values,
                "nvidia-device-plugin",
                "kube-system",
            )
            if o["kind"] == "CustomResourceDefinition"
        ]

    assert nfd_crds({}) == []
    assert "nodefeatures.nfd.k8s-sigs.io" in nfd_crds({"gfd": {"enabled": True}})


def test_the_kube_version_is_the_clusters(dev):
    assert chart_render.kube_version(dev) == f"v{dev.named('cluster-eks').inputs['version']}.0"


def test_the_kube_version_reaches_the_chart():
    def hpa_api(kube_version):
        (hpa,) = [
            o
            for o in chart_render.render(
                "aws-load-balancer-controller",
                LBC,
                {"clusterName": "c", "autoscaling": {"enabled": True}},
                "aws-load-balancer-controller",
                "kube-system",
                kube_version,
            )
            if o["kind"] == "HorizontalPodAutoscaler"
        ]
        return hpa["apiVersion"]

    # templates/hpa.yaml: autoscaling/v2 from Kubernetes 1.23 on.
    assert (hpa_api("v1.22.0"), hpa_api(chart_render.DEFAULT_KUBE_VERSION)) == (
        "autoscaling/v2beta2",
        "autoscaling/v2",
    )


def test_the_default_kube_version_is_the_programs_default():
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    assert chart_render.DEFAULT_KUBE_VERSION == f"v{project['config']['kubernetesVersion']['default']}.0"


def test_values_breaking_the_charts_schema_are_refused():
    with pytest.raises(chart_render.ChartRenderError, match="replicaCount"):
        chart_render.render(
            "cert-manager",
            versions.CERT_MANAGER.version,
            {"replicaCount": "two"},
            "cert-manager",
            "cert-manager",
        )


def test_a_release_whose_values_are_unknown_is_refused(dev):
    resource = copy.copy(dev.named("slurm-release"))
    resource.inputs = {**resource.inputs, "values": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}
    with pytest.raises(chart_render.ChartRenderError, match="not known yet"):
        chart_render.release_request(resource)


# Placement


@pytest.mark.parametrize("release", ["nvidia-device-plugin", "aws-efa-k8s-device-plugin"])
def test_device_plugin_pods_tolerate_the_gpu_taint_and_select_the_gpu_nodes(rendered, gpu_nodes, release):
    labels, taint = gpu_nodes
    assert list(rc.pod_specs(rendered[release]))
    assert rc.placement_problems(rendered[release], labels, taint) == []


def test_placement_check_catches_a_removed_toleration(dev, gpu_nodes):
    labels, taint = gpu_nodes
    objects = rerender(dev, "aws-efa-k8s-device-plugin", lambda v: v.pop("tolerations"))
    assert rc.placement_problems(objects, labels, taint) == [
        "DaemonSet/aws-efa-k8s-device-plugin: does not tolerate the taint nvidia.com/gpu:NoSchedule"
    ]


def test_placement_check_catches_a_device_plugin_left_on_the_charts_affinity(dev, gpu_nodes):
    labels, taint = gpu_nodes

    def chart_placement(values):
        values.pop("nodeSelector")
        values.pop("affinity")

    problems = rc.placement_problems(rerender(dev, "nvidia-device-plugin", chart_placement), labels, taint)
    assert problems and all("does not select nodes" in p for p in problems)


@pytest.mark.parametrize("release", CONTROL_PLANE)
def test_control_plane_pods_select_the_core_nodes(rendered, core_labels, release):
    objects = [o for o in rendered[release] if o["kind"] != "NodeSet"]  # slurmd: the GPU nodes
    assert list(rc.pod_specs(objects))
    assert rc.placement_problems(objects, core_labels) == []


def test_every_control_plane_workload_is_checked(rendered):
    checked = {where for release in CONTROL_PLANE for where, _ in rc.pod_specs(rendered[release])}
    assert {
        "Deployment/slurm-operator",
        "Deployment/slurm-operator-webhook",
        "Deployment/cert-manager",
        "Deployment/cert-manager-webhook",
        "Deployment/cert-manager-cainjector",
        "Job/cert-manager-startupapicheck",
        "Deployment/aws-load-balancer-controller",
        "Controller/slurm",
        "RestApi/slurm",
        "LoginSet/slurm-login-slinky",
    } <= checked


def test_placement_check_catches_a_control_plane_pod_without_a_selector(dev, core_labels):
    objects = rerender(dev, "cert-manager", lambda v: v["webhook"].pop("nodeSelector"))
    assert rc.placement_problems(objects, core_labels) == [
        "Deployment/cert-manager-webhook: does not select nodes {'role': 'core'}"
    ]


def test_slurmd_pods_tolerate_the_gpu_taint_and_select_the_gpu_nodes(rendered, gpu_nodes):
    labels, taint = gpu_nodes
    assert rc.placement_problems(of_kind(rendered["slurm"], "NodeSet"), labels, taint) == []


# The load balancer controller's identity


def test_the_controller_runs_as_the_service_account_pod_identity_names(dev, rendered):
    association = dev.named("lbc-identity").inputs
    objects = rendered["aws-load-balancer-controller"]
    deployment = by_name(objects, "Deployment", "aws-load-balancer-controller")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == association["serviceAccount"]
    account = by_name(objects, "ServiceAccount", association["serviceAccount"])
    assert account["metadata"]["namespace"] == deployment["metadata"]["namespace"] == association["namespace"]


def test_service_account_check_catches_a_renamed_account(dev):
    association = dev.named("lbc-identity").inputs
    objects = rerender(dev, "aws-load-balancer-controller", lambda v: v["serviceAccount"].update(name="lbc"))
    deployment = by_name(objects, "Deployment", "aws-load-balancer-controller")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] != association["serviceAccount"]


def keeps_webhook_secret(values: dict) -> bool:
    # Chart 3.5.0 templates/_helpers.tpl reuses the existing webhook Secret only with keepTLSSecret
    # and without cert-manager; its default turned false in 3.x (1.17.1: true).
    return values.get("keepTLSSecret") is True and not values.get("enableCertManager")


def test_an_upgrade_reuses_the_controllers_webhook_certificate(dev):
    resource = next(
        r
        for r in dev.of_type(chart_render.RELEASE_TYPE)
        if r.inputs["name"] == "aws-load-balancer-controller"
    )
    assert keeps_webhook_secret(chart_render.release_request(resource)["values"])


def test_webhook_secret_check_sees_the_chart_default():
    with open(reference_data.chart_dir("aws-load-balancer-controller", LBC) / "values.yaml") as f:
        assert not keeps_webhook_secret(yaml.safe_load(f))


ADDON_FLAGS = ("--enable-shield=false", "--enable-waf=false", "--enable-wafv2=false")


def controller_args(objects) -> list[str]:
    deployment = by_name(objects, "Deployment", "aws-load-balancer-controller")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container["args"]


def test_the_controllers_shield_and_waf_addons_are_off(rendered):
    # Its policy has no shield/waf actions: on, the add-ons would call them and be denied.
    args = controller_args(rendered["aws-load-balancer-controller"])
    assert [a for a in ADDON_FLAGS if a not in args] == []


def test_addon_check_catches_the_chart_defaults(dev):
    def chart_defaults(values):
        for key in ("enableShield", "enableWaf", "enableWafv2"):
            values.pop(key, None)

    args = controller_args(rerender(dev, "aws-load-balancer-controller", chart_defaults))
    assert [a for a in ADDON_FLAGS if a in args] == []


# The Slinky custom resources


def slinky_resources(rendered):
    return [o for o in rendered["slurm"] if o["apiVersion"].startswith("slinky.slurm.net/")]


def test_slinky_custom_resources_are_valid_against_the_crds(rendered):
    resources = slinky_resources(rendered)
    assert {o["kind"] for o in resources} == {"Controller", "RestApi", "NodeSet", "LoginSet", "Accounting"}
    crds = rendered["slurm-operator-crds"]
    assert [p for o in resources for p in rc.custom_resource_problems(o, crds)] == []


def test_crd_check_catches_an_unknown_field_and_a_wrong_type(rendered):
    nodeset = copy.deepcopy(by_name(rendered["slurm"], "NodeSet", "slurm-worker-slinky"))
    nodeset["spec"]["replica"] = 2
    nodeset["spec"]["replicas"] = "two"
    problems = rc.custom_resource_problems(nodeset, rendered["slurm-operator-crds"])
    assert problems == [
        "NodeSet/slurm-worker-slinky.spec.replica: unknown field",
        "NodeSet/slurm-worker-slinky.spec.replicas: 'two' is not of type 'integer'",
    ]


def test_crd_check_catches_a_kind_without_a_crd(rendered):
    bogus = {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "Cluster", "metadata": {"name": "x"}}
    assert rc.custom_resource_problems(bogus, rendered["slurm-operator-crds"]) == [
        "Cluster/x: no CRD for slinky.slurm.net/v1beta1 Cluster"
    ]


def test_slinky_pod_templates_containers_and_services_are_valid_kubernetes(dev, rendered):
    version = dev.named("cluster-eks").inputs["version"]
    assert [p for o in slinky_resources(rendered) for p in rc.embedded_kubernetes_problems(o, version)] == []


def test_kubernetes_check_catches_a_misspelling_inside_a_pod_template(dev):
    objects = rerender(
        dev, "slurm", lambda v: v["nodesets"]["slinky"]["podSpec"]["tolerations"][0].update(operater="Exists")
    )
    problems = rc.embedded_kubernetes_problems(by_name(objects, "NodeSet", "slurm-worker-slinky"), "1.36")
    assert len(problems) == 1 and problems[0].startswith("NodeSet/slurm-worker-slinky.spec.template.spec:")
    assert "operater" in problems[0]


def test_kubernetes_check_catches_a_misspelling_inside_the_slurmd_container(dev):
    objects = rerender(dev, "slurm", lambda v: v["nodesets"]["slinky"]["slurmd"].update(volumeMount=[]))
    problems = rc.embedded_kubernetes_problems(by_name(objects, "NodeSet", "slurm-worker-slinky"), "1.36")
    assert len(problems) == 1 and problems[0].startswith("NodeSet/slurm-worker-slinky.spec.slurmd:")


def test_kubernetes_check_catches_an_invalid_login_service_spec(dev):
    objects = rerender(
        dev, "slurm", lambda v: v["loginsets"]["slinky"]["service"]["spec"].update(typ="NodePort")
    )
    problems = rc.embedded_kubernetes_problems(by_name(objects, "LoginSet", "slurm-login-slinky"), "1.36")
    assert len(problems) == 1 and problems[0].startswith("LoginSet/slurm-login-slinky.spec.service.spec:")


def test_crd_check_catches_a_misspelled_persistence_storage_class(dev, rendered):
    objects = rerender(dev, "slurm", lambda v: v["controller"]["persistence"].update(storageClass="gp3"))
    assert rc.custom_resource_problems(
        by_name(objects, "Controller", "slurm"), rendered["slurm-operator-crds"]
    ) == ["Controller/slurm.spec.persistence.storageClass: unknown field"]


def test_crd_check_catches_service_annotations_in_the_wrong_place(dev, rendered):
    objects = rerender(
        dev, "slurm", lambda v: v["loginsets"]["slinky"]["service"].update(annotations={"a": "b"})
    )
    problems = rc.custom_resource_problems(
        by_name(objects, "LoginSet", "slurm-login-slinky"), rendered["slurm-operator-crds"]
    )
    assert problems == ["LoginSet/slurm-login-slinky.spec.service.annotations: unknown field"]


def test_the_nodeset_carries_the_gres_resources_and_image_digest(dev, rendered):
    gpu = lookup(dev.named("nodes-gpu").inputs["instanceTypes"][0])
    spec = by_name(rendered["slurm"], "NodeSet", "slurm-worker-slinky")["spec"]
    assert f"Gres={gpu.gres}" in spec["extraConf"].splitlines()
    assert spec["slurmd"]["resources"] == gpu_resources(gpu)
    digest = built_image_digest(dev.named("slurmd-build").inputs["context_digest"])
    assert spec["slurmd"]["image"].endswith(f"/slinky-eks-dev/slurmd@{digest}")
    controller = by_name(rendered["slurm"], "Controller", "slurm")["spec"]
    assert "GresTypes=gpu" in controller["extraConf"].splitlines()


@pytest.mark.parametrize("kind, container", [("NodeSet", "slurmd"), ("LoginSet", "login")])
def test_workers_and_login_mount_shared_from_the_programs_claim(dev, rendered, kind, container):
    claim = dev.named("storage-shared-pvc").inputs["metadata"]["name"]
    (spec,) = [o["spec"] for o in of_kind(rendered["slurm"], kind)]
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    (mount,) = [m for m in spec[container]["volumeMounts"] if m["mountPath"] == "/shared"]
    assert volumes[mount["name"]]["persistentVolumeClaim"]["claimName"] == claim


def test_keys_are_passed_by_reference_to_the_programs_secrets(dev, rendered):
    controller = by_name(rendered["slurm"], "Controller", "slurm")["spec"]
    secrets = {
        r.inputs["metadata"]["name"]: r.inputs["data"] for r in dev.of_type("kubernetes:core/v1:Secret")
    }
    assert controller["slurmKeyRef"]["key"] in secrets[controller["slurmKeyRef"]["name"]]
    assert controller["jwtKeyRef"]["key"] in secrets[controller["jwtKeyRef"]["name"]]
    # The chart generates no key Secrets of its own (they would be random and immutable).
    assert {o["metadata"]["name"] for o in of_kind(rendered["slurm"], "Secret")} == {"slurm-sssd-conf"}


def test_key_check_sees_the_chart_generate_keys_when_not_told_otherwise(dev):
    objects = rerender(dev, "slurm", lambda v: (v.pop("slurmKey"), v.pop("jwtKey")))
    assert {"slurm-auth-slurm", "slurm-auth-jwt"} <= {
        o["metadata"]["name"] for o in of_kind(objects, "Secret")
    }


# Memory pressure on the core nodes: the kubelet evicts pods whose use exceeds their requests
# first, then by priority (https://kubernetes.io/docs/concepts/scheduling-eviction/
# node-pressure-eviction/#pod-selection-for-kubelet-eviction). The daemons request what they use
# and run at their own priority; the login pod, where users run what they like, has a memory limit.

# kind -> the container of the daemon the operator builds from it.
DAEMONS = {"Controller": "slurmctld", "Accounting": "slurmdbd", "RestApi": "slurmrestd"}


def daemon_specs(objects):
    return {kind: o["spec"] for kind in DAEMONS for o in of_kind(objects, kind)}


def test_every_slurm_daemon_requests_cpu_and_memory(rendered):
    specs = daemon_specs(rendered["slurm"])
    assert set(specs) == set(DAEMONS)
    for kind, spec in specs.items():
        assert {"cpu", "memory"} <= set(spec[DAEMONS[kind]]["resources"]["requests"]), kind


def test_every_slurm_daemon_runs_at_the_control_planes_priority(dev, rendered):
    (priority,) = dev.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    for kind, spec in daemon_specs(rendered["slurm"]).items():
        assert spec["template"]["spec"]["priorityClassName"] == priority.inputs["metadata"]["name"], kind


def test_the_login_pod_has_a_memory_limit_and_the_default_priority(rendered):
    (login,) = [o["spec"] for o in of_kind(rendered["slurm"], "LoginSet")]
    resources = login["login"]["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"]) and "memory" in resources["limits"]
    assert not login["template"]["spec"].get("priorityClassName")


def test_the_login_pod_and_the_daemons_run_under_the_runtime_default_seccomp_profile(rendered):
    (login,) = [o["spec"] for o in of_kind(rendered["slurm"], "LoginSet")]
    for where, spec in [("LoginSet", login), *daemon_specs(rendered["slurm"]).items()]:
        assert spec["template"]["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, (
            where
        )


def test_the_charts_defaults_would_leave_the_daemons_without_requests_or_priority(dev):
    def chart_defaults(values):
        for key, container in (("controller", "slurmctld"), ("restapi", "slurmrestd")):
            values[key][container].pop("resources")
            values[key]["podSpec"].pop("priorityClassName")

    specs = daemon_specs(rerender(dev, "slurm", chart_defaults))
    assert not specs["Controller"]["slurmctld"].get("resources")
    assert not specs["RestApi"]["template"]["spec"].get("priorityClassName")


# Services and images


def test_no_chart_makes_a_load_balancer_service(rendered):
    assert [s for objects in rendered.values() for s in rc.load_balancer_services(objects)] == []


def test_load_balancer_check_catches_the_charts_login_service(dev):
    objects = rerender(dev, "slurm", lambda v: v["loginsets"]["slinky"].pop("service"))
    assert rc.load_balancer_services(objects) == ["LoginSet/slurm-login-slinky"]


def test_no_image_floats(rendered):
    every = [image for objects in rendered.values() for o in objects for _, image in rc.images(o)]
    assert len(every) >= 15
    assert [p for objects in rendered.values() for p in rc.floating_images(objects)] == []


def test_the_slurm_control_plane_runs_the_slurm_build_of_the_slurmd_base_image():
    graph = run_program(
        "dev",
        {
            "slurmVersion": "26.05.3",
            "slurmdImageTag": "26.05.3-torch2.9-cu130-mpi",
            "slurmdBaseImage": "ghcr.io/slinkyproject/slurmd:26.05.3-ubuntu24.04",
        },
    )
    slinky = [
        image
        for o in chart_render.render_graph_releases(graph)["slurm"]
        for _, image in rc.images(o)
        if image.startswith("ghcr.io/slinkyproject/")
    ]
    assert sorted(slinky) == [
        f"ghcr.io/slinkyproject/{name}:26.05.3-ubuntu24.04@"
        + offline_account.image_digest(f"ghcr.io/slinkyproject/{name}", "26.05.3-ubuntu24.04")
        for name in ("login-pyxis", "slurmctld", "slurmctld", "slurmdbd", "slurmrestd")
    ]


def sidecar_images(objects) -> list[str]:
    return [
        o["spec"][block]["image"]
        for o in objects
        if o["apiVersion"].startswith("slinky.slurm.net/")
        for block in ("logfile", "initconf")
        if block in o["spec"]
    ]


def test_the_slinky_sidecars_and_init_images_run_the_pinned_alpine_by_tag_and_digest(rendered):
    # The chart's image helper turns an object with a digest into repository@digest, dropping the
    # tag; the pin is passed as a string so both stay in the reference.
    assert sidecar_images(rendered["slurm"]) == [versions.SIDECAR_IMAGE] * 3


def test_an_image_object_with_a_digest_would_lose_the_pins_tag(dev):
    tagged, digest = versions.SIDECAR_IMAGE.split("@")
    repository, tag = tagged.rsplit(":", 1)
    objects = rerender(
        dev,
        "slurm",
        lambda v: v["nodesetDefaults"].update(
            logfile={"image": {"repository": repository, "tag": tag, "digest": digest}}
        ),
    )
    nodeset = by_name(objects, "NodeSet", "slurm-worker-slinky")
    assert nodeset["spec"]["logfile"]["image"] == f"{repository}@{digest}"
    assert sidecar_images(objects) != [versions.SIDECAR_IMAGE] * 3


@pytest.mark.parametrize(
    "image",
    [
        "alpine",
        "docker.io/library/alpine:latest",
        "ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04",
        "registry:5000/app",
        "quay.io/x/y:v1.16",
    ],
)
def test_image_check_catches_a_floating_image(image):
    assert rc.floats(image)


@pytest.mark.parametrize(
    "image",
    [
        "quay.io/jetstack/cert-manager-controller:v1.16.2",
        "ghcr.io/slinkyproject/slurmctld:26.05.2-ubuntu26.04",
        "registry:5000/app@sha256:" + "0" * 64,
        "docker.io/library/alpine:3.23.6@sha256:" + "0" * 64,
    ],
)
def test_image_check_accepts_a_full_version_or_a_digest(image):
    assert not rc.floats(image)


def test_image_check_catches_the_charts_default_sidecar(dev):
    objects = rerender(dev, "slurm", lambda v: v["nodesetDefaults"].pop("logfile"))
    assert rc.floating_images(objects) == [
        "NodeSet/slurm-worker-slinky.spec.logfile.image: docker.io/library/alpine:latest"
    ]


def test_image_check_reads_image_flags(rendered):
    controller = by_name(rendered["cert-manager"], "Deployment", "cert-manager")
    assert f"quay.io/jetstack/cert-manager-acmesolver:{versions.CERT_MANAGER.version}" in [
        i for _, i in rc.images(controller)
    ]
    broken = copy.deepcopy(controller)
    broken["spec"]["template"]["spec"]["containers"][0]["args"].append(
        "--acme-http01-solver-image=solver:latest"
    )
    assert rc.floating_images([broken]) == [
        "Deployment/cert-manager.spec.template.spec.containers[0].args[%d]: solver:latest"
        % (len(broken["spec"]["template"]["spec"]["containers"][0]["args"]) - 1)
    ]


def test_the_chart_puts_plugstack_conf_beside_gres_conf_where_slurmctld_serves_them(rendered):
    from model.builders import containers

    files = [
        o["data"] for o in of_kind(rendered["slurm"], "ConfigMap") if "gres.conf" in (o.get("data") or {})
    ]
    assert [f.get("plugstack.conf") for f in files] == [containers.plugstack_conf()]


def test_the_chart_lists_the_container_prolog_and_epilog(rendered):
    from model.builders import containers

    data = {k: v for o in of_kind(rendered["slurm"], "ConfigMap") for k, v in (o.get("data") or {}).items()}
    assert data[f"prolog-{containers.PROLOG_SCRIPT}"] == containers.prolog_script()
    assert data[f"epilog-{containers.EPILOG_SCRIPT}"] == containers.epilog_script()
