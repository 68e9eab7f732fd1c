"""devkit/chart_render.py: a Slinky release staged as its release branch renders as the release
would, its charts bumped to the release's version as the release commit bumps them and the
operator's CRD chart packed in as `make build-chart` packs it; the reference data is read, never
changed."""

import pytest
import yaml

from devkit import chart_render, reference_data

RELEASE = "1.2.2"
BRANCH = reference_data.RELEASE_BRANCHES[RELEASE]


def _images(objects) -> dict[str, list[str]]:
    return {
        o["metadata"]["name"]: [c["image"] for c in o["spec"]["template"]["spec"]["containers"]]
        for o in objects
        if o["kind"] == "Deployment"
    }


def test_the_operator_and_webhook_images_are_tagged_with_the_release():
    objects = chart_render.render("slurm-operator", RELEASE, {}, "slurm-operator", "slinky")
    assert _images(objects) == {
        "slurm-operator": [f"ghcr.io/slinkyproject/slurm-operator:{RELEASE}"],
        "slurm-operator-webhook": [f"ghcr.io/slinkyproject/slurm-operator-webhook:{RELEASE}"],
    }


def test_each_chart_carries_the_release_version():
    for chart in reference_data.SLINKY_CHARTS:
        with chart_render.load(chart, RELEASE) as loaded:
            assert loaded.metadata["version"] == RELEASE, chart


def test_the_slurm_charts_app_version_stays_its_slurm_release():
    with chart_render.load("slurm", RELEASE) as loaded:
        assert loaded.metadata["appVersion"] == "26.05"


def test_the_operator_chart_depends_on_the_crd_chart_of_the_release_and_packs_it():
    with chart_render.load("slurm-operator", RELEASE) as loaded:
        assert [(d["name"], d["version"]) for d in loaded.metadata["dependencies"]] == [
            ("slurm-operator-crds", RELEASE)
        ]
    sources = chart_render.render_sources(
        "slurm-operator", RELEASE, {"crds": {"enabled": True}}, "slurm-operator", "slinky"
    )
    crds = {source for source, o in sources if o["kind"] == "CustomResourceDefinition"}
    assert len(crds) == 6 and all(s.startswith("slurm-operator/charts/slurm-operator-crds/") for s in crds)


def test_the_staged_branch_is_left_as_it_was():
    chart_render.render("slurm-operator", RELEASE, {}, "slurm-operator", "slinky")
    staged = yaml.safe_load((reference_data.chart_dir("slurm-operator", RELEASE) / "Chart.yaml").read_text())
    assert (
        staged["version"] == BRANCH.carries
        and not (reference_data.chart_dir("slurm-operator", RELEASE) / "charts").exists()
    )


def _without_release(node, release: str):
    """The object with what names the release (the version label, the chart label
    <chart>-<release>, an image tag :<release>) written as RELEASE, and a Secret's data, which the
    charts generate afresh on each render (`lookup` finds nothing offline), as GENERATED."""
    if isinstance(node, dict):
        if node.get("kind") == "Secret":
            node = {**node, "data": dict.fromkeys(node.get("data") or {}, "GENERATED")}
        return {k: _without_release(v, release) for k, v in node.items()}
    if isinstance(node, list):
        return [_without_release(v, release) for v in node]
    if isinstance(node, str) and (node == release or node.endswith((f"-{release}", f":{release}"))):
        return node[: -len(release)] + "RELEASE"
    return node


@pytest.mark.parametrize("chart", reference_data.SLINKY_CHARTS)
def test_the_branch_renders_what_the_previous_release_did_but_for_the_version(chart):
    """What the branch adds to its charts (the webhook certificate reused when cert-manager is off,
    ../shared/ref/charts/README.md) does not show with the charts' defaults, cert-manager on: the
    objects are v1.2.1's, with 1.2.2 where they name the release."""
    before = chart_render.render(chart, BRANCH.carries, {}, chart, "slinky")
    after = chart_render.render(chart, RELEASE, {}, chart, "slinky")
    assert [_without_release(o, RELEASE) for o in after] == [
        _without_release(o, BRANCH.carries) for o in before
    ]
