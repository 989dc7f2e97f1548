#!/usr/bin/env bash
# The closing measurements of a session on the GPU machine, side by side with
# PyTorch in one command (ratios only mean something within one run):
#   bench/h100_final.sh OUTDIR
# 1. GPT training throughput and KV-cache sampling (issue 11): wgt train --bench
#    against bench/train_torch_ref.py in f32 (TF32 off: the target), TF32, bf16.
# 2. Llama-3.2-1B-shaped prefill/decode (issue 12): bench/llm_run.sh, the one-step
#    decode loop for comparison, and the decode matvecs alone.
# 3. Convolutions and ResNet-18 (issue 13), also with the former conv paths.
# 4. Attention forward+backward and the backward GEMMs (what bounds training).
# 5. Per-op GPU profile of a training step (rows by total ms).
# The 5000-step quality run is `make run` (a separate call: it takes ~6 min).
set -u
out="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
W="$root/build/bin/wgt"
mkdir -p "$out/train"
by_total() { grep -v "^op " | awk 'NF >= 6 {print $(NF-3) "\t" $0}' | sort -g -r | cut -f2-; }
merge_json() { python3 - "$@" <<'PY'
import json, sys
dst, srcs = sys.argv[1], sys.argv[2:]
docs = [json.load(open(s)) for s in srcs]
docs[0]["cases"] = [c for d in docs for c in d["cases"]]
json.dump(docs[0], open(dst, "w"), indent=1)
PY
}

# 1. training
"$W" train --preset shakespeare --max-iters 60 --bench --eval-iters 1 --eval-interval 1000 --sample 0 \
  --out /tmp/final-train --quiet 2>&1 | grep "bench:" | tee "$out/train/wgt.txt"
"$W" sample --checkpoint /tmp/final-train/ckpt.safetensors --tokens 500 > /dev/null 2> "$out/train/wgt_sample.txt"
tail -1 "$out/train/wgt_sample.txt"
ref="$root/bench/train_torch_ref.py"
python3 "$ref" --max-iters 60 --bench --sample-bench 500 2>&1 | tail -3 | tee "$out/train/torch_f32.txt"
python3 "$ref" --max-iters 60 --bench --tf32 2>&1 | tail -2 | tee "$out/train/torch_tf32.txt"
python3 "$ref" --max-iters 60 --bench --bf16 2>&1 | tail -2 | tee "$out/train/torch_bf16.txt"
WGT_PROFILE=1 "$W" train --preset shakespeare --max-iters 40 --bench --eval-iters 1 --eval-interval 1000 \
  --sample 0 --out /tmp/final-train-p --quiet > /dev/null 2> /tmp/final-prof.txt
by_total < /tmp/final-prof.txt | head -30 > "$out/train/profile_top.txt"

# 2. LLM
bash "$root/bench/llm_run.sh" "$out/llm" 2>&1 | tail -8
# the one-step loop (each token read before the next step is recorded), and the decode matvecs alone
for w in f16 q4; do
  "$W" generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --sequential | tail -1
done | tee "$out/llm/sequential.txt"
"$W" bench --only gemv_ --json "$out/llm/wgt_gemv.json" > "$out/llm/wgt_gemv.txt" 2>&1

# 3. CNN
mkdir -p "$out/cnn"
"$W" bench --only conv_fb --json "$out/cnn/wgt_conv.json" > "$out/cnn/wgt_conv.txt" 2>&1
"$W" bench --only resnet18 --json "$out/cnn/wgt_resnet.json" > "$out/cnn/wgt_resnet.txt" 2>&1
merge_json "$out/cnn/wgt.json" "$out/cnn/wgt_conv.json" "$out/cnn/wgt_resnet.json"
OLD="WGT_CONV_V2=0 WGT_CONV_SPLITK=0 WGT_CONV_TILE=old WGT_CONV_PHASES=0 WGT_CONV_RTAB=0 WGT_CONV_LOADS=0 WGT_CONV_DBUF=0 WGT_CONV_STEM=0"
env $OLD "$W" bench --only conv_fb > "$out/cnn/wgt_conv_former_paths.txt" 2>&1
env $OLD "$W" bench --only resnet18 >> "$out/cnn/wgt_conv_former_paths.txt" 2>&1
python3 "$root/bench/cnn_torch_ref.py" --json "$out/cnn/torch.json" > "$out/cnn/torch.txt" 2>&1
python3 "$root/bench/compare.py" "$out/cnn/wgt.json" "$out/cnn/torch.json" --markdown | tee "$out/cnn/compare.md"

# 4. attention and backward GEMMs
mkdir -p "$out/ops"
"$W" bench --only attn_fb --json "$out/ops/wgt_attn.json" > /dev/null 2>&1
"$W" bench --only gemm_bwd --json "$out/ops/wgt_gemm.json" > /dev/null 2>&1
"$W" bench --only linear_f32 --json "$out/ops/wgt_linear.json" > /dev/null 2>&1
merge_json "$out/ops/wgt.json" "$out/ops/wgt_attn.json" "$out/ops/wgt_gemm.json" "$out/ops/wgt_linear.json"
for c in attn_fb linear_f32; do python3 "$root/bench/torch_ref.py" --only $c --json "$out/ops/torch_$c.json" > /dev/null 2>&1; done
merge_json "$out/ops/torch.json" "$out/ops/torch_attn_fb.json" "$out/ops/torch_linear_f32.json"
python3 "$root/bench/compare.py" "$out/ops/wgt.json" "$out/ops/torch.json" --markdown | tee "$out/ops/compare.md"
