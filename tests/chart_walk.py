"""Check generated Slinky values against chart 1.2.1 as Helm never does (no chart ships a
values.schema.json, so a misspelled or misplaced key is silently ignored):

1. every key path must exist in the chart's own values.yaml (maps of named entries, such as
   nodesets.<name>, are checked against the chart's defaults for an entry);
2. the blocks the chart copies into custom resources are checked against the CRD schemas and,
   where the CRD says "see corev1.PodSpec/Container/ServiceSpec", against the Kubernetes
   OpenAPI schema of that type.
"""
from __future__ import annotations

from typing import Any, Iterator

import kubernetes_validate
import yaml

from tools import reference_data

# Named-entry maps -> the chart's defaults for one entry.
ENTRY_DEFAULTS = {"nodesets": "nodesetDefaults", "loginsets": "loginsetDefaults"}
# Maps whose keys are free (Slurm options, file names, Kubernetes labels...).
FREE_MAPS = {"configFiles", "extraConfMap", "configMap", "nodeSelector", "annotations", "labels",
             "prologScripts", "epilogScripts", "prologSlurmctldScripts", "epilogSlurmctldScripts"}


def load_chart() -> dict:
    """The slurm chart's values.yaml at v1.2.1 (SlinkyProject/slurm-operator helm/slurm/values.yaml)."""
    return yaml.safe_load(reference_data.path("slinky-1.2.1", "helm", "slurm", "values.yaml").read_text())


def load_crd_spec(kind: str) -> dict:
    """A CRD's spec schema at v1.2.1 (SlinkyProject/slurm-operator helm/slurm-operator-crds/templates)."""
    crd = yaml.safe_load(reference_data.path("slinky-1.2.1", "helm", "slurm-operator-crds", "templates",
                                             f"slinky.slurm.net_{kind}.yaml").read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def unknown_keys(values: dict, chart: dict) -> list[str]:
    """Key paths of `values` that chart 1.2.1 does not read."""
    problems: list[str] = []

    def walk(value: Any, default: Any, path: str) -> None:
        if not isinstance(value, dict) or not isinstance(default, dict) or not default:
            return  # leaves, lists and open blocks ({} / null defaults): checked by the CRD pass
        for key, sub in value.items():
            if key not in default:
                problems.append(f"{path}{key}")
            elif key not in FREE_MAPS:
                walk(sub, default[key], f"{path}{key}.")

    for key, sub in values.items():
        if key in ENTRY_DEFAULTS:
            for entry, entry_values in sub.items():
                walk(entry_values, chart[ENTRY_DEFAULTS[key]], f"{key}.{entry}.")
        elif key == "partitions":
            for entry, entry_values in sub.items():
                walk(entry_values, chart["partitions"]["all"], f"partitions.{entry}.")
        elif key not in chart:
            problems.append(key)
        elif key not in FREE_MAPS:
            walk(sub, chart[key], f"{key}.")
    return problems


def _against_crd(value: Any, schema: dict, path: str) -> Iterator[str]:
    """Keys the CRD's structural schema would prune (unknown fields)."""
    if not isinstance(value, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    props = schema.get("properties")
    if props is None:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k, v in value.items():
                yield from _against_crd(v, extra, f"{path}{k}.")
        return
    for k, v in value.items():
        if k not in props:
            yield f"{path}{k}"
        else:
            yield from _against_crd(v, props[k], f"{path}{k}.")


def _pod(spec: dict | None = None, container: dict | None = None) -> dict:
    pod_spec = dict(spec or {})
    pod_spec.setdefault("containers", [{"name": "c", "image": "i", **(container or {})}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": pod_spec}


def _k8s(obj: dict, version: str, path: str) -> list[str]:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{path}: {e.message}"]
    return []


def copied_block_problems(values: dict, k8s_version: str) -> list[str]:
    """Problems in the blocks the chart copies into the Controller, RestApi, NodeSet and LoginSet."""
    problems: list[str] = []
    crd = {k: load_crd_spec(k) for k in ("controllers", "restapis", "nodesets", "loginsets")}

    def pod_spec(block: dict | None, path: str) -> None:
        if block:
            problems.extend(_k8s(_pod(spec=block), k8s_version, path))

    def container(block: dict | None, path: str) -> None:
        if block:
            plain = {k: v for k, v in block.items() if k != "image"}  # chart-level image object
            problems.extend(_k8s(_pod(container=plain), k8s_version, path))

    controller = values.get("controller", {})
    pod_spec(controller.get("podSpec"), "controller.podSpec")
    # enabled/existingClaim are chart-level switches; the rest becomes the CR's persistence.
    persistence = {k: v for k, v in controller.get("persistence", {}).items() if k not in ("enabled", "existingClaim")}
    problems.extend(_against_crd(persistence, crd["controllers"]["properties"]["persistence"], "controller.persistence."))
    pod_spec(values.get("restapi", {}).get("podSpec"), "restapi.podSpec")
    for name, nodeset in values.get("nodesets", {}).items():
        pod_spec(nodeset.get("podSpec"), f"nodesets.{name}.podSpec")
        container(nodeset.get("slurmd"), f"nodesets.{name}.slurmd")
    for name, loginset in values.get("loginsets", {}).items():
        pod_spec(loginset.get("podSpec"), f"loginsets.{name}.podSpec")
        container(loginset.get("login"), f"loginsets.{name}.login")
        service = loginset.get("service", {})
        problems.extend(_against_crd(service, crd["loginsets"]["properties"]["service"], f"loginsets.{name}.service."))
        if service.get("spec"):
            problems.extend(_k8s({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                  "spec": {"ports": [{"port": 22}], **service["spec"]}},
                                 k8s_version, f"loginsets.{name}.service.spec"))
    return problems
