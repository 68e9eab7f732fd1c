"""The slinky-eks component provider: Pulumi's Python component provider serving SlurmOnEks
(components/slurm_on_eks.py) to Pulumi programs in any language, which add it with
`pulumi package add <this repository>/provider@<tag>` and get an SDK in their own language
(docs/decisions/slurm-layer-component.md; docs/extending.md, "Slurm in your own Pulumi program")."""

from pulumi.provider.experimental import component_provider_host

from components.slurm_on_eks import SlurmOnEks
from model.facts import release

if __name__ == "__main__":
    component_provider_host([SlurmOnEks], name="slinky-eks", version=release.VERSION)
