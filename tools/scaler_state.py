"""What an autoscaling pool's scaler says about itself, read from the two objects KEDA keeps: the
ScaledObject's status conditions (keda.sh/v1alpha1: Ready, Active, Fallback, Paused; the CRD's
status.conditions, ../shared/ref/charts/keda-2.20.2/templates/crds/crd-scaledobjects.yaml) and the
status of the HPA KEDA made for it, keda-hpa-<ScaledObject> (as SlinkyProject/slurm-operator
docs/usage/autoscaling.md at v1.2.1 shows it: keda-hpa-scale-radar), whose autoscaling/v2
conditions AbleToScale, ScalingActive and ScalingLimited carry the HPA's last decision and why
(https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#appendix-horizontal-pod-autoscaler-status-conditions).
Pure: tools/verify.py fetches the objects."""

from __future__ import annotations

from typing import Mapping

HPA_PREFIX = "keda-hpa-"
SCALED_OBJECT_CONDITIONS = ("Ready", "Active", "Fallback", "Paused")
HPA_CONDITIONS = ("AbleToScale", "ScalingActive", "ScalingLimited")


def hpa_name(scaled_object: str) -> str:
    return f"{HPA_PREFIX}{scaled_object}"


def _conditions(obj: Mapping | None) -> dict[str, Mapping]:
    return {c.get("type", ""): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def _say(condition: Mapping) -> str:
    why = " ".join(part for part in (condition.get("reason"), condition.get("message")) if part)
    return f"{condition.get('type')}={condition.get('status')}" + (f" ({why})" if why else "")


def assess(scaled_object: Mapping | None, hpa: Mapping | None, name: str) -> tuple[bool, str]:
    """Whether the scaler works (its ScaledObject Ready, its HPA able to scale), and one line with
    its state and its last decision."""
    if scaled_object is None:
        return (
            False,
            f"no ScaledObject {name}: the pool cannot scale (is KEDA installed? `pulumi up` makes it)",
        )
    found = _conditions(scaled_object)
    parts = [_say(found[t]) for t in SCALED_OBJECT_CONDITIONS if t in found]
    ready = found.get("Ready", {}).get("status") == "True"
    if hpa is None:
        return False, "; ".join([*parts, f"no HPA {hpa_name(name)} yet"])
    status = hpa.get("status") or {}
    decided = f"HPA replicas {status.get('currentReplicas', 0)} -> {status.get('desiredReplicas', 0)}"
    if status.get("lastScaleTime"):
        decided += f", last scaled {status['lastScaleTime']}"
    hpa_found = _conditions(hpa)
    parts += [decided, *(_say(hpa_found[t]) for t in HPA_CONDITIONS if t in hpa_found)]
    able = hpa_found.get("AbleToScale", {}).get("status") != "False"
    return ready and able, "; ".join(parts)
