"""Pulumi.yaml's `config:` block, the README's config and outputs tables and docs/rules.md's table
of rule ids are what `python -m devkit.project_docs` writes from the model (model/checks/config_schema.py,
model/facts/outputs.py, the ids model/checks/problems.py declares), and docs/architecture.md's
inventories what it writes from the code's docstrings and wiring: the check passes here, and names
the one file an edit made stale."""

import shutil
import subprocess
import sys

import pytest
import yaml

from devkit import project_docs
from model.checks import config_schema, problems
from tests.support.paths import REPO


def _docs(root, *args):
    return subprocess.run(
        [sys.executable, "-m", "devkit.project_docs", "--root", str(root), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


# What the architecture's inventories are read from, copied whole; of the other top-level packages
# their __init__.py only.
_READ_WHOLE = ("model", "components", "cluster_programs")


@pytest.fixture
def copy(tmp_path):
    for name in (
        project_docs.PROJECT_FILE,
        project_docs.README,
        project_docs.RULES_PAGE,
        project_docs.ARCHITECTURE,
        project_docs.DEPLOY_TIME,
        "__main__.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    for directory in REPO.iterdir():
        if directory.name in _READ_WHOLE:
            shutil.copytree(
                directory, tmp_path / directory.name, ignore=shutil.ignore_patterns("__pycache__")
            )
        elif (directory / "__init__.py").exists() or f"{directory.name}/" in project_docs.LAYOUT_OTHERS:
            (tmp_path / directory.name).mkdir(exist_ok=True)
            if (directory / "__init__.py").exists():
                shutil.copy(directory / "__init__.py", tmp_path / directory.name / "__init__.py")
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


def test_a_rule_declared_without_a_row_in_the_rules_page_is_stale(copy, monkeypatch):
    monkeypatch.setitem(
        problems.RULE_IDS, "a-new-rule", problems.RuleId("a-new-rule", problems.ERROR, "something", ("k",))
    )
    now, then = project_docs.written(copy)[project_docs.RULES_PAGE]
    assert now != then and "| `a-new-rule` | error | `k` | something |" in then


def test_a_row_edited_in_the_rules_page_only_is_stale(copy):
    _edit(copy / "docs/rules.md", "| `vpc-cidr` | error |", "| `vpc-cidr` | warning |")
    result = _docs(copy, "--check")
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["docs/rules.md"]


def test_the_copy_the_tests_edit_is_as_the_repository(copy):
    result = _docs(copy, "--check")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_new_model_module_without_a_docstring_has_no_row_and_fails(copy):
    (copy / "model" / "facts" / "tides.py").write_text("HIGH = 2\n")
    result = _docs(copy, "--check")
    assert result.returncode == 2
    assert result.stderr.startswith("model/facts/tides.py: no docstring, so no row in docs/architecture.md")


def test_a_new_model_module_makes_the_architecture_stale_until_written(copy):
    (copy / "model" / "facts" / "tides.py").write_text('"""When the tide is high. Not used."""\n')
    result = _docs(copy, "--check")
    assert result.returncode == 1 and result.stdout.startswith("docs/architecture.md: stale")
    assert _docs(copy).returncode == 0
    assert (
        "| `model/facts/tides.py` | When the tide is high |" in (copy / project_docs.ARCHITECTURE).read_text()
    )


def test_a_new_in_cluster_program_gets_its_row(copy):
    (copy / "cluster_programs" / "drain.py").write_text('"""Drains a node. Standard library only."""\n')
    assert _docs(copy).returncode == 0
    assert "| `cluster_programs/drain.py` | Drains a node |" in (copy / project_docs.ARCHITECTURE).read_text()


def test_a_new_top_level_directory_of_python_without_a_row_fails(copy):
    (copy / "scripts").mkdir()
    (copy / "scripts" / "tidy.py").write_text('"""Tidies."""\n')
    result = _docs(copy, "--check")
    assert result.returncode == 2 and result.stderr.startswith("scripts/: holds Python but is neither")


def test_a_directory_gitignore_names_is_no_part_of_the_layout(copy):
    # `pip install .` in a checkout builds the package under build/ (pyproject.toml).
    shutil.copy(REPO / ".gitignore", copy / ".gitignore")
    (copy / "build" / "lib" / "components").mkdir(parents=True)
    (copy / "build" / "lib" / "components" / "network.py").write_text('"""The VPC."""\n')
    assert _docs(copy, "--check").returncode == 0


def test_a_component_added_to_a_group_joins_the_graph_and_the_table(copy):
    source = (copy / "components" / "device_plugins.py").read_text()
    (copy / "components" / "fabric_manager.py").write_text(
        source.replace('"slinky-eks:devices:DevicePlugins"', '"slinky-eks:devices:FabricManager"')
        .replace("class DevicePlugins(", "class FabricManager(")
        .replace('"""The NVIDIA and EFA device plugins', '"""NVIDIA Fabric Manager', 1)
    )
    assert _docs(copy).returncode == 0
    text = (copy / project_docs.ARCHITECTURE).read_text()
    assert "  subgraph devices\n    DevicePlugins\n    FabricManager\n  end" in text
    assert "| `slinky-eks:devices:FabricManager` | `components/fabric_manager.py` |" in text


def test_the_graph_draws_what_main_wires_and_what_a_component_declares_inside_itself():
    edges = project_docs.wiring(REPO)
    assert ("NodeGroups", "DevicePlugins") in edges  # DevicePluginsArgs(depends_on=nodes.gpu_ready)
    assert ("MetricsStore", "PoolAutoscaling") in edges  # query_endpoint=metrics.query_endpoint
    assert ("SlurmCluster", "StateVolumeGuard") in edges  # declared inside SlurmCluster


def test_the_graph_draws_the_slurm_layers_wiring_and_its_call_as_the_layer():
    edges = project_docs.wiring(REPO)
    # components/slurm_layer.py's declare_slurm_layer wires the layer's components ...
    assert ("SharedStorage", "SlurmCluster") in edges  # shared_claim=storage.claim_name
    # ... and __main__.py's call of it is the layer, waiting for the cluster.
    assert ("Cluster", "SlurmLayer") in edges  # depends_on=cluster.ready


def test_every_registered_group_is_one_the_components_package_lists():
    listed = {group for group, _ in project_docs.token_groups(REPO)}
    assert {group for group, _, _, _ in project_docs.components(REPO)} == listed


def test_a_figure_edited_in_the_deploy_time_table_only_is_stale(copy):
    row = "| laptop, 20 Mbit/s (20/20) | `codebuild` |"
    _edit(copy / "docs/deploy-time.md", f"{row} 7m47s |", f"{row} 5m00s |")
    result = _docs(copy, "--check")
    assert result.returncode == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["docs/deploy-time.md"]
