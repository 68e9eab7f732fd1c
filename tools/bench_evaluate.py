"""Benchmark: how long the program takes to evaluate, against the time to import its SDKs, and
the longest dependency chain `pulumi up` has to walk (what it waits for).

    python -m tools.bench_evaluate [--runs 5]

Each measurement is a fresh interpreter, so nothing is cached between runs.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# Every SDK module a run of the program loads (pulumi_aws and pulumi_kubernetes load theirs
# lazily): importing exactly these is the floor the program's evaluation is compared with.
LOADED = ("import sys; sys.path[:0] = ['tests', '.']; from harness import run_program; run_program('dev'); "
          "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))))")
PROGRAM = ("import sys, time; sys.path[:0] = ['tests', '.']; t = time.perf_counter(); "
           "from harness import run_program; g = run_program('dev'); "
           "print(f'{time.perf_counter() - t:.3f} {len(g.resources)}')")


def _timed(code: str) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out.strip()


def critical_path() -> list[str]:
    sys.path[:0] = ["tests", "."]
    from harness import run_program
    from tools.plan import _edges, levels
    graph = run_program("dev")
    depth, edges = levels(graph), _edges(graph)
    names = {r.urn: r.name for r in graph.resources}
    urn = max(depth, key=depth.get)
    chain = [urn]
    while depth[chain[-1]] > 0:
        chain.append(max((d for d in edges[chain[-1]] if d in depth), key=depth.get))
    return [names[u] for u in reversed(chain)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_evaluate", description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    modules = _timed(LOADED)[1].split()
    imports = [_timed("import " + ", ".join(modules))[0] for _ in range(args.runs)]
    runs = [_timed(PROGRAM) for _ in range(args.runs)]
    whole = [t for t, _ in runs]
    own = [float(out.split()[0]) for _, out in runs]
    resources = runs[0][1].split()[1]
    print(f"runs: {args.runs} (fresh interpreter each)")
    print(f"import the {len(modules)} SDK modules a run loads: median {statistics.median(imports):.2f} s "
          f"(min {min(imports):.2f}, max {max(imports):.2f})")
    print(f"import + evaluate the program:        median {statistics.median(whole):.2f} s "
          f"(min {min(whole):.2f}, max {max(whole):.2f})")
    print(f"in-process, imports included ({resources} resources): median {statistics.median(own):.2f} s under mocks")
    chain = critical_path()
    print(f"longest dependency chain ({len(chain)} steps): " + " -> ".join(chain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
