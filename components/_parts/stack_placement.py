"""The stack's pods placed on its own nodes in a cluster it shares: a Pulumi transformation, given
to each component of the Slurm layer in that mode, that rewrites every block with a nodeSelector in
a Kubernetes object's or a Helm release's inputs by model/builders/stack_placement.py's rule. A
component's transformations apply to every resource under it (Pulumi, "Resource options:
transformations": https://www.pulumi.com/docs/iac/concepts/options/transformations/), so no pod
spec or chart values block escapes it, values resolved later (Outputs) included."""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from model.builders.stack_placement import StackPlacement


def _walk(value: Any, placement: StackPlacement) -> Any:
    if isinstance(value, pulumi.Output):
        return value.apply(lambda v: _walk(v, placement))
    if isinstance(value, dict):
        walked = {k: _walk(v, placement) for k, v in value.items()}
        return placement.placed(walked) if "nodeSelector" in walked else walked
    if isinstance(value, (list, tuple)):
        return [_walk(v, placement) for v in value]
    return value


def transformation(placement: StackPlacement) -> pulumi.ResourceTransformation:
    """The transformation for the layer's components: Kubernetes resources only."""

    def place(args: pulumi.ResourceTransformationArgs) -> Optional[pulumi.ResourceTransformationResult]:
        if not args.type_.startswith("kubernetes:"):
            return None
        return pulumi.ResourceTransformationResult(_walk(dict(args.props), placement), args.opts)

    return place
