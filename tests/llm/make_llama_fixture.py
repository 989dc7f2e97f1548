"""Tiny Llama fixtures checked against Hugging Face transformers (issue 12).

Run on a machine with torch + transformers (no network needed), from the
repository root:

    python3 tests/llm/make_llama_fixture.py

It writes, for two random-weight LlamaConfigs (hidden 64, 2 layers, 4 heads,
2 kv heads, intermediate 128, vocab = tests/llm/tokenizer.json's 1024, rope
theta 10000; the second with llama3 rope scaling and untied embeddings):

    tests/llm/tiny-llama/          config.json, model.safetensors (f32), tokenizer.json,
                                   expected.safetensors
    tests/llm/tiny-llama-bf16/     the same weights stored as bf16 (+ its own expected)
    tests/llm/tiny-llama3-rope/    llama3 rope scaling, untied lm_head

expected.safetensors holds prompt_ids (i32 [T]), logits (f32 [T, V]: every
prompt position, from LlamaForCausalLM in f32) and greedy_ids (i32 [64]:
generate(do_sample=False, max_new_tokens=64) after the prompt, no EOS stop).
tests/test_llama.c loads each folder on the CPU and WebGPU backends and
compares (f32 weights: rel L2 <= 1e-4 and the same 64 tokens; f16: <= 1e-2).
"""
import copy
import os
import shutil
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

V5 = int(transformers.__version__.split(".")[0]) >= 5


def rope_kwargs(theta, scaling=None):
    """transformers 5 takes rope_parameters; 4.x rope_theta + rope_scaling."""
    if V5:
        return {"rope_parameters": dict(scaling or {"rope_type": "default"}, rope_theta=theta)}
    return {"rope_theta": theta, **({"rope_scaling": scaling} if scaling else {})}

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", ".deps", "python-tokenizers"))
from tokenizers import Tokenizer  # noqa: E402

PROMPT = "ROMEO:\nBut, soft! what light through yonder window breaks?"
NEW_TOKENS = 64


def build(name, seed, dtype, **extra):
    tok = Tokenizer.from_file(os.path.join(HERE, "tokenizer.json"))
    cfg = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
                      bos_token_id=tok.token_to_id("<|begin_of_text|>"), eos_token_id=tok.token_to_id("<|end_of_text|>"),
                      # std 0.1 instead of 0.02: logits far enough apart that 64 argmax
                      # picks do not hinge on float rounding
                      initializer_range=0.1, **extra)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).to(torch.float32).eval()
    # random norms (not all ones) so a missing or misplaced norm weight shows
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    if dtype == torch.bfloat16:  # the reference is the bf16-rounded weights, computed in f32
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    # save a converted copy: model.to(bf16) would also round the rotary
    # inv_freq buffer, and the reference below must keep it in f32
    copy.deepcopy(model).to(dtype).save_pretrained(out, safe_serialization=True)
    shutil.copy(os.path.join(HERE, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    ids = [tok.token_to_id("<|begin_of_text|>")] + tok.encode(PROMPT, add_special_tokens=False).ids
    x = torch.tensor([ids])
    with torch.no_grad():
        logits = model(x).logits[0].to(torch.float32)
        # no EOS stop: exactly 64 argmax tokens
        model.generation_config.eos_token_id = None
        gen = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=NEW_TOKENS,
                             pad_token_id=0)[0, len(ids):]
    assert len(gen) == NEW_TOKENS
    save_file({"prompt_ids": torch.tensor(ids, dtype=torch.int32), "logits": logits.contiguous(),
               "greedy_ids": gen.to(torch.int32).contiguous()}, os.path.join(out, "expected.safetensors"))
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{out}: {len(ids)} prompt tokens, {len(gen)} greedy tokens, {size / 1024:.0f} KiB")


def main():
    build("tiny-llama", 1, torch.float32, tie_word_embeddings=True, **rope_kwargs(10000.0))
    build("tiny-llama-bf16", 1, torch.bfloat16, tie_word_embeddings=True, **rope_kwargs(10000.0))
    build("tiny-llama3-rope", 2, torch.float32, tie_word_embeddings=False,
          **rope_kwargs(500000.0, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16}))


if __name__ == "__main__":
    main()
