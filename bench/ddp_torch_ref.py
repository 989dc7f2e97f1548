"""PyTorch DDP reference for issue 15 (bench/ddp_scaling.sh): the model, data
generator and optimizer of bench/train_torch_ref.py (nanoGPT's
train_shakespeare_char, f32, TF32 off by default), trained data-parallel with
torch.nn.parallel.DistributedDataParallel over NCCL, one process per GPU:

    torchrun --standalone --nproc_per_node N bench/ddp_torch_ref.py --batch-size 64 --bench

--batch-size is the per-GPU batch (weak scaling, as bench/ddp_scaling.sh runs
wgt with the global batch N x 64). Each rank draws rows [r B, (r+1) B) of the
global batch from the seeded generator, as `wgt train` does, so the loss curve
matches a single process with batch N x B. Prints, on rank 0,
"bench: ... ms/step, ... tokens/s" with tokens counted over all ranks.
bucket_cap_mb is DDP's default (25) unless --bucket-mb says otherwise.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_torch_ref import Data, add_model_args, lr_at, make_model  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    p.add_argument("--batch-size", type=int, default=64, help="per GPU")
    p.add_argument("--max-iters", type=int, default=60)
    p.add_argument("--lr-decay-iters", type=int, default=5000)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--bench", action="store_true", help="(always on: this script only times)")
    a = p.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(a.seed)
    data = Data(a.data, dev)

    model, _, opt = make_model(a, data, dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], bucket_cap_mb=a.bucket_mb)
    golden = 0x9E3779B97F4A7C15
    mask = (1 << 64) - 1
    state = a.seed
    tokens = a.batch_size * a.block_size * world
    t0 = None
    for step in range(a.max_iters):
        if step == a.bench_warmup:
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.time()
        for g in opt.param_groups:
            g["lr"] = lr_at(a, step)
        # this rank's rows of the global batch; the generator moves past all of it
        part = (state + rank * a.batch_size * golden) & mask
        x, y, _ = data.batch(0, a.batch_size, a.block_size, part)
        state = (state + world * a.batch_size * golden) & mask
        loss = ddp(x, y)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    elapsed = time.time() - t0
    timed = a.max_iters - a.bench_warmup
    if rank == 0:
        print(f"torch DDP {torch.__version__}: {world} ranks x batch {a.batch_size}, "
              f"{sum(p_.numel() for p_ in model.parameters()) / 1e6:.2f}M parameters")
        print(f"bench: {timed} steps after {a.bench_warmup} warm-up: {1e3 * elapsed / timed:.1f} ms/step, "
              f"{timed * tokens / elapsed:.0f} tokens/s, "
              f"peak device memory {torch.cuda.max_memory_allocated(dev) / 1048576:.1f} MiB")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
