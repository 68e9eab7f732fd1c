"""Files of this repository that the model's comments point at exist: a reader sent to a file that
was moved (charts-values/versions.yaml became model/versions.py) finds nothing there."""
import pathlib
import re

from tests.support.paths import REPO

ROOT = REPO
# A path of this repository: one of its top-level folders, not the tail of an upstream path.
_CITED = re.compile(r"(?<![\w/.-])(?:charts-values|components|image|jobs|model|tests|tools)/[\w./-]*\w"
                    r"\.(?:py|yaml|sh|json)\b")


def missing_citations(text: str, root: pathlib.Path) -> list[str]:
    return sorted({p for p in _CITED.findall(text) if not (root / p).exists()})


def test_every_repository_file_the_model_cites_exists():
    cited = [(f.name, missing_citations(f.read_text(), ROOT)) for f in sorted((ROOT / "model").glob("*.py"))]
    assert [(name, missing) for name, missing in cited if missing] == []


def test_a_cited_file_that_is_gone_is_found():
    text = "pairing (charts-values/versions.yaml slinkyPairing); pins in model/versions.py"
    assert missing_citations(text, ROOT) == ["charts-values/versions.yaml"]


def test_the_tail_of_an_upstream_path_is_not_taken_for_a_repository_file():
    text = "aws/eks-charts stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml and helm/slurm/tools/x.py"
    assert missing_citations(text, ROOT) == []
