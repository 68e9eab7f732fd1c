"""Turn job output into results people can look at.

    python -m tools.report nccl LOG [LOG ...] --instance-type g6.12xlarge --out results/ [--expect-efa 0]
        table + busbw-vs-message-size chart with the catalog's EFA line rate as reference, and a
        verdict (#wrong = 0, no socket fallback, share of line rate); exit 1 if a run fails
    python -m tools.report finetune LOG --out results/
        loss and mean_token_accuracy curves from the fine-tune's log

Exit status: 0 every run passed; 1 a run failed (or the fine-tune log has no loss lines);
2 a log cannot be read (missing, a directory, unreadable): one line on stderr names it.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from model.facts.catalog import CATALOG  # noqa: E402
from model.facts.contract import SHARED_LOGS  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "jobs" / "lib"))
import nccl_tests  # noqa: E402  (the parser the nccl-tests jobs exit with)


def _label(path: pathlib.Path, text: str) -> str:
    """The collective: from the benchmark's name in the log, else from the file name
    (the jobs name their logs nccl-allreduce-<job>...)."""
    m = re.search(r"(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce)_perf", text)
    if m:
        return m.group(1)
    m = re.search(r"all_?(reduce|gather)", path.name)
    return f"all_{m.group(1)}" if m else path.stem


def busbw_figure(
    results: list[tuple[str, "nccl_tests.Result"]], instance_type: str, passed: bool, expect_efa: bool = True
):
    """busbw against message size, one line per run, the catalog's EFA line rate as reference (off
    EFA there is none: the axis then scales to the runs, which a 400 GB/s line would flatten)."""
    gpu = CATALOG[instance_type]
    fig, ax = plt.subplots(figsize=(9, 5))
    for label, result in results:
        ax.plot(
            [r.size for r in result.rows],
            [r.busbw for r in result.rows],
            marker="o",
            ms=3,
            label=f"{label} ({result.ranks or '?'} ranks)",
        )
    if expect_efa:
        ceiling = gpu.efa_line_rate_gbytes
        ax.axhline(ceiling, color="grey", linestyle="--", label=f"EFA line rate {ceiling:g} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    where = instance_type if expect_efa else f"{instance_type} environment, off EFA (TCP sockets)"
    ax.set_title(f"nccl-tests busbw, {where}: {'PASS' if passed else 'FAIL'}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def nccl_report(
    logs: list[pathlib.Path], instance_type: str, out: pathlib.Path, expect_efa: bool = True
) -> bool:
    """Table, chart and verdict of nccl-tests logs; expect_efa=False judges a run off EFA (a
    test cluster): sockets are then the transport, correctness still decides."""
    gpu = CATALOG[instance_type]
    out.mkdir(parents=True, exist_ok=True)
    lines, results, all_ok = (
        [f"# nccl-tests on {instance_type} ({gpu.gpus}x {gpu.gpu_model}, {gpu.network_gbps} Gbps EFA)", ""],
        [],
        True,
    )
    for path in logs:
        text = path.read_text(errors="replace")
        result = nccl_tests.parse(text)
        ok, notes = nccl_tests.verdict(result, gpu.network_gbps, expect_efa=expect_efa)
        all_ok &= ok
        label = _label(path, text)
        results.append((label, result))
        average = f"- avg bus bandwidth {result.avg_busbw:g} GB/s over the sweep" if result.avg_busbw else ""
        lines += [
            f"## {label}: {'PASS' if ok else 'FAIL'}",
            "",
            *[f"- {n}" for n in notes],
            average,
            "",
            "| size (B) | time (us) | algbw (GB/s) | busbw (GB/s) | #wrong |",
            "|---:|---:|---:|---:|---:|",
            *[
                f"| {r.size} | {r.time_us:.1f} | {r.algbw:.2f} | {r.busbw:.2f} | {r.wrong} |"
                for r in result.rows
            ],
            "",
        ]
    drawn = [(label, result) for label, result in results if result.rows]
    if drawn:  # a run without rows has nothing to draw (its FAIL is in the table)
        fig = busbw_figure(drawn, instance_type, all_ok, expect_efa)
        fig.savefig(out / "nccl-busbw.png", dpi=120)
        plt.close(fig)
    (out / "nccl-report.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return all_ok


def _numbers(row: dict) -> dict:
    """transformers 5 prints its log dicts with numbers as strings ('loss': '1.98')."""
    out = {}
    for k, v in row.items():
        try:
            out[k] = float(v) if isinstance(v, str) else v
        except ValueError:
            out[k] = v
    return out


def finetune_metrics(text: str) -> list[dict]:
    """METRICS {json} lines from train.py; without them, the trainer's own `{'loss': ...}` lines
    (the walkthrough's log format)."""
    metrics, printed = [], []
    for line in text.splitlines():
        line = line.strip()
        try:
            if line.startswith("METRICS "):
                metrics.append(json.loads(line[len("METRICS ") :]))
            elif line.startswith("{'") and ("'loss'" in line or "'train_loss'" in line):
                printed.append(ast.literal_eval(line[: line.index("}") + 1]))
        except (ValueError, SyntaxError):
            continue
    return [_numbers(r) for r in (metrics or printed)]


def finetune_report(log: pathlib.Path, out: pathlib.Path) -> bool:
    rows = finetune_metrics(log.read_text(errors="replace"))
    steps = [r for r in rows if "loss" in r]
    if not steps:
        print(f"no loss lines in {log}", file=sys.stderr)
        return False
    out.mkdir(parents=True, exist_ok=True)
    x = [r.get("step", i + 1) for i, r in enumerate(steps)]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(11, 4))
    loss_ax.plot(x, [r["loss"] for r in steps], marker="o", ms=3)
    loss_ax.set(title="training loss", xlabel="step", ylabel="loss")
    acc = [r.get("mean_token_accuracy") for r in steps]
    acc_ax.plot(x, acc, marker="o", ms=3, color="tab:green")
    acc_ax.set(title="mean token accuracy", xlabel="step", ylabel="accuracy")
    for ax in (loss_ax, acc_ax):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "finetune-curves.png", dpi=120)
    plt.close(fig)
    final = next((r for r in reversed(rows) if "train_loss" in r), {})
    summary = (
        f"steps {len(steps)}: loss {steps[0]['loss']:.4g} -> {steps[-1]['loss']:.4g}"
        + (f", train_loss {final['train_loss']:.4g}" if final else "")
        + (f", mean_token_accuracy {acc[0]:.4g} -> {acc[-1]:.4g}" if acc[0] is not None else "")
    )
    (out / "finetune-report.md").write_text(f"# fine-tune\n\n{summary}\n")
    print(summary)
    return True


def _unreadable(log: pathlib.Path) -> str | None:
    """Why a log cannot be reported on, or None."""
    if not log.exists():
        return (
            f"no such file; the jobs write {SHARED_LOGS}/<name>-<jobid>.out on the cluster: copy it here "
            f"(e.g. scp <you>@<loginHostname>:{SHARED_LOGS}/<file> .)"
        )
    if not log.is_file():
        return "not a file; give the job's log file"
    try:
        with log.open("rb"):
            return None
    except OSError as e:
        return f"cannot be read ({e.strerror})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="kind", required=True)
    n = sub.add_parser("nccl")
    n.add_argument("logs", nargs="+", type=pathlib.Path)
    n.add_argument("--instance-type", required=True, choices=sorted(CATALOG))
    n.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results"))
    n.add_argument(
        "--expect-efa",
        type=int,
        choices=(0, 1),
        default=1,
        help="0: judge a run off EFA (sockets allowed), as the jobs do with EXPECT_EFA=0",
    )
    f = sub.add_parser("finetune")
    f.add_argument("log", type=pathlib.Path)
    f.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results"))
    args = p.parse_args(argv)
    for log in args.logs if args.kind == "nccl" else [args.log]:
        if problem := _unreadable(log):
            print(f"report: {log}: {problem}", file=sys.stderr)
            return 2
    ok = (
        nccl_report(args.logs, args.instance_type, args.out, bool(args.expect_efa))
        if args.kind == "nccl"
        else finetune_report(args.log, args.out)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
