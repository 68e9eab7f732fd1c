"""Benchmark: the wall time of `make test` on a fresh clone and on a warm one.

    python -m devkit.bench_suite [--commit REV] [--fresh 3] [--warm 3] [--target test] [--cold-cache]

A fresh run clones REV (default HEAD of this checkout) into a new directory beside the reference
data's directory (../shared/ref from the clone, as devkit/reference_data.py looks for it; --beside
puts the clones elsewhere) and runs
`make TARGET` there; each clone is deleted afterwards. The warm runs run `make TARGET` again, N
times, in the last fresh clone (in a new clone, after one run to warm it, with --fresh 0 or
--cold-cache), deleted at the end. The caches outside the checkout (.venv, .cuda and the
Slurm roots: devkit/cached_install.sh, tests/slurm/build-roots.sh) are the user's, so a fresh run
measures a new clone on a machine that has run the tests before; --cold-cache gives the fresh runs
an empty cache each (a new machine, less pip's wheel cache). Prints median and range of each kind
as a markdown table; each run's log is kept in the benchmark's directory, printed on a failure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devkit.offline_run import PROJECT_DIR
from devkit.reference_data import BESIDE


def _clone(source: Path, commit: str, where: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(source), str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "checkout", "--quiet", "--detach", commit], check=True)
    return where


def _make(clone: Path, target: str, log: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run(
            ["make", "--no-print-directory", target], cwd=clone, stdout=out, stderr=subprocess.STDOUT, env=env
        ).returncode
    took = time.perf_counter() - start
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise SystemExit(
            f"make {target} in {clone} exited with {code} after {took:.0f} s (log: {log}):\n{tail}"
        )
    return took


def _row(kind: str, times: list[float]) -> str:
    if not times:
        return f"| {kind} | 0 | - | - |"
    return (
        f"| {kind} | {len(times)} | {statistics.median(times):.0f} s | {min(times):.0f}-{max(times):.0f} s |"
    )


def table(fresh: list[float], warm: list[float]) -> str:
    return "\n".join(
        ["| run | n | median | range |", "|---|---|---|---|", _row("fresh clone", fresh), _row("warm", warm)]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench_suite", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--commit", default="HEAD")
    p.add_argument("--source", type=Path, default=PROJECT_DIR, help="the repository to clone")
    p.add_argument("--fresh", type=int, default=3, metavar="N")
    p.add_argument("--warm", type=int, default=3, metavar="N")
    p.add_argument("--target", default="test", help="the make target (default test)")
    p.add_argument("--cold-cache", action="store_true", help="an empty cache for each fresh run")
    p.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="where each run's log goes (default: a new temporary directory)",
    )
    p.add_argument(
        "--beside",
        type=Path,
        default=None,
        help="where the clones go (default: the directory holding ../shared)",
    )
    args = p.parse_args(argv)
    for name in ("fresh", "warm"):
        if getattr(args, name) < 0:
            p.error(f"--{name} {getattr(args, name)}: a number of runs, 0 or more")
    commit = subprocess.run(
        ["git", "-C", str(args.source), "rev-parse", "--verify", args.commit + "^{commit}"],
        capture_output=True,
        text=True,
    )
    if commit.returncode != 0:
        p.error(f"--commit {args.commit}: not a commit of {args.source} ({commit.stderr.strip()})")
    rev = commit.stdout.strip()
    # The clones' ../shared must be the reference data's directory: clone beside it.
    shared = BESIDE.parent
    beside = args.beside or shared.parent
    if args.beside is None and not shared.is_dir():
        p.error(f"no reference data directory at {shared}: the clones look for ../shared/ref beside them")
    if not beside.is_dir():
        p.error(f"--beside {beside}: not a directory")
    bench = args.logs or Path(tempfile.mkdtemp(prefix="bench-suite-logs-"))
    bench.mkdir(parents=True, exist_ok=True)
    fresh: list[float] = []
    warm: list[float] = []
    clone = None
    try:
        for i in range(args.fresh):
            if clone is not None:
                shutil.rmtree(clone, ignore_errors=True)
            clone = Path(tempfile.mkdtemp(prefix="bench-suite-", dir=beside))
            env = dict(os.environ)
            if args.cold_cache:
                env["SLINKY_EKS_CACHE"] = str(bench / f"cache-{i}")
            try:
                _clone(args.source, rev, clone)
                fresh.append(_make(clone, args.target, bench / f"fresh-{i}.log", env))
            finally:
                if args.cold_cache:
                    shutil.rmtree(bench / f"cache-{i}", ignore_errors=True)
            print(f"fresh {i + 1}/{args.fresh}: {fresh[-1]:.0f} s", file=sys.stderr)
        if args.warm:
            # The last fresh clone is warm now, but not with a cold cache, which is gone.
            if clone is None or args.cold_cache:
                if clone is not None:
                    shutil.rmtree(clone, ignore_errors=True)
                clone = _clone(args.source, rev, Path(tempfile.mkdtemp(prefix="bench-suite-", dir=beside)))
                _make(clone, args.target, bench / "warm-up.log", dict(os.environ))
            for i in range(args.warm):
                warm.append(_make(clone, args.target, bench / f"warm-{i}.log", dict(os.environ)))
                print(f"warm {i + 1}/{args.warm}: {warm[-1]:.0f} s", file=sys.stderr)
    finally:
        if clone is not None:
            shutil.rmtree(clone, ignore_errors=True)
    print(
        f"`make {args.target}` at {rev[:12]}, {os.cpu_count()} CPUs, "
        f"{'empty' if args.cold_cache else 'existing'} cache for fresh clones (logs: {bench})\n"
    )
    print(table(fresh, warm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
