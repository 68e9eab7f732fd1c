"""All-reduce correctness check, one process per GPU (or per CPU slot with DIST_BACKEND=gloo).

Every rank contributes 1.0 to a 256 MB float32 tensor; after the all-reduce every element must
equal the world size. Exits non-zero on any wrong value. SANITY_INJECT_FAULT=1 makes the last
rank contribute 0.0, so tests can prove the check fails when the result is wrong.
"""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    backend = os.environ.get("DIST_BACKEND", "nccl")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    # The GPUs Slurm gave this step (none unless the step asked for them).
    # One write per line: the ranks of a node share the step's output, and print() writes the
    # text and its newline separately, so two ranks' lines could interleave.
    sys.stdout.write(
        f"rank {rank} on {socket.gethostname()}: CUDA_VISIBLE_DEVICES="
        f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}\n"
    )
    sys.stdout.flush()
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    size = int(os.environ.get("ALLREDUCE_BYTES", 256 * 2**20))
    contribution = 0.0 if os.environ.get("SANITY_INJECT_FAULT") == "1" and rank == world - 1 else 1.0
    x = torch.full((size // 4,), contribution, dtype=torch.float32, device=device)
    dist.all_reduce(x)  # warm-up: connections are made here
    x.fill_(contribution)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    dist.all_reduce(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    wrong = int((x != float(world)).sum().item())
    ok = torch.tensor([0 if wrong else 1], dtype=torch.int32, device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)  # every rank agrees on the verdict
    value = x[0].item()
    if rank == 0:
        busbw = size * 2 * (world - 1) / world / seconds / 1e9
        print(
            f"all_reduce {size / 2**20:.0f} MiB over {world} ranks ({backend}): "
            f"{seconds * 1e3:.2f} ms, busbw {busbw:.2f} GB/s",
            flush=True,
        )
        if ok.item():
            print(f"all_reduce OK: value {value} == world_size {float(world)}", flush=True)
        else:
            print(
                f"all_reduce FAILED: value {value} != world_size {float(world)} "
                f"(rank 0 saw {wrong} wrong elements)",
                flush=True,
            )
    dist.destroy_process_group()
    return 0 if ok.item() else 1


if __name__ == "__main__":
    sys.exit(main())
