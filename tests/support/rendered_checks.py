"""Checks on rendered chart objects (devkit/chart_render.py). Each returns a list of problems, one
line per object and field, so a test reads `== []` and a broken input shows what broke."""

from __future__ import annotations

import re
from typing import Any, Iterator

import jsonschema

# Where a pod spec sits, by kind. The Slinky custom resources carry theirs as spec.template.spec
# (SlinkyProject/slurm-operator v1.2.1 helm/slurm-operator-crds/templates/slinky.slurm.net_*.yaml).
_POD_TEMPLATE = ("spec", "template", "spec")
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": _POD_TEMPLATE,
    "DaemonSet": _POD_TEMPLATE,
    "StatefulSet": _POD_TEMPLATE,
    "ReplicaSet": _POD_TEMPLATE,
    "Job": _POD_TEMPLATE,
    "CronJob": ("spec", "jobTemplate", *_POD_TEMPLATE),
    "Controller": _POD_TEMPLATE,
    "RestApi": _POD_TEMPLATE,
    "LoginSet": _POD_TEMPLATE,
    "NodeSet": _POD_TEMPLATE,
    "Accounting": _POD_TEMPLATE,
}
# EKS node group taint effects (API values) -> Kubernetes taint effects (EKS API Taint).
EKS_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}
# A full version (x.y.z, optionally v-prefixed and suffixed: v1.16.2, 26.05.2-ubuntu26.04) or a digest.
_FULL_TAG = re.compile(r"^v?\d+\.\d+\.\d+([.+_-][A-Za-z0-9._+-]*)?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# Images handed to a controller as a flag (cert-manager's --acme-http01-solver-image=...).
_IMAGE_FLAG = re.compile(r"^--[a-z0-9-]*image=(.+)$")


def label(obj: dict) -> str:
    return f"{obj['kind']}/{obj.get('metadata', {}).get('name')}"


def pod_specs(objects: list[dict]) -> Iterator[tuple[str, dict]]:
    for obj in objects:
        path = POD_SPEC_PATHS.get(obj["kind"])
        if path is None:
            continue
        spec: Any = obj
        for key in path:
            spec = (spec or {}).get(key)
        yield label(obj), spec or {}


def tolerates(pod_spec: dict, taint: dict) -> bool:
    """Kubernetes toleration matching (core/v1 Toleration.ToleratesTaint)."""
    for t in pod_spec.get("tolerations") or []:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def selects_only(pod_spec: dict, labels: dict) -> bool:
    """Whether the pod can only land on nodes carrying `labels`: through its nodeSelector, or
    through required node affinity where every term demands each label."""
    selector = pod_spec.get("nodeSelector") or {}
    if all(selector.get(k) == v for k, v in labels.items()):
        return True
    terms = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    ).get("nodeSelectorTerms") or []

    def demands(term: dict, key: str, value: str) -> bool:
        return any(
            e.get("key") == key and e.get("operator") == "In" and e.get("values") == [value]
            for e in term.get("matchExpressions") or []
        )

    return bool(terms) and all(demands(t, k, v) for t in terms for k, v in labels.items())


def placement_problems(objects: list[dict], labels: dict, taint: dict | None = None) -> list[str]:
    """Pods that may land off the nodes with `labels`, or (with a taint) cannot land on them."""
    problems = []
    for where, spec in pod_specs(objects):
        if not selects_only(spec, labels):
            problems.append(f"{where}: does not select nodes {labels}")
        if taint is not None and not tolerates(spec, taint):
            problems.append(f"{where}: does not tolerate the taint {taint['key']}:{taint['effect']}")
    return problems


def images(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, image) of every image reference: `image` strings anywhere (containers, and the Slinky
    custom resources' container blocks) and image flags in args."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "image" and isinstance(v, str):
                yield f"{path}.image", v
            else:
                yield from images(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            flag = _IMAGE_FLAG.match(v) if isinstance(v, str) else None
            if flag:
                yield f"{path}[{i}]", flag.group(1)
            else:
                yield from images(v, f"{path}[{i}]")


def floats(image: str) -> bool:
    """An image without a digest whose tag is not a full version (latest, 26.05-..., none)."""
    if _DIGEST.search(image):
        return False
    last = image.rsplit("/", 1)[-1]
    return ":" not in last or not _FULL_TAG.match(last.rsplit(":", 1)[1])


def floating_images(objects: list[dict]) -> list[str]:
    return [
        f"{label(obj)}{where}: {image}" for obj in objects for where, image in images(obj) if floats(image)
    ]


def load_balancer_services(objects: list[dict]) -> list[str]:
    """Services of type LoadBalancer: Service objects, and the Services the Slinky operator makes
    from a custom resource's spec.service.spec (LoginSet, Controller, RestApi)."""
    out = []
    for obj in objects:
        if obj["kind"] == "Service":
            spec = obj.get("spec") or {}
        elif obj["kind"] in ("LoginSet", "Controller", "RestApi"):
            spec = ((obj.get("spec") or {}).get("service") or {}).get("spec") or {}
        else:
            continue
        if spec.get("type") == "LoadBalancer":
            out.append(label(obj))
    return out


def _prune_nulls(value: Any, schema: dict) -> Any:
    """What the API server stores: nulls dropped where the schema is not nullable (Kubernetes docs,
    "Defaulting and Nullable" in Extend the Kubernetes API with CustomResourceDefinitions)."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = (
            schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else {}
        )
        out = {}
        for k, v in value.items():
            sub = props.get(k, extra)
            if v is None and not sub.get("nullable"):
                continue
            out[k] = _prune_nulls(v, sub)
        return out
    if isinstance(value, list):
        return [_prune_nulls(v, schema.get("items") or {}) for v in value]
    return value


def _unknown_fields(value: Any, schema: dict, path: str) -> Iterator[str]:
    """Fields a structural schema prunes (the API server drops them without an error)."""
    if not isinstance(value, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        if isinstance(value, list):
            for i, v in enumerate(value):
                yield from _unknown_fields(v, schema.get("items") or {}, f"{path}[{i}]")
        return
    props = schema.get("properties")
    if props is None:
        extra = schema.get("additionalProperties")
        for k, v in value.items():
            yield from _unknown_fields(v, extra if isinstance(extra, dict) else {}, f"{path}.{k}")
        return
    for k, v in value.items():
        if k not in props:
            yield f"{path}.{k}: unknown field"
        else:
            yield from _unknown_fields(v, props[k], f"{path}.{k}")


def _json_schema(schema: Any) -> Any:
    """The Kubernetes extensions of OpenAPI v3 that JSON Schema has no word for, spelled out:
    x-kubernetes-int-or-string and nullable."""
    if isinstance(schema, dict):
        out = {k: _json_schema(v) for k, v in schema.items()}
        if schema.get("x-kubernetes-int-or-string") and "anyOf" not in out:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if schema.get("nullable") and isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(schema, list):
        return [_json_schema(v) for v in schema]
    return schema


def custom_resource_problems(obj: dict, crds: list[dict]) -> list[str]:
    """Validate a custom resource against the schema of its CRD version, as the API server would:
    unknown fields (pruned silently) and schema violations (rejected)."""
    group, _, version = obj["apiVersion"].rpartition("/")
    crd = next(
        (
            c
            for c in crds
            if c["kind"] == "CustomResourceDefinition"
            and c["spec"]["group"] == group
            and c["spec"]["names"]["kind"] == obj["kind"]
        ),
        None,
    )
    if crd is None:
        return [f"{label(obj)}: no CRD for {obj['apiVersion']} {obj['kind']}"]
    served = next((v for v in crd["spec"]["versions"] if v["name"] == version), None)
    if served is None:
        return [f"{label(obj)}: the CRD has no version {version}"]
    schema = served["schema"]["openAPIV3Schema"]
    stored = _prune_nulls({k: v for k, v in obj.items() if k != "metadata"}, schema)
    problems = [f"{label(obj)}{p}" for p in _unknown_fields(stored, schema, "")]
    validator = jsonschema.Draft4Validator(_json_schema(schema))
    problems += [
        f"{label(obj)}.{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in sorted(validator.iter_errors(stored), key=lambda e: list(map(str, e.absolute_path)))
    ]
    return problems


# Blocks of the Slinky custom resources the CRDs keep as free objects
# (x-kubernetes-preserve-unknown-fields) and the operator decodes as Kubernetes types; a misspelled
# field there passes the API server and is dropped by the operator (SlinkyProject/slurm-operator
# v1.2.1 helm/slurm-operator-crds/templates/slinky.slurm.net_*.yaml: "PodSpec is a description of
# a pod", container blocks described as corev1.Container).
CONTAINER_BLOCKS = {
    "Controller": ("slurmctld", "reconfigure", "logfile"),
    "RestApi": ("slurmrestd",),
    "NodeSet": ("slurmd", "logfile"),
    "LoginSet": ("login", "initconf"),
    "Accounting": ("slurmdbd",),
}


def _without_nulls(value: Any) -> Any:
    """A null is the zero value once decoded into a Go struct."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def embedded_kubernetes_problems(obj: dict, k8s_version: str) -> list[str]:
    """The pod template, containers and Service spec of a Slinky custom resource, validated
    against the Kubernetes OpenAPI schema of `k8s_version` (strict: unknown fields are errors)."""
    import kubernetes_validate

    def check(kube_obj: dict, where: str) -> list[str]:
        try:
            kubernetes_validate.validate(_without_nulls(kube_obj), k8s_version, strict=True)
        except kubernetes_validate.ValidationError as e:
            return [f"{label(obj)}.{where}: {e.message}"]
        return []

    def pod(spec: dict) -> dict:
        spec = {"containers": [{"name": "c", "image": "i"}], **spec}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": spec}

    spec = obj.get("spec") or {}
    problems = check(pod((spec.get("template") or {}).get("spec") or {}), "spec.template.spec")
    for block in CONTAINER_BLOCKS.get(obj["kind"], ()):
        if spec.get(block):
            problems += check(pod({"containers": [{"name": "c", **spec[block]}]}), f"spec.{block}")
    service = (spec.get("service") or {}).get("spec")
    if service:
        problems += check(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "check"},
                "spec": {"ports": [{"port": 22}], **service},
            },
            "spec.service.spec",
        )
    return problems
