#!/usr/bin/env python3
"""PyTorch eager reference for `wgt train` (issue 11): the same GPT, data
pipeline, initialization scheme and hyper-parameters, so tokens/s, peak memory
and the loss curve compare one to one.

Same as tools/wgt/train*.c and src/models/gpt.c:
  - model: nanoGPT (token + position embeddings, pre-norm blocks, causal
    attention through F.scaled_dot_product_attention, exact GELU MLP, final
    LayerNorm, head tied to the token embedding, bias off, dropout on the
    embeddings, attention weights and both residual branches);
  - init: normal(0, 0.02) for Linear and Embedding weights, normal(0, 0.02 /
    sqrt(2 * n_layer)) for attn.c_proj and mlp.c_proj, LayerNorm weight 1;
  - data: byte vocabulary sorted ascending, first 90% train, windows at offsets
    splitmix64() % (n - block) from a generator seeded with --seed (the same
    offsets as wgt), eval batches from splitmix64 seeded per (step, split);
  - optimizer: AdamW (betas 0.9 / beta2, eps 1e-8), weight decay on tensors of
    2+ dims only, gradient clipping at 1.0, learning rate lr * (step + 1) /
    warmup during warmup then cosine to min_lr at lr_decay_iters (wgt_lr_at);
  - eval at every eval_interval and at the end, under no_grad, model.eval().
Dropout masks differ (torch's generator vs Philox); the initial weights are
the same scheme, not the same numbers.

f32 with TF32 off by default (the target of issue 11); --tf32, --bf16 and
--compile give what a PyTorch user would really run.

  python3 bench/train_torch_ref.py --max-iters 300 --bench          # tokens/s, peak memory
  python3 bench/train_torch_ref.py --csv torch_log.csv               # full run, loss log
  python3 bench/train_torch_ref.py --sample-bench 500                # KV-cache sampling tokens/s
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK64 = (1 << 64) - 1


def splitmix64(state):
    """(new_state, output): the generator of tools/wgt/train_data.c."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def eval_seed(seed, step, split):
    s = (seed ^ 0x5EED5EED5EED5EED) & MASK64
    s = (s + step * 2 + split) & MASK64
    return splitmix64(s)[1]


class Data:
    def __init__(self, path, device):
        raw = open(path, "rb").read()
        if not raw:
            sys.exit(f"{path} is empty")
        self.vocab = sorted(set(raw))
        lut = {b: i for i, b in enumerate(self.vocab)}
        ids = torch.tensor([lut[b] for b in raw], dtype=torch.long)
        n_train = len(raw) * 9 // 10
        self.splits = (ids[:n_train].to(device), ids[n_train:].to(device))
        self.device = device

    def batch(self, split, batch, block, state):
        data = self.splits[split]
        n = data.numel()
        offsets = []
        for _ in range(batch):
            state, r = splitmix64(state)
            offsets.append(r % (n - block))
        idx = torch.tensor(offsets, device=self.device).unsqueeze(1) + torch.arange(block, device=self.device)
        return data[idx], data[idx + 1], state


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.attn_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.ln_2 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.mlp_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)
        self.n_head, self.dropout = c.n_head, c.dropout
        self.drop = nn.Dropout(c.dropout)

    def attention(self, x, cache=None):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:  # sampling: append this step's k/v into the preallocated cache
            kc, vc, pos = cache
            kc[:, :, pos:pos + T] = k
            vc[:, :, pos:pos + T] = v
            k, v = kc[:, :, :pos + T], vc[:, :, :pos + T]
            # bottom-right aligned causal mask as wgt (query i sees keys j <= i + pos)
            mask = torch.ones(T, pos + T, dtype=torch.bool, device=x.device).tril(pos)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               dropout_p=self.dropout if self.training else 0.0)
        return y.transpose(1, 2).contiguous().view(B, T, C)

    def forward(self, x, cache=None):
        x = x + self.drop(self.attn_proj(self.attention(x, cache)))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.block_size, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.h = nn.ModuleList([Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c.n_layer))
            elif p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                nn.init.ones_(p)

    def forward(self, idx, targets=None, caches=None, pos=0):
        T = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe.weight[pos:pos + T])
        for i, block in enumerate(self.h):
            x = block(x, None if caches is None else (caches[i][0], caches[i][1], pos))
        if targets is None:
            return self.lm_head(self.ln_f(x[:, -1:]))[:, 0]
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def lr_at(a, step):
    if step < a.warmup_iters:
        return a.lr * (step + 1) / a.warmup_iters
    if step >= a.lr_decay_iters:
        return a.min_lr
    r = (step - a.warmup_iters) / (a.lr_decay_iters - a.warmup_iters)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * r)) * (a.lr - a.min_lr)


def add_model_args(p):
    """The options of the model, its data and AdamW: the `shakespeare` preset of
    tools/wgt/train_config.c. ddp_torch_ref.py takes the same; each script adds
    its run length (its own default) and its own options."""
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "tinyshakespeare.txt"))
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup-iters", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--bench-warmup", type=int, default=10)
    p.add_argument("--tf32", action="store_true")


def make_model(a, data, dev):
    """The GPT of the options in `a` and its AdamW, as `wgt train` sets them up
    (weight decay on matrices only); ddp_torch_ref.py trains the same.
    Returns (model, config, optimizer)."""
    class Cfg:
        pass
    c = Cfg()
    c.n_layer, c.n_head, c.n_embd, c.block_size = a.n_layer, a.n_head, a.n_embd, a.block_size
    c.vocab_size, c.dropout, c.bias = len(data.vocab), a.dropout, False
    model = GPT(c).to(dev)
    decay = [p_ for p_ in model.parameters() if p_.dim() >= 2]
    no_decay = [p_ for p_ in model.parameters() if p_.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, a.beta2), eps=1e-8)
    return model, c, opt


def nanogpt_names(n_layer):
    """This module's parameter names -> nanoGPT's, the names `wgt train`
    checkpoints use (as model.<name>) and `wgt train --init` reads."""
    names = {"wte.weight": "transformer.wte.weight", "wpe.weight": "transformer.wpe.weight",
             "ln_f.weight": "transformer.ln_f.weight"}
    for l in range(n_layer):
        for own, theirs in (("ln_1", "ln_1"), ("c_attn", "attn.c_attn"), ("attn_proj", "attn.c_proj"),
                            ("ln_2", "ln_2"), ("c_fc", "mlp.c_fc"), ("mlp_proj", "mlp.c_proj")):
            names[f"h.{l}.{own}.weight"] = f"transformer.h.{l}.{theirs}.weight"
    return names


def swap_init(model, a):
    """--save-init writes the initial weights for `wgt train --init`; --init
    replaces them by a file's (a wgt checkpoint, e.g. of --stop-after 0). The
    seed's init still runs first, so the generator, and with it the dropout
    masks, stays the seed's: only the initial weights change."""
    from safetensors.torch import load_file, save_file
    names = nanogpt_names(a.n_layer)
    own = dict(model.named_parameters())
    assert set(own) == set(names), sorted(set(own) ^ set(names))
    if a.save_init:
        save_file({"model." + names[k]: v.detach().float().cpu().contiguous() for k, v in own.items()}, a.save_init)
        print(f"initial weights written to {a.save_init}")
    if a.init:
        src = load_file(a.init)
        with torch.no_grad():
            for k, v in own.items():
                t = src["model." + names[k]]
                assert tuple(t.shape) == tuple(v.shape), (k, t.shape, v.shape)
                v.copy_(t.to(v.device, v.dtype))
        print(f"initial weights from {a.init}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_args(p)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-iters", type=int, default=5000)
    p.add_argument("--lr-decay-iters", type=int, default=None, help="default: --max-iters")
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--eval-iters", type=int, default=200)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--bench", action="store_true", help="time steps after --bench-warmup; no evaluation")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--csv", help="write step,loss,train_eval,val_eval,lr like wgt train's log.csv")
    p.add_argument("--sample-bench", type=int, default=0, metavar="N",
                   help="after training, time N tokens of KV-cache sampling (batch 1)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--init", help="initial weights from FILE (model.<nanoGPT name>, as wgt's checkpoints)")
    p.add_argument("--save-init", help="write the initial weights to FILE (for wgt train --init)")
    a = p.parse_args()
    a.lr_decay_iters = a.lr_decay_iters or a.max_iters
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    data = Data(a.data, dev)

    model, c, opt = make_model(a, data, dev)
    if a.init or a.save_init:
        swap_init(model, a)
    step_model = torch.compile(model) if a.compile else model
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16)
    n_params = sum(p_.numel() for p_ in model.parameters())
    mode = "f32" + (" TF32" if a.tf32 else ", TF32 off") + (" bf16-autocast" if a.bf16 else "") + \
        (" compile" if a.compile else "")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev}: "
          f"{n_params / 1e6:.2f}M parameters, {mode}")

    @torch.no_grad()
    def evaluate(step, split):
        model.eval()
        state, total = eval_seed(a.seed, step, split), 0.0
        for _ in range(a.eval_iters):
            x, y, state = data.batch(split, a.batch_size, a.block_size, state)
            with autocast:
                total += step_model(x, y).item()
        model.train()
        return total / a.eval_iters

    rows, state, best = [], a.seed, float("inf")
    tokens = a.batch_size * a.block_size
    t_log, since, t_bench = time.time(), 0, None
    for step in range(a.max_iters + 1):
        if not a.bench and (step == a.max_iters or (a.eval_interval and step % a.eval_interval == 0)):
            tr, va = evaluate(step, 0), evaluate(step, 1)
            best = min(best, va)
            rows.append((step, float("nan"), tr, va, lr_at(a, step)))
            print(f"step {step}: train loss {tr:.4f}, val loss {va:.4f}", flush=True)
            t_log, since = time.time(), 0
        if step == a.max_iters:
            break
        if a.bench and step == a.bench_warmup:
            torch.cuda.synchronize()  # the peak below covers the whole run, as wgt's peak_bytes_in_use
            t_bench = time.time()
        lr = lr_at(a, step)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y, state = data.batch(0, a.batch_size, a.block_size, state)
        with autocast:
            loss = step_model(x, y)
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        since += 1
        if (step + 1) % a.log_interval == 0 or step + 1 == a.max_iters:
            v = loss.item()
            now = time.time()
            rows.append((step, v, float("nan"), float("nan"), lr))
            print(f"step {step + 1}/{a.max_iters}  loss {v:.4f}  {since * tokens / (now - t_log):.0f} tok/s", flush=True)
            t_log, since = now, 0
    if a.bench:
        torch.cuda.synchronize()
        timed = a.max_iters - a.bench_warmup
        elapsed = time.time() - t_bench
        print(f"bench: {timed} steps after {a.bench_warmup} warm-up: {1e3 * elapsed / timed:.1f} ms/step, "
              f"{timed * tokens / elapsed:.0f} tokens/s, peak device memory "
              f"{torch.cuda.max_memory_allocated() / 2**20:.1f} MiB (max_memory_allocated)")
    else:
        print(f"done: best val loss {best:.4f}")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("step,loss,train_eval,val_eval,lr\n")
            for r in rows:
                f.write(",".join("" if isinstance(v, float) and math.isnan(v) else f"{v:.6g}" for v in r) + "\n")
    if a.sample_bench:
        sample_bench(model, c, data, a.sample_bench, dev)


@torch.no_grad()
def sample_bench(model, c, data, n, dev):
    """KV-cache generation at batch 1, temperature 0.8, top-k 200 (wgt sample's defaults)."""
    model.eval()
    hd = c.n_embd // c.n_head
    caches = [(torch.zeros(1, c.n_head, c.block_size, hd, device=dev),
               torch.zeros(1, c.n_head, c.block_size, hd, device=dev)) for _ in range(c.n_layer)]
    context = [data.vocab.index(10)]  # the prompt "\n"
    idx = torch.tensor([context], device=dev)
    torch.cuda.synchronize()
    t0, pos, made = time.time(), 0, 0
    while made < n:
        if pos == c.block_size:  # full: re-encode the newest half, as wgt sample does
            context = context[-(c.block_size // 2):]
            idx, pos = torch.tensor([context], device=dev), 0
        logits = model(idx, caches=caches, pos=pos) / 0.8
        pos += idx.shape[1]
        v, _ = torch.topk(logits, min(200, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float("inf")
        idx = torch.multinomial(F.softmax(logits, dim=-1), 1)
        context.append(idx.item())  # the token reaches the host each step, as when streaming
        made += 1
    torch.cuda.synchronize()
    el = time.time() - t0
    print(f"sample: {n} tokens in {el:.2f} s ({n / el:.1f} tokens/s, KV cache, batch 1)")


if __name__ == "__main__":
    main()
