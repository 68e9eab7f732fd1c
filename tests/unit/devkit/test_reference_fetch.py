"""`python -m devkit.reference_fetch`: the reference data for a clone with no ../shared beside it,
fetched from upstream, pinned by version and checked against a digest before it is used. Upstream
is out of reach here, so the fetch runs against a mirror served on loopback: a Helm chart
repository packaged from ../shared/ref, the source archives and files laid out as upstream
publishes them, and a wheel shaped like moto's."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import pathlib
import shutil
import tarfile
import threading
import zipfile

import helm_python
import pytest

from devkit import reference_data, reference_fetch
from devkit.reference_fetch import ArchiveEntry, ChartEntry, FileEntry, InstanceTypesEntry, TagArchiveEntry
from tests.support.paths import REPO


def _ref_copy_digest(entry, shared_ref: pathlib.Path) -> str:
    copy = shared_ref / entry.path
    if isinstance(entry, ChartEntry):
        return reference_fetch.tree_digest(copy, skip_chart_yaml=True)
    if isinstance(entry, ArchiveEntry) and entry.keep_archive:
        files = reference_fetch._archive_files(copy.read_bytes(), entry.member, entry.keep)
        return reference_fetch.files_digest(files)
    if isinstance(entry, ArchiveEntry):
        return reference_fetch.tree_digest(copy)
    import hashlib

    return hashlib.sha256(copy.read_bytes()).hexdigest()


def _pinned(entry) -> str:
    return (
        entry.sha256 if isinstance(entry, (FileEntry, TagArchiveEntry, InstanceTypesEntry)) else entry.digest
    )


def test_every_pinned_digest_is_that_of_the_copy_the_tests_read(shared_ref):
    wrong = [e.path for e in reference_fetch.entries() if _ref_copy_digest(e, shared_ref) != _pinned(e)]
    assert wrong == []


def test_every_chart_the_program_installs_is_fetched_where_the_tests_render_it(shared_ref):
    paths = {e.path for e in reference_fetch.entries()}
    missing = []
    for chart in reference_fetch.pinned_charts():
        where = reference_data.chart_dir(chart.chart, chart.version).relative_to(shared_ref).as_posix()
        if where not in paths and where.rsplit("/", 1)[0] not in paths:
            missing.append(where)
    assert missing == []


def test_the_tag_archives_are_the_ones_the_slurm_roots_build_checks():
    # tests/slurm/roots/sid.sources: "<sha256>  <file>", each file taken from the reference data's src/.
    sources = dict(
        reversed(line.split()) for line in (REPO / "tests/slurm/roots/sid.sources").read_text().splitlines()
    )
    fetched = {
        e.path.removeprefix("src/"): e.sha256
        for e in reference_fetch.entries()
        if isinstance(e, TagArchiveEntry)
    }
    assert fetched == sources


def test_a_tag_archive_compressed_otherwise_is_stored_as_git_archive_writes_it(shared_ref):
    # The same tar stream, gzip-compressed at another level and with a time in its header.
    copy = (shared_ref / "src/pyxis-v0.24.0.tar.gz").read_bytes()
    otherwise = gzip.compress(gzip.decompress(copy), compresslevel=9, mtime=1700000000)
    assert otherwise != copy
    assert reference_fetch.git_archive_gzip(gzip.decompress(otherwise)) == copy


def test_a_chart_pinned_without_a_digest_is_an_error_naming_it(monkeypatch):
    monkeypatch.delitem(reference_fetch.CHART_DIGESTS, ("keda", "2.20.2"))
    with pytest.raises(reference_fetch.FetchError, match="no pinned digest for chart keda 2.20.2"):
        reference_fetch.entries()


def test_a_vendored_subchart_archive_counts_as_the_directory_helm_package_writes(tmp_path):
    as_archive, as_directory = tmp_path / "a", tmp_path / "b"
    (as_archive / "charts").mkdir(parents=True)
    (as_directory / "charts" / "sub").mkdir(parents=True)
    for root in (as_archive, as_directory):
        (root / "values.yaml").write_text("x: 1\n")
    (as_directory / "charts" / "sub" / "values.yaml").write_text("y: 2\n")
    with tarfile.open(as_archive / "charts" / "sub-0.1.0.tgz", "w:gz") as archive:
        archive.add(as_directory / "charts" / "sub" / "values.yaml", arcname="sub/values.yaml")
    assert reference_fetch.tree_digest(as_archive, skip_chart_yaml=True) == reference_fetch.tree_digest(
        as_directory, skip_chart_yaml=True
    )


def test_the_instance_types_file_keeps_gpu_and_efa_types_and_the_catalog_fields_only():
    (entry,) = [e for e in reference_fetch.entries() if isinstance(e, InstanceTypesEntry)]
    records = {
        "m6i.large": {"InstanceType": "m6i.large", "NetworkInfo": {"EfaSupported": False}},
        "g6.12xlarge": {
            "InstanceType": "g6.12xlarge",
            "GpuInfo": {"Gpus": [{"Manufacturer": "NVIDIA"}]},
            "Hypervisor": "nitro",
        },
        "c5n.18xlarge": {"InstanceType": "c5n.18xlarge", "NetworkInfo": {"EfaSupported": True}},
    }
    document = json.loads(reference_fetch.instance_types_document(records, entry))
    assert document["InstanceTypes"] == [
        {"InstanceType": "c5n.18xlarge", "NetworkInfo": {"EfaSupported": True}},
        {"InstanceType": "g6.12xlarge", "GpuInfo": {"Gpus": [{"Manufacturer": "NVIDIA"}]}},
    ]


def _mirror(shared_ref: pathlib.Path, root: pathlib.Path, base_url: str) -> None:
    """What upstream publishes, built from the reference copies: a chart repository of `helm
    package`d charts, the git archives, the files, moto's wheel."""
    root.mkdir()
    for entry in reference_fetch.entries():
        source = shared_ref / entry.path
        if isinstance(entry, ChartEntry):
            helm_python.package(source, destination=root)
        elif isinstance(entry, ArchiveEntry) and entry.keep_archive:
            (root / entry.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / entry.path)
        elif isinstance(entry, ArchiveEntry):
            target = root / f"{entry.path}.tar.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            with tarfile.open(target, "w:gz") as archive:
                archive.add(source / "slurm", arcname=f"{entry.member}/slurm")
                archive.add(source / "slurm-operator", arcname=f"{entry.member}/slurm-operator")
                archive.add(source / "slurm-operator-crds", arcname=f"{entry.member}/slurm-operator-crds")
        elif isinstance(entry, TagArchiveEntry):
            # As GitHub may serve it: the same tar stream, compressed otherwise.
            (root / entry.path).parent.mkdir(parents=True, exist_ok=True)
            tar = gzip.decompress(source.read_bytes())
            (root / entry.path).write_bytes(gzip.compress(tar, compresslevel=9, mtime=1700000000))
        elif isinstance(entry, FileEntry):
            (root / entry.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / entry.path)
        else:
            records = {
                r["InstanceType"]: {**r, "Hypervisor": "nitro"}
                for r in json.loads(source.read_text())["InstanceTypes"]
            }
            records["t3.micro"] = {"InstanceType": "t3.micro", "NetworkInfo": {"EfaSupported": False}}
            wheel = io.BytesIO()
            with zipfile.ZipFile(wheel, "w") as archive:
                archive.writestr(entry.member, gzip.compress(json.dumps(records).encode()))
            (root / entry.url.rsplit("/", 1)[1]).write_bytes(wheel.getvalue())
    helm_python.repo_index_generate(root, base_url=base_url)


@pytest.fixture
def mirror(shared_ref, tmp_path):
    """(directory, url) of a mirror served on loopback while the test runs."""
    root = tmp_path / "mirror"
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    _mirror(shared_ref, root, url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, url
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_a_fetch_from_the_mirror_reproduces_every_entry_the_tests_read(mirror, shared_ref, tmp_path):
    _, url = mirror
    into = tmp_path / "ref"
    assert reference_fetch.main(["--into", str(into), "--mirror", url]) == 0
    assert [e.path for e in reference_fetch.entries() if _ref_copy_digest(e, into) != _pinned(e)] == []
    assert (into / "charts/slurm-1.2.1/values.yaml").read_bytes() == (
        shared_ref / "charts/slurm-1.2.1/values.yaml"
    ).read_bytes()


def test_a_tampered_chart_is_refused_naming_it_and_leaves_the_destination_as_it_was(mirror, tmp_path, capsys):
    root, url = mirror
    keda = root / "keda-2.20.2.tgz"
    work = tmp_path / "unpacked"
    helm_python.expand(work, keda)
    values = work / "keda" / "values.yaml"
    values.write_text(values.read_text() + "\n# planted\n")
    keda.unlink()
    helm_python.package(work / "keda", destination=root)
    helm_python.repo_index_generate(root, base_url=url)
    into = tmp_path / "ref"
    into.mkdir()
    (into / "kept").write_text("as it was")

    assert reference_fetch.main(["--into", str(into), "--mirror", url]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("reference data not fetched: charts/keda-2.20.2: content digest ")
    assert sorted(p.name for p in into.iterdir()) == ["kept"]


def test_a_tag_archive_with_other_content_is_refused_naming_it(mirror, tmp_path, capsys):
    root, url = mirror
    served = root / "src/enroot-v4.1.2.tar.gz"
    served.write_bytes(gzip.compress(gzip.decompress(served.read_bytes()) + b"\0" * 512))
    assert reference_fetch.main(["--into", str(tmp_path / "ref"), "--mirror", url]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("reference data not fetched: src/enroot-v4.1.2.tar.gz: content digest ")


def test_an_unreachable_mirror_is_one_line_naming_the_address(tmp_path, capsys):
    into = tmp_path / "ref"
    assert reference_fetch.main(["--into", str(into), "--mirror", "http://127.0.0.1:9"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("reference data not fetched: ") and "127.0.0.1:9" in line
    assert not into.exists()
