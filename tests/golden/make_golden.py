#!/usr/bin/env python3
"""Golden values from PyTorch for tests/test_golden.c.

Two small models, each written as one safetensors file next to this script:
  mlp.safetensors          x [8, 5] -> Linear(5, 7) -> GELU -> Linear(7, 3) -> cross-entropy
  transformer.safetensors  a one-block GPT: token + position embeddings, pre-norm
                           causal self-attention (2 heads) and GELU MLP, final
                           layer norm, linear head, cross-entropy over [2, 6] tokens
Each file holds the inputs ("input.*"), the initial parameters ("param.*"), the
loss and every parameter's gradient at the initial parameters ("loss0",
"grad.*"), then the losses of 10 AdamW steps (lr 1e-2, weight decay 0.1,
"losses" [10], each before its step) and the parameters after them ("final.*").

f32 on the CPU with deterministic algorithms, so the numbers do not depend on
the GPU that happened to run the script. The files are written by hand (the
format is 8 bytes of header length, a JSON header, raw little-endian data) so
the fixtures do not go through the safetensors package either: our reader is
checked against a writer that is not ours and not the reference library.

Run: python3 tests/golden/make_golden.py  (PyTorch >= 2.0)
"""
import json
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(5, 7)
        self.l2 = nn.Linear(7, 3)

    def forward(self, x, targets):
        return F.cross_entropy(self.l2(F.gelu(self.l1(x))), targets.long())


class Block(nn.Module):
    V, T, C, H = 11, 6, 16, 2

    def __init__(self):
        super().__init__()
        V, T, C = self.V, self.T, self.C
        self.tok = nn.Embedding(V, C)
        self.pos = nn.Embedding(T, C)
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc1 = nn.Linear(C, 4 * C)
        self.fc2 = nn.Linear(4 * C, C)
        self.lnf = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)

    def forward(self, idx, targets):
        B, T = idx.shape
        C, H = self.C, self.H
        x = self.tok(idx.long()) + self.pos(torch.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, self.V), targets.long().view(-1))


def golden(model, inputs, path, description):
    out = {f"input.{k}": v for k, v in inputs.items()}
    for name, p in model.named_parameters():
        out[f"param.{name}"] = p.detach().clone()
    loss = model(*inputs.values())
    loss.backward()
    out["loss0"] = loss.detach().clone()
    for name, p in model.named_parameters():
        out[f"grad.{name}"] = p.grad.detach().clone()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = model(*inputs.values())
        losses.append(loss.item())
        loss.backward()
        opt.step()
    out["losses"] = torch.tensor(losses, dtype=torch.float32)
    for name, p in model.named_parameters():
        out[f"final.{name}"] = p.detach().clone()
    write_safetensors(path, out, {"model": description, "torch": torch.__version__,
                                  "optimizer": "AdamW lr=1e-2 betas=(0.9,0.999) eps=1e-8 weight_decay=0.1"})
    print(f"{path}: loss0 {out['loss0'].item():.6f}, loss after 10 steps {losses[-1]:.6f}")


def main():
    torch.manual_seed(0)
    mlp = MLP()
    golden(mlp, {"x": torch.randn(8, 5), "targets": torch.randint(0, 3, (8,), dtype=torch.int32)},
           os.path.join(HERE, "mlp.safetensors"), "MLP 5-7-3 GELU, cross-entropy")
    torch.manual_seed(1)
    block = Block()
    golden(block, {"idx": torch.randint(0, Block.V, (2, Block.T), dtype=torch.int32),
                   "targets": torch.randint(0, Block.V, (2, Block.T), dtype=torch.int32)},
           os.path.join(HERE, "transformer.safetensors"), "one pre-norm GPT block, C=16, H=2, T=6, V=11")


if __name__ == "__main__":
    main()
