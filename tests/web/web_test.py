#!/usr/bin/env python3
"""The web build in a real browser (docs/web.md): serves build-web/ on
127.0.0.1, opens its pages in headless Chromium through Selenium (Debian's
python3-selenium and chromium-driver, installed by scripts/setup-deps.sh --web)
and reads the results the pages write into their DOM. Parts (--part, one per
CTest test of build-web, web/CMakeLists.txt):

  parity      parity.html: tests/test_parity.c compiled to WebAssembly, the
              browser's WebGPU (SwiftShader) against the build's CPU backend,
              for the ops of --parity-ops; every case must pass (exit code 0)
  train       index.html?auto=N&flags=...: trains a GPT on the browser's WebGPU
              (by default a micro model that SwiftShader trains in seconds; the
              page's own default is the tiny preset), then samples; the loss
              must fall by --min-drop and a sample appear. Saves the page's
              screenshot (--screenshot, printed as "screenshot: PATH").
  checkpoint  trains a checkpoint with the native `wgt train` (--native-wgt, on
              the CPU, a few seconds), serves it, and the page loads it and
              samples (index.html?auto=0&ckpt=...). Without the native tool
              the part is skipped (exit code 77, CTest's SKIP_RETURN_CODE).

Waits are on page state with deadlines, never fixed sleeps. Prints timings and
what the page's WebGPU layer asked of the browser (dispatches, pipelines,
time waiting), then "N passed, M failed"; exits non-zero on any failure.

usage: web_test.py BUILD_WEB_DIR [--part all|parity|train|checkpoint] [--steps N]
       [--flags "wgt train flags"] [--min-drop X] [--parity-ops op,op,...]
       [--timeout S] [--native-wgt PATH] [--checkpoint FILE] [--screenshot PATH]
"""
import argparse
import functools
import http.server
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

SKIPPED = 77  # CTest's SKIP_RETURN_CODE for this test (web/CMakeLists.txt)

# The model CI trains: 1 layer, 2 heads, width 32, 32-token blocks, batch 4.
# SwiftShader runs a step of it in ~0.15 s (the tiny preset: ~8 s), so the
# run costs mostly its first step, which compiles ~46 pipelines.
MICRO_FLAGS = "--n-layer 1 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --lr 1e-2"

# The parity subset: the op families a GPT training step runs (binary and
# unary elementwise, reductions, matmul, softmax, norms, loss, embedding,
# attention), 188 cases, a CNN's (convolutions, pooling, batch norm: 28
# more, ~10 s; conv2d's implicit GEMM did not compile in Chromium until
# 2026-11-27, a uniformity error only Tint reports) and rope (4: its built-in
# sin/cos erred by 1e-4 on SwiftShader until then). About 35 s on an idle
# 2-core machine, 70 s loaded; the whole table is `make test`'s (lavapipe):
# all of it passed in Chromium on 2026-11-27 (--parity-ops with every op).
PARITY_OPS = ("add,exp,sum,matmul,softmax,layer_norm,cross_entropy,embedding,attention,"
              "conv2d,conv_transpose2d,max_pool2d,avg_pool2d,batch_norm,rope")

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)
    return ok


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".js": "text/javascript"}

    def log_message(self, fmt, *args):
        pass


def serve(root):
    handler = functools.partial(QuietHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser():
    o = Options()
    # Debian's paths, which do not move with the browser's version (no
    # version-pinned driver: chromium-driver is built with chromium).
    o.binary_location = os.environ.get("WGT_CHROMIUM", "/usr/bin/chromium")
    # WebGPU on Linux is behind --enable-unsafe-webgpu; headless it runs on
    # SwiftShader (Vulkan on the CPU), the only CPU adapter Chromium offers
    # (with VK_ICD_FILENAMES on lavapipe it still picks SwiftShader). Newer
    # Chromium releases want --enable-unsafe-swiftshader for SwiftShader;
    # flags a release does not know are ignored.
    for flag in ("--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-unsafe-swiftshader",
                 "--disable-dev-shm-usage", "--window-size=1200,900", "--use-angle=swiftshader",
                 "--enable-features=Vulkan"):
        o.add_argument(flag)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(os.environ.get("WGT_CHROMEDRIVER", "/usr/bin/chromedriver")), options=o)


def console_tail(driver, n=15):
    """The page's last console lines (the library's stderr lands there)."""
    try:
        return "\n".join(e.get("message", "") for e in driver.get_log("browser")[-n:])
    except Exception as e:  # a driver without the log endpoint
        return f"(no console log: {e})"


def wait_for(driver, script, timeout, what):
    """Polls a JavaScript expression until it is not null/undefined."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.25).until(lambda d: d.execute_script(script))
    except Exception:
        body = driver.execute_script("return document.body ? document.body.innerText : ''") or ""
        print(f"--- page text after waiting {timeout}s for {what}:\n{body[-3000:]}", flush=True)
        print(f"--- console:\n{console_tail(driver)}", flush=True)
        return None


def page_result(driver, url, timeout, what):
    driver.get(url)
    raw = wait_for(driver, "return document.body.dataset.result", timeout, what)
    return json.loads(raw) if raw else None


def part_parity(driver, base, a):
    for op in [o for o in a.parity_ops.split(",") if o]:
        t0 = time.time()
        driver.get(f"{base}/parity.html?op={op}")
        code = wait_for(driver, "return document.body.dataset.exit", a.timeout, f"parity {op}")
        log = driver.execute_script("return document.getElementById('log').textContent") or ""
        summary = [l.strip() for l in log.splitlines() if l.strip().startswith(op + " ")]
        print(f"parity {op}: exit {code} in {time.time() - t0:.1f}s | " + " | ".join(summary), flush=True)
        check(code == "0", f"parity {op} (exit {code}):\n{log[-2000:]}")
        # "add  47 cases,  47 passed": the op ran at least one case
        counts = summary[0].split() if summary else []
        check(len(counts) >= 5 and counts[1].isdigit() and int(counts[1]) > 0 and counts[1] == counts[3],
              f"parity {op}: no cases ran or not all passed: {summary}")


def describe_gpu(name, s, steps):
    if not s:
        return
    per = f" ({s['dispatches'] / steps:.0f} dispatches, {s['wait_ms'] / steps:.0f} ms waiting per step)" if steps else ""
    print(f"  {name}: {s['dispatches']:.0f} dispatches, {s['submits']:.0f} submits, {s['maps']:.0f} reads, "
          f"{s['pipelines']:.0f} pipelines, {s['buffers']:.0f} buffers, {s['bind_groups']:.0f} bind groups, "
          f"{s['scope_pops']:.0f} error-scope pops, {s['wait_ms'] / 1000:.1f} s waiting on the GPU{per}", flush=True)


def part_train(driver, base, a):
    from urllib.parse import quote
    t0 = time.time()
    r = page_result(driver, f"{base}/index.html?auto={a.steps}&flags={quote(a.flags)}", a.timeout, "training")
    shot = os.path.abspath(a.screenshot)
    driver.save_screenshot(shot)
    print("screenshot:", shot, flush=True)
    if not check(r is not None, "training page gave no result"):
        return
    losses = r.get("losses", [])
    print(f"train: {r.get('model')}", flush=True)
    print(f"train: {len(losses)} steps in {time.time() - t0:.1f}s (page: {r.get('seconds', 0):.1f}s), "
          f"backend {r.get('backend')} [{r.get('adapter')}], {r.get('tokens_per_s', 0):.0f} tokens/s", flush=True)
    print(f"train: step ms {r.get('step_ms')}", flush=True)
    print(f"train: losses {[round(l, 3) for l in losses]}", flush=True)
    describe_gpu("first step", r.get("gpu_first_step"), 1)
    describe_gpu(f"steps 2-{len(losses)}", r.get("gpu_other_steps"), max(len(losses) - 1, 0))
    print(f"train: sample {r.get('sample', '')!r}", flush=True)
    check(r.get("error") is None, f"training page error: {r.get('error')}")
    check(r.get("backend") == "webgpu", f"trained on {r.get('backend')}, not the browser's WebGPU")
    check(len(losses) == a.steps, f"{len(losses)} losses for {a.steps} steps")
    check(all(isinstance(l, (int, float)) and math.isfinite(l) for l in losses), "a loss is not finite")
    if len(losses) >= 8:
        # means over a few steps: a batch of 4 x 32 tokens gives a noisy loss
        first, last = sum(losses[:3]) / 3, sum(losses[-5:]) / 5
        print(f"train: loss {first:.3f} (mean of the first 3) -> {last:.3f} (mean of the last 5), "
              f"required drop {a.min_drop}", flush=True)
        check(last <= first - a.min_drop, f"loss did not fall by {a.min_drop}: {first:.3f} -> {last:.3f}")
    check(len(r.get("sample", "")) >= 20, "no sample streamed")


def part_checkpoint(driver, base, a, root):
    ckpt = a.checkpoint
    if not ckpt:
        if not a.native_wgt or not os.access(a.native_wgt, os.X_OK):
            print(f"checkpoint: skipped: no native wgt at {a.native_wgt!r} (make build makes one)", flush=True)
            return SKIPPED
        # A small checkpoint of native `wgt train` on the CPU: the page must
        # read what the native tool writes (format, config, vocabulary).
        out = os.path.join(root, "native-ckpt")
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "tinyshakespeare.txt")
        cmd = [a.native_wgt, "train", "--backend", "cpu", "--data", data, "--out", out, "--max-iters", "10",
               "--eval-iters", "1", "--sample", "0", "--quiet"] + MICRO_FLAGS.split()
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout,
                           env={**os.environ, "OMP_WAIT_POLICY": "passive"})
        print(f"checkpoint: native wgt train, exit {p.returncode} in {time.time() - t0:.1f}s", flush=True)
        if not check(p.returncode == 0, f"native wgt train failed: {' '.join(cmd)}\n{p.stdout[-1500:]}{p.stderr[-1500:]}"):
            return 1
        ckpt = os.path.join(out, "ckpt.safetensors")
    shutil.copyfile(ckpt, os.path.join(root, "ckpt.safetensors"))
    t0 = time.time()
    r = page_result(driver, f"{base}/index.html?auto=0&ckpt=ckpt.safetensors", a.timeout, "checkpoint") or {}
    print(f"checkpoint: {r.get('checkpoint')!r} in {time.time() - t0:.1f}s, sample {r.get('ckpt_sample', '')!r}, "
          f"error {r.get('error')!r}", flush=True)
    check(r.get("error") is None and "step" in (r.get("checkpoint") or ""), f"checkpoint not loaded: {r}")
    check(r.get("backend") == "webgpu", f"sampled on {r.get('backend')}, not the browser's WebGPU")
    check(len(r.get("ckpt_sample", "")) >= 40, "no sample from the checkpoint")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--part", default="all", choices=["all", "parity", "train", "checkpoint"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--flags", default=MICRO_FLAGS, help="wgt train flags over the tiny preset ('' : the preset)")
    ap.add_argument("--min-drop", type=float, default=0.4,
                    help="the mean of the last 5 losses must be this much below the mean of the first 3")
    ap.add_argument("--parity-ops", default=PARITY_OPS)
    ap.add_argument("--timeout", type=float, default=300, help="seconds each page may take")
    ap.add_argument("--native-wgt", help="native wgt tool: makes the checkpoint the page loads")
    ap.add_argument("--checkpoint", help="a ckpt.safetensors of native wgt train (instead of --native-wgt)")
    ap.add_argument("--screenshot", help="where the training page's screenshot goes (default BUILD/web-test.png)")
    a = ap.parse_args()
    root = os.path.abspath(a.build)
    a.screenshot = a.screenshot or os.path.join(root, "web-test.png")
    for f in ("index.html", "page.js", "wgtensor.js", "wgtensor.wasm", "parity.html", "parity.js", "parity.wasm",
              "tinyshakespeare.txt"):
        if not os.path.exists(os.path.join(root, f)):
            print(f"FAIL: {root}/{f} missing (make web)")
            return 1
    t_start = time.time()
    if a.part == "checkpoint" and not a.checkpoint and not (a.native_wgt and os.access(a.native_wgt, os.X_OK)):
        print(f"checkpoint: skipped: no native wgt at {a.native_wgt!r} (make build makes one)", flush=True)
        return SKIPPED
    server = serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    driver = browser()
    print(f"browser: Chromium {driver.capabilities.get('browserVersion')} started in {time.time() - t_start:.1f}s",
          flush=True)
    code = 0
    try:
        if a.part in ("all", "parity"):
            part_parity(driver, base, a)
        if a.part in ("all", "train"):
            part_train(driver, base, a)
        if a.part in ("all", "checkpoint"):
            code = part_checkpoint(driver, base, a, root)
    finally:
        driver.quit()
        server.shutdown()
    print(f"web_test {a.part}: {time.time() - t_start:.1f}s")
    print(f"{passed} passed, {failed} failed")
    if failed:
        return 1
    if code == SKIPPED and a.part == "checkpoint":
        return SKIPPED
    return 0 if passed > 0 or code == SKIPPED else 1


if __name__ == "__main__":
    sys.exit(main())
