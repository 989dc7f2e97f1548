// The page's logic (index.html). Every call into the library is a promise:
// the WebAssembly build waits on the GPU through ASYNCIFY, so the page stays
// responsive and redraws between training steps.
// ?auto=N trains N steps on WebGPU, samples, and writes a JSON result into
// body[data-result] (tests/web/web_test.py reads it); &flags=... gives wgt
// train's model/optimizer flags over the tiny preset (e.g. "--n-layer 1
// --n-embd 32"); ?ckpt=URL loads a checkpoint and samples from it first;
// &profile=N profiles N more steps; &bench=1 times dispatches and a matmul;
// &backend=cpu uses the CPU backend.
'use strict';
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let M = null;            // the WebAssembly module
let opened = null;       // 'webgpu' | 'cpu'
let stopRequested = false;
let busy = false;
const stderrTail = [];   // the library's last stderr lines: the reason behind some failures

// What the WebGPU layer asked of the browser so far (src/webgpu_web): calls
// that cost a GPU-process round trip or a compile, and time spent waiting.
const gpuStats = () => (globalThis.WGTW ? { ...globalThis.WGTW.stats } : null);
const statsDelta = (a, b) => {
  if (!a || !b) return null;
  const d = {};
  for (const k of Object.keys(b)) d[k] = Math.round((b[k] - a[k]) * 10) / 10;
  return d;
};

const call = (name, ret, types, args) => M.ccall(name, ret, types, args, { async: true });
const message = () => M.ccall('web_message', 'string', [], []);

function notice(kind, text) {
  const n = $('notice');
  n.className = text ? kind : '';
  n.textContent = text || '';
}

function drawChart(losses, total) {
  const c = $('chart'), g = c.getContext('2d');
  const W = c.width, H = c.height, L = 50, B = 25;
  g.clearRect(0, 0, W, H);
  g.strokeStyle = '#888'; g.beginPath(); g.moveTo(L, 5); g.lineTo(L, H - B); g.lineTo(W - 5, H - B); g.stroke();
  if (!losses.length) return;
  const hi = Math.max(...losses), lo = Math.min(...losses, hi - 1e-3);
  const x = (i) => L + (W - L - 10) * i / Math.max(total - 1, 1);
  const y = (v) => 5 + (H - B - 10) * (hi - v) / (hi - lo);
  g.fillStyle = '#333'; g.font = '11px monospace';
  g.fillText(hi.toFixed(2), 2, 12); g.fillText(lo.toFixed(2), 2, H - B);
  g.fillText('step ' + losses.length + ' / ' + total, W - 120, H - 8);
  g.strokeStyle = '#1f77b4'; g.lineWidth = 1.5; g.beginPath();
  losses.forEach((v, i) => (i ? g.lineTo(x(i), y(v)) : g.moveTo(x(i), y(v))));
  g.stroke();
}

async function open(backend) {
  globalThis.WGT_POWER_PREFERENCE = $('power').value || undefined;
  if (backend === 'webgpu' && !navigator.gpu) {
    notice('warn', 'This browser has no WebGPU (navigator.gpu is missing). Chromium on Linux needs ' +
           '--enable-unsafe-webgpu; Firefox needs dom.webgpu.enabled. Using the CPU backend instead.');
    backend = 'cpu';
  }
  let rc = await call('web_open', 'number', ['number'], [backend === 'cpu' ? 1 : 0]);
  if (rc !== 0 && backend === 'webgpu') {
    notice('warn', 'WebGPU adapter refused: ' + message() + ' — using the CPU backend instead.');
    backend = 'cpu';
    rc = await call('web_open', 'number', ['number'], [1]);
  }
  if (rc !== 0) { notice('error', 'cannot open a context: ' + message()); opened = null; return null; }
  opened = backend;
  $('backend').value = backend;
  $('adapter').textContent = message();
  return backend;
}

async function ensureOpen() {
  if (!opened || opened !== $('backend').value) await open($('backend').value);
  return opened;
}

async function train(steps, flags) {
  if (!(await ensureOpen())) throw new Error(message());
  const text = await fetch('tinyshakespeare.txt');
  if (!text.ok) throw new Error('cannot fetch tinyshakespeare.txt: HTTP ' + text.status);
  M.FS.writeFile('/tinyshakespeare.txt', new Uint8Array(await text.arrayBuffer()));
  stderrTail.length = 0;
  if ((await call('web_train_begin', 'number', ['string', 'number', 'string'],
                  ['/tinyshakespeare.txt', steps, flags || ''])) !== 0)
    throw new Error(message() + (stderrTail.length ? ': ' + stderrTail[stderrTail.length - 1] : ''));
  $('model').textContent = message();   // the model and run that web_train_begin made
  $('progress').textContent = '';
  const tokens = M.ccall('web_tokens_per_step', 'number', [], []);
  const losses = [], stepMs = [];
  const t0 = performance.now();
  const s0 = gpuStats();
  let s1 = null;
  stopRequested = false;
  for (let i = 0; i < steps && !stopRequested; i++) {
    const ts = performance.now();
    const loss = await call('web_train_step', 'number', [], []);
    if (!Number.isFinite(loss)) throw new Error(message());
    stepMs.push(Math.round(performance.now() - ts));
    if (i === 0) s1 = gpuStats();
    losses.push(loss);
    const s = (performance.now() - t0) / 1000;
    const tps = tokens * losses.length / s;
    $('progress').textContent = `step ${losses.length}/${steps}  loss ${loss.toFixed(4)}  ${tps.toFixed(0)} tokens/s  ${s.toFixed(1)} s`;
    drawChart(losses, steps);
  }
  const seconds = (performance.now() - t0) / 1000;
  // The first step compiles every pipeline and creates the buffers; the
  // others show the steady state.
  return { losses, seconds, tokens_per_s: tokens * losses.length / seconds, step_ms: stepMs,
           gpu_first_step: statsDelta(s0, s1), gpu_other_steps: statsDelta(s1, gpuStats()) };
}

async function sample(prompt, chars, temperature, seed) {
  const out = $('out');
  out.textContent = prompt;
  if ((await call('web_sample_begin', 'number', ['string', 'number', 'number'], [prompt, temperature, seed])) !== 0)
    throw new Error(message());
  let text = '';
  const bytes = [];
  const decoder = new TextDecoder();
  for (let i = 0; i < chars; i++) {
    const b = await call('web_sample_next', 'number', [], []);
    if (b < 0) throw new Error(message());
    bytes.push(b);
    text = decoder.decode(new Uint8Array(bytes));
    out.textContent = prompt + text;   // streamed: one character per step
    out.scrollTop = out.scrollHeight;
  }
  return text;
}

async function loadCheckpoint(url) {
  if (!(await ensureOpen())) throw new Error(message());
  const r = await fetch(url);
  if (!r.ok) throw new Error(`cannot fetch ${url}: HTTP ${r.status} (copy a checkpoint of wgt train next to the page)`);
  M.FS.writeFile('/ckpt.safetensors', new Uint8Array(await r.arrayBuffer()));
  if ((await call('web_load_checkpoint', 'number', ['string'], ['/ckpt.safetensors'])) !== 0)
    throw new Error(message());
  return message();
}

async function bench() {
  if (!(await ensureOpen())) throw new Error(message());
  const us = await call('web_bench_dispatch', 'number', ['number'], [200]);
  if (!Number.isFinite(us)) throw new Error(message());
  const gflops = await call('web_bench_matmul', 'number', ['number', 'number'], [256, 10]);
  if (!Number.isFinite(gflops)) throw new Error(message());
  return { dispatch_us: us, matmul256_gflops: gflops };
}

function guard(button, fn) {
  $(button).onclick = async () => {
    if (busy) return;
    busy = true;
    notice('', '');
    try { await fn(); } catch (e) { notice('error', String(e.message || e)); }
    busy = false;
  };
}

async function auto() {
  const result = { backend: null, losses: [], error: null };
  try {
    const backend = await open(params.get('backend') || 'webgpu');
    result.backend = backend;
    result.adapter = $('adapter').textContent;
    if (!backend) throw new Error(message());
    const steps = Number(params.get('auto'));
    if (params.get('ckpt')) {
      result.checkpoint = await loadCheckpoint(params.get('ckpt'));
      result.ckpt_sample = await sample('ROMEO:', 80, 0.8, 1);
    }
    if (steps > 0) {
      $('steps').value = steps;
      if (params.get('flags') !== null) $('flags').value = params.get('flags');
      Object.assign(result, await train(steps, $('flags').value));
      result.model = $('model').textContent;
      $('sample').disabled = false;
      result.sample = await sample('\n', 80, 0.8, 1);
      // &profile=N: N more steps under the library's profiler (per-op GPU time)
      if (Number(params.get('profile')) > 0) {
        result.profile = await call('web_profile_steps', 'string', ['number'], [Number(params.get('profile'))]);
        if (result.profile === null || result.profile === '') result.profile = 'profiler: ' + message();
      }
    }
    if (params.get('bench')) result.bench = await bench();
  } catch (e) {
    result.error = String(e.message || e);
    notice('error', result.error);
  }
  document.body.dataset.result = JSON.stringify(result);
}

WgtModule({
  print: (s) => console.log(s),
  printErr: (s) => { console.warn(s); stderrTail.push(s); if (stderrTail.length > 20) stderrTail.shift(); },
}).then((mod) => {
  M = mod;
  if (!navigator.gpu)
    notice('warn', 'This browser has no WebGPU (navigator.gpu is missing): the CPU backend will be used. ' +
           'Chromium on Linux needs --enable-unsafe-webgpu; Firefox needs dom.webgpu.enabled.');
  guard('open', () => open($('backend').value));
  guard('train', async () => {
    $('stop').disabled = false;
    try {
      const r = await train(Number($('steps').value), $('flags').value);
      $('sample').disabled = false;
      $('progress').textContent += `  done: ${r.tokens_per_s.toFixed(0)} tokens/s`;
      await sample($('prompt').value, Number($('chars').value), Number($('temp').value), 1);
    } finally { $('stop').disabled = true; }
  });
  $('stop').onclick = () => { stopRequested = true; };
  guard('load', async () => {
    $('ckpt-status').textContent = await loadCheckpoint($('ckpt').value);
    $('sample').disabled = false;
    await sample($('prompt').value, Number($('chars').value), Number($('temp').value), 1);
  });
  guard('sample', () => sample($('prompt').value, Number($('chars').value), Number($('temp').value), Date.now() % 100000));
  guard('bench', async () => {
    const r = await bench();
    $('bench-out').textContent = `per dispatch ${r.dispatch_us.toFixed(1)} µs, matmul 256³ ${r.matmul256_gflops.toFixed(2)} GFLOP/s (${opened})`;
  });
  if (params.has('auto')) auto();
}).catch((e) => notice('error', 'cannot load wgtensor.wasm: ' + e));
