#!/usr/bin/env python3
"""Does `wgt train` take the same optimizer steps as nanoGPT / PyTorch?

`wgt train` (shakespeare preset) and bench/train_torch_ref.py ended 0.01 apart
in val loss after 5000 steps on an H100 (bench/results/h100-2026-11-24/train).
Those runs start from different random numbers (init and dropout masks), so
their curves can only agree in distribution. This script removes the
randomness and compares step by step, on the CPU:

  1. wgt's own init (`wgt train --stop-after 0`): the std of every tensor
     against nanoGPT's scheme (0.02; 0.02 / sqrt(2 n_layer) for attn.c_proj
     and mlp.c_proj; LayerNorm gains 1; head tied to wte).
  2. One set of initial weights (nanoGPT's init, drawn by torch) is given to
     `wgt train --init` and to PyTorch; both then train on the same batches
     (wgt's splitmix64 windows, as bench/train_torch_ref.py draws them) for
     1, 10 and 50 steps of a small config whose learning rate warms up and
     decays inside the 50 steps (clipping, weight decay and min_lr all act):
       - dropout 0: PyTorch is bench/train_torch_ref.py's GPT module itself
         with torch.optim.AdamW and clip_grad_norm_, the loop of nanoGPT's
         train.py;
       - dropout 0.2: PyTorch is the same model written out with explicit
         masks, and the masks are wgt's: its Philox-4x32-10 draws are
         recomputed here in NumPy (embedding dropout, attention-weight dropout,
         both residual branches; src/core/philox.h, src/models/gpt.c), so the
         two runs see identical masks.
     Compared: the loss of every step, the train/val evaluations, the
     learning rate of every step, and every parameter after 1, 10 and 50
     steps. The yardstick for "float32 noise" is PyTorch float32 against
     PyTorch float64 on the same run: wgt should be as close to float64 as
     PyTorch float32 is.
  3. Sensitivity: PyTorch runs that each change one detail of the recipe
     (warmup formula, weight decay on embeddings, tanh GELU, no clipping,
     decay not scaled by lr, ...), so the report shows how far each would move
     the numbers compared with the noise, i.e. what the check can detect.

--write-fixture DIR writes DIR/train_ref.safetensors for
tests/test_train_reference.c (no torch needed there): the initial weights
(model.<name>, read by `wgt train --init`) and the float64 PyTorch results
(ref.*), with the wgt train arguments in the metadata.

  python3 -m venv .venv && .venv/bin/pip install torch numpy safetensors
  .venv/bin/python bench/train_step_check.py                  # report
  .venv/bin/python bench/train_step_check.py --write-fixture tests/golden
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import train_torch_ref as ref  # noqa: E402  (the PyTorch side of the H100 comparison)

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1

# The small config: 2 layers of width 48 (2 heads of 24), block 64, batch 8.
# Warmup 10, cosine decay until step 40, min_lr for steps 41..49; the fresh
# model's gradient norm is above 1 at first, so clipping acts.
CFG = dict(n_layer=2, n_head=2, n_embd=48, block_size=64, batch_size=8, lr=3e-3, min_lr=3e-4, warmup_iters=10,
           lr_decay_iters=40, weight_decay=0.1, beta1=0.9, beta2=0.99, grad_clip=1.0, eval_interval=25,
           eval_iters=2, seed=1337)
SNAPSHOTS = (1, 10, 50)
DROPOUT = 0.2


def wgt_args(c):
    """The `wgt train` flags of config c (dropout, steps, output added per run)."""
    return ("--preset tiny --n-layer {n_layer} --n-head {n_head} --n-embd {n_embd} --block-size {block_size} "
            "--batch-size {batch_size} --lr {lr} --min-lr {min_lr} --warmup-iters {warmup_iters} "
            "--lr-decay-iters {lr_decay_iters} --weight-decay {weight_decay} --beta1 {beta1} --beta2 {beta2} "
            "--grad-clip {grad_clip} --eval-interval {eval_interval} --eval-iters {eval_iters} --seed {seed} "
            "--log-interval 1 --checkpoint-interval 0 --bias 0 --tied 1").format(**c)


def param_names(n_layer):
    """wgt's parameter order (src/models/gpt.c, bias off, tied head)."""
    names = ["transformer.wte.weight", "transformer.wpe.weight"]
    for l in range(n_layer):
        for s in ("ln_1.weight", "attn.c_attn.weight", "attn.c_proj.weight", "ln_2.weight", "mlp.c_fc.weight",
                  "mlp.c_proj.weight"):
            names.append(f"transformer.h.{l}.{s}")
    return names + ["transformer.ln_f.weight"]


def nanogpt_std(name, n_layer):
    """nanoGPT's init: None for LayerNorm gains (ones), else the normal's std."""
    if ".ln_" in name:
        return None
    return 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02


# ---------------------------------------------------------------- wgt's random numbers


def mix_seed(seed, salt):
    """src/models/gpt.c mix_seed: splitmix64 of seed + golden * (salt + 1)."""
    return ref.splitmix64((seed + 0x9E3779B97F4A7C15 * salt) & MASK64)[1]


def dropout_seed(seed, step):
    """tools/wgt/train.c dropout_seed (rank 0)."""
    return ref.splitmix64(((seed ^ 0xD409D409D409D409) + step) & MASK64)[1]


def philox(key, c0, c1, c2, c3):
    """Philox-4x32-10 of src/core/philox.h over NumPy arrays of counters."""
    c = [np.asarray(v, dtype=np.uint64) for v in np.broadcast_arrays(c0, c1, c2, c3)]
    k0, k1 = key & MASK32, key >> 32
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(MASK32),
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(MASK32)]
        k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
    return c


def elementwise_mask(key, shape, p):
    """wgt_dropout: element i (row-major) kept when (word i % 4 of counter
    (i / 4, 0, 0, 0)) >> 8, times 2^-24, is >= p (f32)."""
    n = int(np.prod(shape))
    idx = np.arange(n, dtype=np.uint64)
    q = idx >> np.uint64(2)
    w = philox(key, q & np.uint64(MASK32), q >> np.uint64(32), 0, 0)
    word = np.choose((idx & np.uint64(3)).astype(np.int64), w)
    u = (word >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    return (u >= np.float32(p)).reshape(shape)


def attention_mask(key, B, H, T, p):
    """Attention-weight dropout: weight (row = (b H + h) T + i, key j) kept when
    the top 24 bits of word j % 4 of philox(key, (j / 4, row, 0, "atte")) are
    >= floor(p 2^24)."""
    row = np.arange(B * H * T, dtype=np.uint64)[:, None]
    col = np.arange(T, dtype=np.uint64)[None, :]
    w = philox(key, col >> np.uint64(2), row, 0, 0x61747465)
    word = np.choose((col & np.uint64(3)).astype(np.int64), w)
    return ((word >> np.uint64(8)) >= np.uint64(int(p * 16777216.0))).reshape(B, H, T, T)


def wgt_masks(seed, step, c, p):
    """Every dropout mask of one training step, keyed as gpt.c keys them."""
    s = dropout_seed(seed, step)
    B, T, C, H = c["batch_size"], c["block_size"], c["n_embd"], c["n_head"]
    m = {"emb": elementwise_mask(mix_seed(s, 0), (B, T, C), p)}
    for l in range(c["n_layer"]):
        site = 1 + 3 * l
        m[f"att{l}"] = attention_mask(mix_seed(s, site), B, H, T, p)
        m[f"res{l}"] = elementwise_mask(mix_seed(s, site + 1), (B, T, C), p)
        m[f"mlp{l}"] = elementwise_mask(mix_seed(s, site + 2), (B, T, C), p)
    return m


# ---------------------------------------------------------------- the PyTorch side


def functional_loss(P, x, y, c, masks=None, p=0.0, variant=""):
    """nanoGPT's forward written out, dropout as given masks / (1 - p)."""
    B, T = x.shape
    C, H, L = c["n_embd"], c["n_head"], c["n_layer"]
    D = C // H
    ln_eps = 1e-6 if variant == "ln_eps_1e-6" else 1e-5
    gelu = (lambda t: F.gelu(t, approximate="tanh")) if variant == "gelu_tanh" else F.gelu

    def drop(t, name):
        return t if masks is None else t * masks[name].to(t.dtype) / (1.0 - p)

    def ln(t, w):
        return F.layer_norm(t, (C,), w, None, ln_eps)

    x_ = drop(P["transformer.wte.weight"][x] + P["transformer.wpe.weight"][:T], "emb")
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(L):
        h = f"transformer.h.{l}."
        q, k, v = (ln(x_, P[h + "ln_1.weight"]) @ P[h + "attn.c_attn.weight"].T).split(C, dim=2)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        att = ((q @ k.transpose(-2, -1)) / math.sqrt(D)).masked_fill(~causal, float("-inf")).softmax(-1)
        y_ = (drop(att, f"att{l}") @ v).transpose(1, 2).reshape(B, T, C)
        x_ = x_ + drop(y_ @ P[h + "attn.c_proj.weight"].T, f"res{l}")
        m = gelu(ln(x_, P[h + "ln_2.weight"]) @ P[h + "mlp.c_fc.weight"].T) @ P[h + "mlp.c_proj.weight"].T
        x_ = x_ + drop(m, f"mlp{l}")
    logits = ln(x_, P["transformer.ln_f.weight"]) @ P["transformer.wte.weight"].T
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def ref_module(init, c, vocab):
    """bench/train_torch_ref.py's GPT (the H100 comparison's model) holding init."""
    class Cfg:
        pass
    rc = Cfg()
    rc.n_layer, rc.n_head, rc.n_embd, rc.block_size = c["n_layer"], c["n_head"], c["n_embd"], c["block_size"]
    rc.vocab_size, rc.dropout, rc.bias = vocab, 0.0, False
    model = ref.GPT(rc)
    rename = {"transformer.wte.weight": "wte.weight", "transformer.wpe.weight": "wpe.weight",
              "transformer.ln_f.weight": "ln_f.weight"}
    for l in range(c["n_layer"]):
        for a, b in (("ln_1", "ln_1"), ("attn.c_attn", "c_attn"), ("attn.c_proj", "attn_proj"), ("ln_2", "ln_2"),
                     ("mlp.c_fc", "c_fc"), ("mlp.c_proj", "mlp_proj")):
            rename[f"transformer.h.{l}.{a}.weight"] = f"h.{l}.{b}.weight"
    own = dict(model.named_parameters())
    assert len(own) == len(rename), sorted(own)
    with torch.no_grad():
        for name, mod_name in rename.items():
            own[mod_name].copy_(torch.from_numpy(init[name]))
    return model, rename


def lr_at(c, step, variant=""):
    """wgt_lr_at / train_torch_ref.lr_at; variant warmup_nanogpt is nanoGPT's
    current train.py (lr (it + 1) / (warmup + 1))."""
    if step < c["warmup_iters"]:
        if variant == "warmup_nanogpt":
            return c["lr"] * (step + 1) / (c["warmup_iters"] + 1)
        return c["lr"] * (step + 1) / c["warmup_iters"]
    if step > c["lr_decay_iters"]:
        return c["min_lr"]
    r = (step - c["warmup_iters"]) / (c["lr_decay_iters"] - c["warmup_iters"])
    return c["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * r)) * (c["lr"] - c["min_lr"])


def torch_train(init, c, data, steps, dropout=0.0, dtype=torch.float32, variant="", use_ref_module=False):
    """nanoGPT's train.py loop (lr, forward, backward, clip, AdamW step) from init.
    Returns per-step losses, grad norms and lrs, {step: (train, val)} evaluations
    and {step: {name: array}} parameter snapshots."""
    names = param_names(c["n_layer"])
    if use_ref_module:
        model, rename = ref_module(init, c, data_vocab(data))
        model = model.to(dtype)
        own = dict(model.named_parameters())
        P = {n: own[rename[n]] for n in names}

        def loss_fn(x, y, masks):
            return model(x, y)
    else:
        P = {n: torch.tensor(init[n], dtype=dtype, requires_grad=True) for n in names}

        def loss_fn(x, y, masks):
            return functional_loss(P, x, y, c, masks, dropout, variant)
    # nanoGPT's groups: decay on every tensor of 2+ dims (embeddings included)
    spared = {"transformer.wte.weight", "transformer.wpe.weight"} if variant == "no_decay_embeddings" else set()
    decay = [P[n] for n in names if P[n].dim() >= 2 and n not in spared]
    rest = [P[n] for n in names if P[n].dim() < 2 or n in spared]
    wd = c["weight_decay"] * (c["lr"] if variant == "decay_not_times_lr" else 1.0)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": rest, "weight_decay": 0.0}],
                            lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=1e-6 if variant == "eps_1e-6" else 1e-8)
    B, T = c["batch_size"], c["block_size"]

    @torch.no_grad()
    def evaluate(step, split):
        state, total = ref.eval_seed(c["seed"], step, split), 0.0
        for _ in range(c["eval_iters"]):
            x, y, state = data.batch(split, B, T, state)
            total += loss_fn(x, y, None).item()
        return total / c["eval_iters"]

    if use_ref_module:
        model.eval()
    out = dict(loss=[], gnorm=[], lr=[], evals={}, snaps={})
    state = c["seed"]
    for step in range(steps + 1):
        if step == steps or step % c["eval_interval"] == 0:
            out["evals"][step] = (evaluate(step, 0), evaluate(step, 1))
        if step == steps:
            break
        lr = lr_at(c, step, variant)
        if variant == "decay_not_times_lr":  # AdamW multiplies decay by lr: undo it for group 0
            opt.param_groups[0]["weight_decay"] = c["weight_decay"] / lr
        for g in opt.param_groups:
            g["lr"] = lr
        x, y, state = data.batch(0, B, T, state)
        masks = None
        if dropout > 0:
            masks = {k: torch.from_numpy(v) for k, v in wgt_masks(c["seed"], step, c, dropout).items()}
        loss = loss_fn(x, y, masks)
        loss.backward()
        clip = 1e9 if variant == "no_clip" else c["grad_clip"]
        gn = torch.nn.utils.clip_grad_norm_(list(P.values()), clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        out["loss"].append(loss.item())
        out["gnorm"].append(gn.item())
        out["lr"].append(lr)
        if step + 1 in SNAPSHOTS:
            out["snaps"][step + 1] = {n: P[n].detach().double().numpy().copy() for n in names}
    return out


def data_vocab(data):
    return len(data.vocab)


# ---------------------------------------------------------------- the wgt side


def run_wgt(wgt, args, out_dir):
    cmd = f"'{wgt}' train {args} --out '{out_dir}' --quiet"
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"wgt train failed ({r.returncode}): {cmd}\n{r.stdout}{r.stderr}")
    return load_file(os.path.join(out_dir, "ckpt.safetensors"))


def wgt_history(ck):
    """history rows -> per-step losses, per-step lrs, {step: (train, val)}."""
    h = ck["history"].astype(np.float64)
    loss, lr, evals = [], [], {}
    for step, l, tr, va, rate in h:
        if not math.isnan(l):
            loss.append(l)
            lr.append(rate)
        else:
            evals[int(step)] = (tr, va)
    return np.array(loss), np.array(lr), evals


# ---------------------------------------------------------------- comparisons


def rel_param_error(a, b, init, names):
    """max over parameters of |a - b| / |b - init| (error relative to the update)."""
    worst, where = 0.0, ""
    for n in names:
        upd = np.linalg.norm(b[n] - init[n].astype(np.float64))
        e = np.linalg.norm(a[n].astype(np.float64) - b[n]) / max(upd, 1e-30)
        if e > worst:
            worst, where = e, n
    return worst, where


def mask_statistics(c, steps=20):
    """Dropout in distribution: the kept fraction of wgt's masks, and no
    correlation between sites, steps or neighbouring positions (a mask reused
    across layers or steps would regularize less)."""
    ms = [wgt_masks(c["seed"], s, c, DROPOUT) for s in range(steps)]
    T = c["block_size"]
    causal = np.tril(np.ones((T, T), dtype=bool))
    elem = np.concatenate([m[k].ravel() for m in ms for k in m if not k.startswith("att")]).astype(np.float64)
    att = np.concatenate([m[k][..., causal].ravel() for m in ms for k in m if k.startswith("att")]).astype(np.float64)

    def corr(pairs):
        """Correlation of two mask sequences pooled over the steps (sd about 1/sqrt(n))."""
        x = np.concatenate([u.ravel() for u, _ in pairs]).astype(np.float64)
        y = np.concatenate([v.ravel() for _, v in pairs]).astype(np.float64)
        return np.corrcoef(x, y)[0, 1], 1 / math.sqrt(x.size)
    nxt = list(zip(ms[:-1], ms[1:]))
    pairs = {"embedding vs block 0 residual, same step": corr([(m["emb"], m["res0"]) for m in ms]),
             "block 0 vs block 1 MLP, same step": corr([(m["mlp0"], m["mlp1"]) for m in ms]),
             "block 0 MLP, step s vs s + 1": corr([(a["mlp0"], b["mlp0"]) for a, b in nxt]),
             "attention block 0 vs block 1": corr([(m["att0"][..., causal], m["att1"][..., causal]) for m in ms]),
             "attention, step s vs s + 1": corr([(a["att0"][..., causal], b["att0"][..., causal]) for a, b in nxt]),
             "neighbouring channels": corr([(m["emb"][..., :-1], m["emb"][..., 1:]) for m in ms]),
             "neighbouring keys": corr([(m["att0"][..., :-1], m["att0"][..., 1:]) for m in ms])}
    n_e, n_a = elem.size, att.size
    print(f"\n== 5. wgt's dropout masks over {steps} steps (p = {DROPOUT}): kept fraction {elem.mean():.5f} of "
          f"{n_e} elementwise (sd of the estimate {math.sqrt(0.16 / n_e):.5f}), {att.mean():.5f} of {n_a} causal "
          f"attention weights; kept values x 1 / (1 - p) = {1 / (1 - DROPOUT):g} on both sides")
    for what, (r, sd) in pairs.items():
        print(f"  correlation, {what:42s} {r:+.5f}  (sd of the estimate {sd:.5f})")


def check_init(wgt, c, tmp):
    print("== 1. wgt's own init (wgt train --stop-after 0) against nanoGPT's scheme")
    big = dict(c, n_layer=6, n_embd=96, n_head=6)  # more elements per tensor: tighter std estimates
    ck = run_wgt(wgt, wgt_args(big) + f" --data '{DATA}' --backend cpu --max-iters 1 --stop-after 0",
                 os.path.join(tmp, "init"))
    ok = True
    names = param_names(big["n_layer"])
    got = sorted(k[6:] for k in ck if k.startswith("model."))
    if got != sorted(names):
        print(f"  parameter set differs from nanoGPT's (bias off, tied): {got}")
        ok = False
    for n in names:
        w = ck["model." + n].astype(np.float64)
        std = nanogpt_std(n, big["n_layer"])
        if std is None:
            good = np.all(w == 1.0)
            line = f"  {n:34s} all ones: {good}"
        else:
            # sample std of k normals: relative sd about 1/sqrt(2k); allow 5 of them
            tol = 5 / math.sqrt(2 * w.size)
            good = abs(w.std() / std - 1) < tol and abs(w.mean()) < 5 * std / math.sqrt(w.size)
            line = f"  {n:34s} std {w.std():.5f} (nanoGPT {std:.5f}, tol {100 * tol:.1f}%)  mean {w.mean():+.1e}"
        ok = ok and good
        if not good or "h.0" in n or "h." not in n:
            print(line + ("" if good else "   <-- differs"))
    z = np.concatenate([ck["model." + n].ravel() / nanogpt_std(n, big["n_layer"]) for n in names
                        if nanogpt_std(n, big["n_layer"])]).astype(np.float64)
    kurt = np.mean(z ** 4) / np.mean(z ** 2) ** 2 - 3
    tails = np.mean(np.abs(z) > 3)
    print(f"  (blocks 1..{big['n_layer'] - 1} checked the same way)  init matches nanoGPT: {ok}")
    print(f"  all normal weights / their std ({z.size}): excess kurtosis {kurt:+.4f} (normal 0, sd "
          f"{math.sqrt(24 / z.size):.4f}), beyond 3 sd {tails:.5f} (normal 0.00270), max |z| {np.abs(z).max():.2f}")
    return ok


def main():
    global DATA, SNAPSHOTS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wgt", default=os.path.join(ROOT, "build", "bin", "wgt"))
    p.add_argument("--data", default=os.path.join(ROOT, "data", "tinyshakespeare.txt"))
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--backend", default="cpu", help="wgt's backend for the step comparison (cpu or webgpu; "
                   "WGT_ATTENTION_FORWARD=rows WGT_ATTENTION_BACKWARD=rows WGT_ATTENTION_TILES=128,16,128,16,8 "
                   "make lavapipe run a GPU's attention kernels)")
    p.add_argument("--write-fixture", metavar="DIR")
    p.add_argument("--no-variants", action="store_true", help="skip the sensitivity runs")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change the config, e.g. --set block_size=256 --set n_embd=128 (not with --write-fixture)")
    a = p.parse_args()
    DATA = a.data
    torch.set_num_threads(1)
    c = dict(CFG)
    for kv in a.set:
        key, value = kv.split("=", 1)
        if key not in c or a.write_fixture:
            sys.exit(f"--set {kv}: unknown key, or combined with --write-fixture (keys: {', '.join(c)})")
        c[key] = type(c[key])(float(value)) if isinstance(c[key], int) else float(value)
    SNAPSHOTS = tuple(s for s in SNAPSHOTS if s < a.steps) + (a.steps,)
    data = ref.Data(a.data, torch.device("cpu"))
    names = param_names(c["n_layer"])
    tmp = tempfile.mkdtemp(prefix="train_step_check_")
    init_ok = check_init(a.wgt, c, tmp)

    # one set of initial weights, nanoGPT's init drawn by torch
    g = torch.Generator().manual_seed(c["seed"])
    C, V = c["n_embd"], len(data.vocab)
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (c["block_size"], C),
              "transformer.ln_f.weight": (C,)}
    for l in range(c["n_layer"]):
        h = f"transformer.h.{l}."
        shapes.update({h + "ln_1.weight": (C,), h + "attn.c_attn.weight": (3 * C, C), h + "attn.c_proj.weight": (C, C),
                       h + "ln_2.weight": (C,), h + "mlp.c_fc.weight": (4 * C, C), h + "mlp.c_proj.weight": (C, 4 * C)})
    init = {}
    for n in names:
        std = nanogpt_std(n, c["n_layer"])
        init[n] = (np.ones(shapes[n]) if std is None else
                   torch.normal(0.0, std, shapes[n], generator=g).numpy()).astype(np.float32)
    init_path = os.path.join(tmp, "init.safetensors")
    save_file({"model." + n: v for n, v in init.items()}, init_path)

    # bench/train_torch_ref.py's module and the written-out forward agree (same loss and gradients)
    x, y, _ = data.batch(0, c["batch_size"], c["block_size"], c["seed"])
    model, rename = ref_module(init, c, V)
    model.eval()
    l_mod = model(x, y)
    l_mod.backward()
    P = {n: torch.tensor(init[n], requires_grad=True) for n in names}
    l_fun = functional_loss(P, x, y, c)
    l_fun.backward()
    own = dict(model.named_parameters())
    gerr = max((own[rename[n]].grad - P[n].grad).abs().max().item() / P[n].grad.abs().max().item() for n in names)
    print(f"\n== 2. train_torch_ref.GPT vs the written-out forward: loss {l_mod.item():.6f} vs {l_fun.item():.6f}, "
          f"max relative gradient difference {gerr:.1e}")

    results, fixture = {}, {"model." + n: v for n, v in init.items()}
    for label, dropout in (("nodrop", 0.0), ("drop", DROPOUT)):
        print(f"\n== 3. dropout {dropout}: {a.steps} steps from the same weights on the same batches, wgt on {a.backend}"
              + (" with wgt's masks" if dropout else ""))
        t64 = torch_train(init, c, data, a.steps, dropout, torch.float64)
        t32 = torch_train(init, c, data, a.steps, dropout, torch.float32, use_ref_module=dropout == 0)
        wg = {}
        for n_steps in SNAPSHOTS:
            args = (wgt_args(c) + f" --data '{a.data}' --backend {a.backend} --dropout {dropout} --max-iters {n_steps}"
                    f" --init '{init_path}'")
            wg[n_steps] = run_wgt(a.wgt, args, os.path.join(tmp, f"{label}_{n_steps}"))
        w_loss, w_lr, w_evals = wgt_history(wg[SNAPSHOTS[-1]])
        ref_loss = np.array(t64["loss"])
        d_w = np.abs(w_loss - ref_loss)
        d_t = np.abs(np.array(t32["loss"]) - ref_loss)
        print(f"  per-step loss, max |x - torch f64| (steps 1..{a.steps}): wgt {d_w.max():.2e}   torch f32 "
              f"{d_t.max():.2e}")
        print("  step   torch f64    wgt         torch f32   grad norm (f64)  lr")
        for s in (0, 1, 5, 9, 10, 20, 30, 39, 40, 41, 49):
            if s < a.steps:
                print(f"  {s:4d}   {ref_loss[s]:.6f}    {w_loss[s]:.6f}    {t32['loss'][s]:.6f}    "
                      f"{t64['gnorm'][s]:8.4f}         {t64['lr'][s]:.6g}")
        lr_err = np.max(np.abs(w_lr - np.array(t64["lr"])) / np.array(t64["lr"]))
        print(f"  learning rate of every step: max relative difference {lr_err:.1e} (wgt keeps it as f32)")
        for s in sorted(t64["evals"]):
            we = w_evals.get(s)
            if we is not None:
                print(f"  eval at step {s:2d}: train {t64['evals'][s][0]:.6f} / wgt {we[0]:.6f}, "
                      f"val {t64['evals'][s][1]:.6f} / wgt {we[1]:.6f}")
        for n_steps in SNAPSHOTS:
            wp = {n: wg[n_steps]["model." + n] for n in names}
            ew, nw = rel_param_error(wp, t64["snaps"][n_steps], init, names)
            et, nt = rel_param_error(t32["snaps"][n_steps], t64["snaps"][n_steps], init, names)
            print(f"  parameters after {n_steps:2d} steps, max |x - f64| / |f64 update|: wgt {ew:.2e} ({nw}), "
                  f"torch f32 {et:.2e} ({nt})")
            # the fixture: per-parameter update norms and the first 8 elements
            fixture[f"ref.{label}.update_norm.{n_steps}"] = np.array(
                [np.linalg.norm(t64["snaps"][n_steps][n] - init[n]) for n in names], dtype=np.float32)
            fixture[f"ref.{label}.head.{n_steps}"] = np.stack(
                [t64["snaps"][n_steps][n].reshape(-1)[:8] for n in names]).astype(np.float32)
        fixture[f"ref.{label}.loss"] = ref_loss.astype(np.float32)
        fixture[f"ref.{label}.eval"] = np.array([[s, *t64["evals"][s]] for s in sorted(t64["evals"])], np.float32)
        fixture[f"ref.{label}.torch32_loss"] = np.array(t32["loss"], np.float32)
        fixture["ref.lr"] = np.array(t64["lr"], np.float32)
        results[label] = (t64, t32, w_loss)

    if not a.no_variants:
        print("\n== 4. what one changed detail would do (PyTorch f32, dropout 0, against the recipe in f64)")
        t64 = results["nodrop"][0]
        base = np.abs(np.array(results["nodrop"][1]["loss"]) - np.array(t64["loss"])).max()
        base0 = np.abs(np.array(results["nodrop"][1]["loss"][:10]) - np.array(t64["loss"][:10])).max()
        print(f"  {'the recipe itself (torch f32)':30s} max |loss diff| steps 0-9 {base0:.1e}, all {base:.1e};  "
              f"loss at step {a.steps}: {results['nodrop'][1]['loss'][-1]:.6f}")
        for v in ("warmup_nanogpt", "no_decay_embeddings", "decay_not_times_lr", "gelu_tanh", "ln_eps_1e-6",
                  "eps_1e-6", "no_clip"):
            tv = torch_train(init, c, data, a.steps, 0.0, torch.float32, variant=v)
            d = np.abs(np.array(tv["loss"]) - np.array(t64["loss"]))
            print(f"  {v:30s} max |loss diff| steps 0-9 {d[:10].max():.1e}, all {d.max():.1e};  "
                  f"loss at step {a.steps}: {tv['loss'][-1]:.6f}")
        mask_statistics(c)

    if a.write_fixture:
        meta = {"args": wgt_args(c), "params": ",".join(names), "snapshots": ",".join(map(str, SNAPSHOTS)),
                "steps": str(a.steps), "dropout": str(DROPOUT),
                "made_by": "bench/train_step_check.py (PyTorch %s, float64)" % torch.__version__}
        path = os.path.join(a.write_fixture, "train_ref.safetensors")
        save_file(fixture, path, metadata=meta)
        print(f"\nfixture written: {path} ({os.path.getsize(path) / 1024:.0f} KiB)")
    print(f"\n(work files in {tmp})  init ok: {init_ok}")


if __name__ == "__main__":
    main()
