"""Check generated Slinky values against chart 1.2.1 as Helm never does (no chart ships a
values.schema.json, so a misspelled or misplaced key is silently ignored): every key path must exist
in the chart's own values.yaml (maps of named entries, such as nodesets.<name>, are checked against
the chart's defaults for an entry).

Only this walk catches a key the chart never reads (`nodesets.<n>.nodeSelector` instead of
`podSpec.nodeSelector`, `extraConfmap`): such a key leaves no trace in what the chart renders.
Whatever the chart does copy into the custom resources is checked on the rendered objects instead
(tests/charts/test_rendered_charts.py: the CRD schemas, and the pod templates, containers and Service
specs against the Kubernetes OpenAPI schema), which sees the chart's defaults and its own additions
as well.
"""

from __future__ import annotations

from typing import Any

import yaml

from devkit import reference_data
from model.checks.gpu_pools import DEFAULT_POOL
from model.facts.contract import LOGINSET

# Named-entry maps -> the chart's defaults for one entry.
ENTRY_DEFAULTS = {"nodesets": "nodesetDefaults", "loginsets": "loginsetDefaults"}
# Maps whose keys are free (Slurm options, file names, Kubernetes labels...).
FREE_MAPS = {
    "configFiles",
    "extraConfMap",
    "configMap",
    "nodeSelector",
    "annotations",
    "labels",
    "prologScripts",
    "epilogScripts",
    "prologSlurmctldScripts",
    "epilogSlurmctldScripts",
}
# Blocks the chart copies whole into a Kubernetes object, whose defaults list only a few of the
# fields it takes: slurmdbd's container (templates/accounting/accounting-cr.yaml, slurm.format-container:
# every key but image through toYaml) and its pod template (slurm.format-podTemplate). Any field of
# corev1.Container / corev1.PodSpec is read there; the rendered objects are checked against the
# Kubernetes schema (tests/charts/test_rendered_charts.py), which a misspelled field fails.
COPIED_WHOLE = {"accounting.slurmdbd.", "accounting.podSpec."}


# Keys the chart's values.yaml does not list but its templates copy whole into the custom resource:
# the controller's container and pod spec go through toYaml (SlinkyProject/slurm-operator v1.2.1
# helm/slurm/templates/_helpers.tpl slurm.format-container, slurm.format-podSpec), and the CRD and
# Kubernetes checks of the render see them (the named users' identities: model/builders/slurm_values.py).
# The pod specs' priority class is read by name too (templates/controller/controller-cr.yaml,
# restapi/restapi-cr.yaml, loginset/loginset-cr.yaml: `$podSpec | dig "priorityClassName"`), and their
# seccomp profile goes through whole (the control plane's and the login pod's: model/builders/slurm_values.py).
PASSED_THROUGH = {
    "controller.slurmctld.volumeMounts",
    "controller.podSpec.volumes",
    *(
        f"{daemon}.podSpec.{key}"
        for daemon in ("controller", "restapi")
        for key in ("priorityClassName", "securityContext")
    ),
    f"loginsets.{LOGINSET}.podSpec.securityContext",
    # The NodeSet pods' service account and API token (model/builders/slurm_values.py): a NodeSet's
    # podSpec goes whole into its template (templates/nodeset/nodeset-cr.yaml, slurm.format-podTemplate).
    # The chart's defaults list only the default pool's NodeSet; another pool's is an open block.
    *(
        f"nodesets.{DEFAULT_POOL}.podSpec.{key}"
        for key in ("serviceAccountName", "automountServiceAccountToken")
    ),
}


def load_chart() -> dict:
    """The slurm chart's values.yaml at v1.2.1 (SlinkyProject/slurm-operator helm/slurm/values.yaml)."""
    return yaml.safe_load(reference_data.path("slinky-1.2.1", "helm", "slurm", "values.yaml").read_text())


def unknown_keys(values: dict, chart: dict) -> list[str]:
    """Key paths of `values` that chart 1.2.1 does not read."""
    problems: list[str] = []

    def walk(value: Any, default: Any, path: str) -> None:
        if not isinstance(value, dict) or not isinstance(default, dict) or not default:
            return  # leaves, lists and open blocks ({} / null defaults): checked on the render
        for key, sub in value.items():
            if key not in default:
                if f"{path}{key}" not in PASSED_THROUGH and path not in COPIED_WHOLE:
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
