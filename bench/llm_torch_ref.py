#!/usr/bin/env python3
"""The PyTorch side of `wgt generate --bench` (issue 12): Llama-3.2-1B's config
with random weights, f16 on the GPU, batch 1.

    python3 bench/llm_torch_ref.py --json llm_torch.json [--prompt-tokens 512] [--decode-tokens 128]

- decode tokens/s: transformers generate() with a static KV cache (transformers
  5.x compiles the decode step by itself with it), greedy, exactly N new tokens
  (EOS off); measured as (N - 1) / (time(N new tokens) - time(1 new token)) so
  the prefill is left out; median of 3 after a warm-up run.
- prefill tokens/s: one eager forward of a 512-token prompt (model(ids)),
  CUDA-synchronized, median of 10 after a warm-up of at least 0.5 s (as `wgt
  generate --bench` warms up: an H100 ran the first ~0.1-0.5 s of a process
  at lower clocks; one warm-up call gave 20.8k and 40.1k tokens/s in two
  processes of one call, 2026-11-28).
bench/llm_run.sh runs this and `wgt generate --bench` and prints the ratios.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

LLAMA_3_2_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                    num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
                    rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu")
ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}


def make_model():
    import transformers
    kw = dict(LLAMA_3_2_1B)
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = dict(ROPE, rope_theta=500000.0)
    else:
        kw["rope_theta"], kw["rope_scaling"] = 500000.0, ROPE
    cfg = LlamaConfig(**kw)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.float16).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def timed(fn, reps, warm_s=0.0):
    fn()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        fn()
        torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--decode-tokens", type=int, default=128)
    a = ap.parse_args()
    model = make_model()
    g = torch.Generator(device="cuda").manual_seed(1)
    prompt = torch.randint(0, LLAMA_3_2_1B["vocab_size"], (1, a.prompt_tokens), device="cuda", generator=g)
    with torch.no_grad():
        t_prefill = timed(lambda: model(prompt), 10, warm_s=0.5)
        one = prompt[:, :1]

        def gen(n):
            return lambda: model.generate(one, attention_mask=torch.ones_like(one), do_sample=False,
                                          max_new_tokens=n, cache_implementation="static")
        t1 = timed(gen(1), 3)
        tn = timed(gen(a.decode_tokens), 3)
    res = {"shape": "llama-3.2-1b", "weights": "f16", "device": torch.cuda.get_device_name(),
           "prompt_tokens": a.prompt_tokens, "prefill_tokens_per_s": a.prompt_tokens / t_prefill,
           "decode_tokens": a.decode_tokens, "decode_tokens_per_s": (a.decode_tokens - 1) / (tn - t1),
           "torch": torch.__version__}
    print(f"torch llama-3.2-1b f16: prefill {a.prompt_tokens} tokens {res['prefill_tokens_per_s']:.1f} tokens/s, "
          f"decode {res['decode_tokens_per_s']:.1f} tokens/s (static cache)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
