"""PyTorch eager f32 training step (shakespeare preset): the GEMM kernels of one step in launch order with us,
and the same GEMM cases in isolation on randn data against data scaled like the step's."""
import os, sys, collections
sys.path.insert(0, "bench")
import torch, train_torch_ref as R, argparse
p = argparse.ArgumentParser(); R.add_model_args(p)
a = p.parse_args([]); a.data = "data/tinyshakespeare.txt"
torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(1); dev = torch.device("cuda")
data = R.Data(a.data, dev)
model, c, opt = R.make_model(a, data, dev)
state = 1
def step():
    global state
    x, y, state = data.batch(0, 64, 256, state)
    loss = model(x, y); loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad(set_to_none=True)
for _ in range(15): step()
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(3): step()
    torch.cuda.synchronize()
ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
ev.sort(key=lambda e: e.time_range.start)
g = [e for e in ev if ("gemm" in e.name.lower() or "sm90" in e.name.lower() or ("cutlass" in e.name.lower() and "fmha" not in e.name.lower()))]
per = len(g) // 3
print(f"{len(g)} gemm kernels in 3 steps, {per} a step; the last step in order:")
tot = 0
for e in g[-per:]:
    us = e.device_time if hasattr(e, "device_time") else e.cuda_time
    tot += us
    print(f"{us:8.1f} us  {e.name[:110]}")
print(f"sum {tot/1e3:.2f} ms")
# isolation: randn vs step-like scales
rows = 16384
def bench(fn):
    for _ in range(30): fn()
    torch.cuda.synchronize()
    s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(50): fn()
    t.record(); torch.cuda.synchronize()
    return s.elapsed_time(t) / 50
for scale_name, sx, sw, sg in [("randn", 1, 1, 1), ("step-like", 1, 0.02, 1e-4), ("zeros", 0, 0, 0)]:
    r = lambda *s, k=1.0: torch.randn(*s, device=dev) * k
    x, w, dy = r(rows, 384, k=sx), r(1536, 384, k=sw), r(rows, 1536, k=sg)
    x4, dy4, w4 = r(rows, 1536, k=sx), r(rows, 384, k=sg), r(384, 1536, k=sw)
    res = [("fc x W^T", bench(lambda: torch.nn.functional.linear(x, w))),
           ("dx fc dy W", bench(lambda: dy @ w)),
           ("dW fc dy^T x", bench(lambda: dy.t() @ x)),
           ("fcproj x W^T", bench(lambda: torch.nn.functional.linear(x4, w4))),
           ("dx proj", bench(lambda: dy4 @ w4)),
           ("dW proj", bench(lambda: dy4.t() @ x4))]
    print(scale_name + ": " + ", ".join(f"{n} {ms:.3f}" for n, ms in res) + f" (sum {sum(m for _, m in res):.3f} ms)")
