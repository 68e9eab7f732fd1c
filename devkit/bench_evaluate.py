"""Benchmark: how long the program takes to evaluate (what `pulumi preview` spends in it),
against the time to import its SDKs, and the modelled `pulumi up` timeline of the real graph
(devkit/bench_timeline.py) on the dev stack and on p5.48xlarge.

    python -m devkit.bench_evaluate [--runs 5]

Each measurement is a fresh interpreter; imports and evaluations alternate, so a machine that
gets busier or quieter affects both alike. Both read compiled bytecode, as a user's second
`pulumi preview` does: the SDKs come with theirs, and the program's is written once, by a first
run, into a private cache (PYTHONPYCACHEPREFIX), whatever PYTHONDONTWRITEBYTECODE says.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from devkit import bench_timeline

# Every SDK module a run of the program loads (pulumi_aws and pulumi_kubernetes load theirs
# lazily): importing exactly these is the floor the program's evaluation is compared with.
LOADED = (
    "import sys; sys.path[:0] = ['.']; from devkit.offline_run import run_program; run_program('dev'); "
    "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))))"
)
PROGRAM = (
    "import sys, time; sys.path[:0] = ['.']; t = time.perf_counter(); "
    "from devkit.offline_run import run_program; g = run_program('dev'); "
    "print(f'{time.perf_counter() - t:.3f} {len(g.resources)}')"
)


# The stacks whose modelled `pulumi up` is printed.
TIMELINES = {"the dev stack": {}, "the dev stack on p5.48xlarge": {"gpuInstanceType": "p5.48xlarge"}}


def _timed(code: str, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    return time.perf_counter() - start, out.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_evaluate", description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        modules = _timed(LOADED, env)[1].split()  # also fills the bytecode cache
        imports, runs = [], []
        for _ in range(args.runs):
            imports.append(_timed("import " + ", ".join(modules), env)[0])
            runs.append(_timed(PROGRAM, env))
    whole = [t for t, _ in runs]
    own = [float(out.split()[0]) for _, out in runs]
    resources = runs[0][1].split()[1]
    print(f"runs: {args.runs} (fresh interpreter each)")
    print(
        f"import the {len(modules)} SDK modules a run loads: median {statistics.median(imports):.2f} s "
        f"(min {min(imports):.2f}, max {max(imports):.2f})"
    )
    print(
        f"import + evaluate the program:        median {statistics.median(whole):.2f} s "
        f"(min {min(whole):.2f}, max {max(whole):.2f})"
    )
    print(
        f"in-process, imports included ({resources} resources): median {statistics.median(own):.2f} s under mocks"
    )
    print(f"evaluation / SDK import: {statistics.median(whole) / statistics.median(imports):.3f} (medians)")
    print(bench_timeline.durations_table())
    for title, overrides in TIMELINES.items():
        print(bench_timeline.report(bench_timeline.run_program("dev", overrides), title)[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
