"""Parse NVIDIA nccl-tests output and decide whether the run is correct and fast enough.

Used by the nccl-allreduce/allgather jobs (exit status) and by tools/report.py (table, chart).
Standard library only: it runs in the slurmd image and on a laptop.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass

# A data row: size count type redop root | out-of-place time algbw busbw #wrong | in-place ...
# nccl-tests v2.17.9 (src/util.cu): time and bandwidths come from getFloatStr, which switches to
# "%.1e" for large values, and #wrong is printed with "%6g" (5.36871e+08), or "N/A" without -c.
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(
    rf"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)"
    rf"\s+(?P<time>{_NUM})\s+(?P<algbw>{_NUM})\s+(?P<busbw>{_NUM})\s+(?P<wrong>{_NUM}|N/A)"
    rf"\s+(?P<itime>{_NUM})\s+(?P<ialgbw>{_NUM})\s+(?P<ibusbw>{_NUM})\s+(?P<iwrong>{_NUM}|N/A)(?:\s.*)?$"
)
_RANK_LINE = re.compile(r"^#\s+Rank\s+\d+\s", re.M)  # one per rank: "#  Rank  0 Group  0 Pid ..."


@dataclass(frozen=True)
class Row:
    size: int
    time_us: float
    algbw: float
    busbw: float
    wrong: int  # out-of-place + in-place; N/A counts as 0
    in_place_busbw: float


@dataclass(frozen=True)
class Result:
    rows: list[Row]
    out_of_bounds: int | None
    avg_busbw: float | None
    ranks: int | None
    socket_lines: int
    efa_lines: int

    @property
    def peak_busbw(self) -> float:
        return max((r.busbw for r in self.rows), default=0.0)


def _wrong(text: str) -> int:
    return 0 if text == "N/A" else round(float(text))


def parse(text: str) -> Result:
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            rows.append(
                Row(
                    size=int(m["size"]),
                    time_us=float(m["time"]),
                    algbw=float(m["algbw"]),
                    busbw=float(m["busbw"]),
                    wrong=_wrong(m["wrong"]) + _wrong(m["iwrong"]),
                    in_place_busbw=float(m["ibusbw"]),
                )
            )
    oob = re.search(r"Out of bounds values\s*:\s*(\d+)", text)
    avg = re.search(rf"Avg bus bandwidth\s*:\s*({_NUM})", text)
    ranks = len(_RANK_LINE.findall(text)) or None
    return Result(
        rows=rows,
        out_of_bounds=int(oob.group(1)) if oob else None,
        avg_busbw=float(avg.group(1)) if avg else None,
        ranks=ranks,
        socket_lines=len(re.findall(r"NET/Socket|Using network Socket", text)),
        efa_lines=len(re.findall(r"NET/OFI.*Selected provider is efa", text, re.I)),
    )


def verdict(result: Result, line_rate_gbps: float | None, expect_efa: bool) -> tuple[bool, list[str]]:
    """(passed, reasons): correctness and transport decide; the share of line rate is reported."""
    notes, ok = [], True
    if not result.rows:
        return False, ["no result rows: the benchmark did not run"]
    wrong = sum(r.wrong for r in result.rows)
    if wrong:
        ok = False
        notes.append(f"#wrong = {wrong} (must be 0)")
    else:
        notes.append("#wrong = 0 on every row")
    if result.out_of_bounds is None or result.out_of_bounds:
        ok = False
        notes.append(f"out of bounds values: {result.out_of_bounds} (must be 0)")
    if result.socket_lines and expect_efa:
        ok = False
        notes.append(f"socket fallback: {result.socket_lines} NET/Socket lines")
    elif result.socket_lines:
        # Off EFA (EXPECT_EFA=0: a cluster without EFA, the CPU/GPU test clusters) sockets are the
        # transport NCCL is left with; correctness still decides.
        notes.append(f"transport: TCP sockets ({result.socket_lines} NET/Socket lines; EFA not expected)")
    if expect_efa and not result.efa_lines:
        ok = False
        notes.append("EFA provider never selected")
    elif expect_efa and result.ranks and result.efa_lines < result.ranks:
        ok = False
        notes.append(f"only {result.efa_lines} of {result.ranks} ranks selected the EFA provider")
    if line_rate_gbps:
        ceiling = line_rate_gbps / 8
        share = result.peak_busbw / ceiling
        notes.append(
            f"peak busbw {result.peak_busbw:.2f} GB/s = {share:.0%} of the "
            f"{line_rate_gbps:g} Gbps ({ceiling:g} GB/s) EFA line rate"
        )
    return ok, notes


def table(result: Result) -> str:
    lines = [f"{'size':>12} {'time(us)':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>6}"]
    lines += [
        f"{r.size:>12} {r.time_us:>10.1f} {r.algbw:>8.2f} {r.busbw:>8.2f} {r.wrong:>6}" for r in result.rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("log")
    p.add_argument("--line-rate-gbps", type=float)
    p.add_argument("--expect-efa", type=int, default=None, help="default: $EXPECT_EFA")
    args = p.parse_args(argv)
    expect = args.expect_efa if args.expect_efa is not None else os.environ.get("EXPECT_EFA") == "1"
    with open(args.log, errors="replace") as f:
        result = parse(f.read())
    ok, notes = verdict(result, args.line_rate_gbps, bool(expect))
    print(table(result))
    for n in notes:
        print(("  ok  " if ok else "  --  ") + n)
    print("NCCL-TESTS " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
