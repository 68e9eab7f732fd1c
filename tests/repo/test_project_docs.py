"""Pulumi.yaml's `config:` block and the README's config and outputs tables are what
`python -m devkit.project_docs` writes from the model (model/checks/config_schema.py, model/facts/outputs.py):
the check passes here, and names the one file an edit made stale."""

import shutil
import subprocess
import sys

import pytest
import yaml

from devkit import project_docs
from model.checks import config_schema
from tests.support.paths import REPO


def _docs(root, *args):
    return subprocess.run(
        [sys.executable, "-m", "devkit.project_docs", "--root", str(root), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def copy(tmp_path):
    for name in (project_docs.PROJECT_FILE, project_docs.README):
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def _edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_the_repository_is_as_the_model_writes_it():
    result = _docs(REPO, "--check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_description_edited_in_the_project_file_only_is_stale(copy):
    _edit(copy / "Pulumi.yaml", "description: Number of core nodes.", "description: How many core nodes.")
    result = _docs(copy, "--check")
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["Pulumi.yaml"]


def test_a_description_edited_in_the_readme_table_only_is_stale(copy):
    _edit(copy / "README.md", "| Number of core nodes. |", "| How many core nodes. |")
    result = _docs(copy, "--check")
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["README.md"]


def test_an_output_row_edited_in_the_readme_only_is_stale(copy):
    _edit(copy / "README.md", "| `region` | AWS region |", "| `region` | the region |")
    assert _docs(copy, "--check").stdout.startswith("README.md: stale")


def test_the_check_writes_nothing_and_a_run_rewrites_what_is_stale(copy):
    _edit(copy / "Pulumi.yaml", "description: Number of core nodes.", "description: How many core nodes.")
    _edit(copy / "README.md", "| Number of core nodes. |", "| How many core nodes. |")
    stale = {n: (copy / n).read_bytes() for n in (project_docs.PROJECT_FILE, project_docs.README)}
    assert _docs(copy, "--check").returncode == 1
    assert {n: (copy / n).read_bytes() for n in stale} == stale
    written = _docs(copy)
    assert written.returncode == 0 and written.stdout.splitlines() == [
        "Pulumi.yaml: written",
        "README.md: written",
    ]
    assert {n: (copy / n).read_bytes() for n in stale} == {n: (REPO / n).read_bytes() for n in stale}


def test_the_project_file_outside_its_config_block_is_kept_byte_for_byte(copy):
    # A key after config: and a comment inside the block: the block ends at the next top-level key.
    (copy / "Pulumi.yaml").write_text(
        (REPO / "Pulumi.yaml").read_text().replace("config:\n", "config:\n  # stale\n")
        + "template:\n  description: kept\n"
    )
    written = project_docs.project_file(
        (copy / "Pulumi.yaml").read_text(), config_schema.schema(project_docs._DAY)
    )
    assert written == (REPO / "Pulumi.yaml").read_text() + "template:\n  description: kept\n"


def test_the_output_is_the_same_on_every_run():
    first = project_docs.written(REPO)
    assert project_docs.written(REPO) == first


def test_a_readme_without_a_marker_is_refused_naming_it(copy):
    _edit(copy / "README.md", "<!-- /outputs-table -->", "")
    result = _docs(copy, "--check")
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "README.md: no '<!-- outputs-table: ... -->' ... '<!-- /outputs-table -->' block"
    )


def test_a_project_file_without_a_config_block_is_refused_naming_it(copy):
    _edit(copy / "Pulumi.yaml", "\nconfig:\n", "\nsettings:\n")
    result = _docs(copy, "--check")
    assert result.returncode == 2 and result.stderr.startswith("Pulumi.yaml: no top-level 'config:'")


@pytest.mark.parametrize(
    "value, written",
    [
        ("1.36", '"1.36"'),
        ("", '""'),
        ("g6.12xlarge", "g6.12xlarge"),
        ("yes", '"yes"'),
        ("a: b", '"a: b"'),
        ("#1", '"#1"'),
        (2, "2"),
        (False, "false"),
        ([], "[]"),
    ],
)
def test_a_scalar_is_written_so_yaml_reads_it_back_as_itself(value, written):
    assert project_docs._yaml_scalar(value) == written
    assert yaml.safe_load(f"k: {written}") == {"k": value}


def test_a_block_yaml_would_read_otherwise_is_refused_naming_the_key():
    keys = config_schema.schema(project_docs._DAY)
    block = project_docs.config_block(keys).replace('default: "1.36"', "default: 1.36")
    with pytest.raises(project_docs.StaleDocError, match=r"key kubernetesVersion reads back as .*1\.36"):
        project_docs._reads_back(block, keys)


def test_a_pipe_in_a_table_cell_is_escaped():
    key = config_schema.Key("colour", "string", "red|blue", description="a | b", attr=None, on_change="c")
    assert project_docs.config_table((key,)).splitlines()[2] == "| `colour` | `red\\|blue` | a \\| b | c |"
