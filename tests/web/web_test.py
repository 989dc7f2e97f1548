#!/usr/bin/env python3
"""The web build in a real browser (docs/web.md): serves build-web/ on
127.0.0.1, opens its pages in headless Chromium through Selenium (Debian's
python3-selenium and chromium-driver, installed by scripts/setup-deps.sh --web)
and reads the results the pages write into their DOM:

  parity.html  tests/test_parity.c compiled to WebAssembly, the browser's WebGPU
               (SwiftShader) against the build's CPU backend: a subset of the op
               table (--parity-ops), every case must pass (exit code 0)
  index.html   ?auto=N: trains the tiny GPT preset N steps on the browser's
               WebGPU, then samples; the loss must fall and a sample appear

Waits are on page state with a deadline, never fixed sleeps. Saves a
screenshot of the training page (build-web/web-test.png). Prints
"N passed, M failed" and exits non-zero on any failure, as the C tests do.

  --checkpoint  a checkpoint of native `wgt train` is copied next to the page,
               loaded by it (index.html?ckpt=...) and sampled

usage: web_test.py BUILD_WEB_DIR [--steps N] [--parity-ops op,op,...] [--timeout S] [--checkpoint FILE]
"""
import argparse
import functools
import http.server
import json
import os
import shutil
import sys
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, flush=True)


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
    o.binary_location = os.environ.get("WGT_CHROMIUM", "/usr/bin/chromium")
    # WebGPU on Linux is behind --enable-unsafe-webgpu; headless it runs on
    # SwiftShader (Vulkan on the CPU).
    for flag in ("--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--disable-dev-shm-usage",
                 "--window-size=1200,900", "--use-angle=swiftshader", "--enable-features=Vulkan"):
        o.add_argument(flag)
    return webdriver.Chrome(service=Service(os.environ.get("WGT_CHROMEDRIVER", "/usr/bin/chromedriver")), options=o)


def wait_for(driver, script, timeout, what):
    """Polls a JavaScript expression until it is not null/undefined."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.5).until(lambda d: d.execute_script(script))
    except Exception:
        body = driver.execute_script("return document.body ? document.body.innerText : ''") or ""
        print(f"--- page text after waiting {timeout}s for {what}:\n{body[-3000:]}", flush=True)
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--parity-ops", default="add,exp,sum,matmul")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--checkpoint", help="a ckpt.safetensors of native wgt train: loaded by the page and sampled")
    a = ap.parse_args()
    root = os.path.abspath(a.build)
    for f in ("index.html", "wgtensor.js", "wgtensor.wasm", "parity.html", "parity.js", "parity.wasm"):
        if not os.path.exists(os.path.join(root, f)):
            print(f"FAIL: {root}/{f} missing (make web)")
            return 1
    server = serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    driver = browser()
    print("browser:", driver.capabilities.get("browserVersion"), flush=True)
    try:
        # -- parity subset
        for op in [o for o in a.parity_ops.split(",") if o]:
            t0 = time.time()
            driver.get(f"{base}/parity.html?op={op}")
            code = wait_for(driver, "return document.body.dataset.exit", a.timeout, f"parity {op}")
            log = driver.execute_script("return document.getElementById('log').textContent") or ""
            summary = [l for l in log.splitlines() if l.startswith("parity:") or l.strip().startswith(op)]
            print(f"parity {op}: exit {code} in {time.time() - t0:.1f}s | " + " | ".join(summary), flush=True)
            check(code == "0", f"parity {op} (exit {code}):\n{log[-2000:]}")
            check(f"{op} " in log and " 0 cases" not in log.split(op, 1)[-1].split("\n")[0],
                  f"parity {op}: no cases ran")
        # -- training + sampling on the browser's WebGPU
        t0 = time.time()
        driver.get(f"{base}/index.html?auto={a.steps}")
        result = wait_for(driver, "return document.body.dataset.result", a.timeout * 2, "training")
        shot = os.path.join(root, "web-test.png")
        driver.save_screenshot(shot)
        print("screenshot:", shot, flush=True)
        check(result is not None, "training page gave no result")
        if result:
            r = json.loads(result)
            losses = r.get("losses", [])
            print(f"train: {len(losses)} steps in {time.time() - t0:.1f}s, backend {r.get('backend')}, "
                  f"loss {losses[:1]} -> {losses[-1:]}, {r.get('tokens_per_s', 0):.0f} tokens/s, "
                  f"sample {r.get('sample', '')[:60]!r}, error {r.get('error')!r}", flush=True)
            check(r.get("error") is None, f"training page error: {r.get('error')}")
            check(r.get("backend") == "webgpu", f"trained on {r.get('backend')}, not the browser's WebGPU")
            check(len(losses) == a.steps, f"{len(losses)} losses for {a.steps} steps")
            if len(losses) >= 10:
                first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
                check(last < first - 0.1, f"loss did not fall: first 3 mean {first:.3f}, last 3 mean {last:.3f}")
            check(len(r.get("sample", "")) >= 20, "no sample streamed")
        # -- a checkpoint of native wgt train, fetched from the same origin
        if a.checkpoint:
            shutil.copyfile(a.checkpoint, os.path.join(root, "ckpt.safetensors"))
            driver.get(f"{base}/index.html?auto=0&ckpt=ckpt.safetensors")
            result = wait_for(driver, "return document.body.dataset.result", a.timeout, "checkpoint")
            r = json.loads(result) if result else {}
            print(f"checkpoint: {r.get('checkpoint')!r}, sample {r.get('ckpt_sample', '')[:60]!r}, "
                  f"error {r.get('error')!r}", flush=True)
            check(r.get("error") is None and "step" in (r.get("checkpoint") or ""), f"checkpoint not loaded: {r}")
            check(len(r.get("ckpt_sample", "")) >= 40, "no sample from the checkpoint")
    finally:
        driver.quit()
        server.shutdown()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
