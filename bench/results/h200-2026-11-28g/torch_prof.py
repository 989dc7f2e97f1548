"""Profile PyTorch eager f32 (TF32 off) training steps of the shakespeare preset: CUDA kernel time by category."""
import os, sys, collections
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import torch, train_torch_ref as R
import argparse
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
N = 10
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(N): step()
    torch.cuda.synchronize()
cat = collections.Counter(); names = collections.Counter(); cnt = collections.Counter()
for e in prof.events():
    if e.device_type.name != "CUDA": continue
    n = e.name; us = e.device_time if hasattr(e, "device_time") else e.cuda_time
    l = n.lower()
    k = "gemm" if ("gemm" in l or "sm90" in l or "cutlass" in l and "fmha" not in l) else \
        "attention" if ("fmha" in l or "attention" in l or "flash" in l or "efficient" in l) else "other"
    cat[k] += us; names[n[:90]] += us; cnt[n[:90]] += 1
tot = sum(cat.values())
print(f"torch per step: total kernel {tot / N / 1e3:.2f} ms; " + ", ".join(f"{k} {v / N / 1e3:.2f}" for k, v in cat.most_common()))
for n, us in names.most_common(45):
    print(f"{us / N:9.1f} us/step {cnt[n] / N:6.1f} calls  {n}")
