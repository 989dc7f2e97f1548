"""A tiny Llama checked against an independent NumPy implementation (issue 12).

    python3 tests/llm/make_numpy_fixture.py

Writes tests/llm/tiny-llama-numpy/ (config.json, model.safetensors in bf16
with untied embeddings and q/k/v biases off, tokenizer.json, expected.safetensors)
in the same layout as make_llama_fixture.py's transformers fixtures, so
tests/test_llama.c checks the loader and the forward pass in CI where torch is
absent. The NumPy model below follows transformers' LlamaForCausalLM
(modeling_llama.py) in float64: RMSNorm (x * rsqrt(mean(x^2) + eps)) * w,
half-split RoPE with llama3 frequency scaling, GQA by repeating kv heads,
causal softmax attention, SwiGLU MLP. NumPy comes from .deps/python."""
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, ".deps", "python"))
sys.path.insert(0, os.path.join(ROOT, ".deps", "python-tokenizers"))
import numpy as np  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

PROMPT = "ROMEO:\nBut, soft! what light through yonder window breaks?"
NEW_TOKENS = 16
CFG = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu", vocab_size=1024,
           hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, head_dim=16, max_position_embeddings=128, rms_norm_eps=1e-5,
           rope_theta=500000.0, tie_word_embeddings=False, attention_bias=False,
           rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=16),
           bos_token_id=0, eos_token_id=1, torch_dtype="bfloat16")


def bf16_round(a):
    """float32 -> bf16 bits (round to nearest even) and the rounded values."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def save_safetensors(path, tensors):
    """tensors: name -> (dtype string, shape, raw bytes)."""
    header, offset, blobs = {}, 0, []
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def inv_freq(cfg):
    d, theta, rs = cfg["head_dim"], cfg["rope_theta"], cfg["rope_scaling"]
    f = 1.0 / theta ** (np.arange(0, d, 2) / d)
    lo, hi = rs["original_max_position_embeddings"] / rs["low_freq_factor"], rs["original_max_position_embeddings"] / rs["high_freq_factor"]
    wave = 2 * np.pi / f
    g = np.where(wave > lo, f / rs["factor"], f)
    smooth = (rs["original_max_position_embeddings"] / wave - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
    mid = ~(wave < hi) & ~(wave > lo)
    return np.where(mid, (1 - smooth) * g / rs["factor"] + smooth * g, g)


def forward(w, cfg, ids):
    T, H, Hkv, D = len(ids), cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    norm = lambda x, g: x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g  # noqa: E731
    ang = np.arange(T)[:, None] * inv_freq(cfg)[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    rope = lambda x: x * cos + np.concatenate([-x[..., D // 2:], x[..., :D // 2]], -1) * sin  # noqa: E731
    x = w["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = lambda n: w[f"model.layers.{l}.{n}"]  # noqa: E731
        h = norm(x, p("input_layernorm.weight"))
        q = (h @ p("self_attn.q_proj.weight").T).reshape(T, H, D).transpose(1, 0, 2)
        k = (h @ p("self_attn.k_proj.weight").T).reshape(T, Hkv, D).transpose(1, 0, 2)
        v = (h @ p("self_attn.v_proj.weight").T).reshape(T, Hkv, D).transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        k, v = np.repeat(k, H // Hkv, 0), np.repeat(v, H // Hkv, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(D) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        y = (s / s.sum(-1, keepdims=True)) @ v
        x = x + y.transpose(1, 0, 2).reshape(T, H * D) @ p("self_attn.o_proj.weight").T
        h = norm(x, p("post_attention_layernorm.weight"))
        g = h @ p("mlp.gate_proj.weight").T
        x = x + ((g / (1 + np.exp(-g))) * (h @ p("mlp.up_proj.weight").T)) @ p("mlp.down_proj.weight").T
    return norm(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


def main():
    cfg = CFG
    rng = np.random.default_rng(12)
    C, F, V, D = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["head_dim"]
    QD, KD = cfg["num_attention_heads"] * D, cfg["num_key_value_heads"] * D
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,), "lm_head.weight": (V, C)}
    for l in range(cfg["num_hidden_layers"]):
        for n, s in [("input_layernorm.weight", (C,)), ("post_attention_layernorm.weight", (C,)),
                     ("self_attn.q_proj.weight", (QD, C)), ("self_attn.k_proj.weight", (KD, C)),
                     ("self_attn.v_proj.weight", (KD, C)), ("self_attn.o_proj.weight", (C, QD)),
                     ("mlp.gate_proj.weight", (F, C)), ("mlp.up_proj.weight", (F, C)), ("mlp.down_proj.weight", (C, F))]:
            shapes[f"model.layers.{l}.{n}"] = s
    weights, stored = {}, {}
    for name, shape in shapes.items():
        a = 1.0 + 0.1 * rng.standard_normal(shape) if "norm" in name else 0.08 * rng.standard_normal(shape)
        bits, rounded = bf16_round(a)
        weights[name] = rounded.astype(np.float64)
        stored[name] = ("BF16", shape, bits.tobytes())
    out = os.path.join(HERE, "tiny-llama-numpy")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    save_safetensors(os.path.join(out, "model.safetensors"), stored)
    shutil.copy(os.path.join(HERE, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    tok = Tokenizer.from_file(os.path.join(HERE, "tokenizer.json"))
    ids = [0] + tok.encode(PROMPT, add_special_tokens=False).ids
    logits = forward(weights, cfg, ids)
    seq = list(ids)
    for _ in range(NEW_TOKENS):  # greedy, recomputing the whole sequence (no cache)
        seq.append(int(np.argmax(forward(weights, cfg, seq)[-1])))
    gen = np.array(seq[len(ids):], dtype=np.int32)
    save_safetensors(os.path.join(out, "expected.safetensors"), {
        "prompt_ids": ("I32", (len(ids),), np.array(ids, dtype=np.int32).tobytes()),
        "logits": ("F32", logits.shape, logits.astype(np.float32).tobytes()),
        "greedy_ids": ("I32", gen.shape, gen.tobytes())})
    print(f"{out}: {len(ids)} prompt tokens, greedy {gen.tolist()}")


if __name__ == "__main__":
    main()
