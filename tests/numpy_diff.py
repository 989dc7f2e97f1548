#!/usr/bin/env python3
"""Differential test of wgtensor against NumPy (issue 8).

Drives the public C API of libwgtensor through ctypes with random cases drawn
from a seed -- op, dtypes, shapes, broadcasting, and a chain of views (permute,
slice with step, expand, unsqueeze, reshape) applied to the inputs first -- and
compares every result with NumPy computing the same thing in float64 (or int64)
and converting to the result dtype wgtensor documents (docs/ops.md; where that
differs from NumPy, the case follows wgtensor's documented rule and the
difference is listed in docs/ops.md "Differences from PyTorch and NumPy").

Tolerances (per element, err = |got - want|):
  f32 elementwise         err <= 2e-6 * |want| + 1e-6 * scale  (transcendental: 1e-5 * |want|)
  f16 results             err <= 1.5e-3 * |want| + 1e-3 * scale (one f16 rounding either side)
  sums, means, cumsum, matmul:  err <= tol * (sum of |terms|) + tiny  (tol 2e-6 f32, 2e-3 f16)
  integers and bools      exact
NaN positions must match exactly, and infinities must match exactly (sign
included). A case also fails if the result's shape or dtype differs from the
expected one, or if the call fails.

Usage:
  numpy_diff.py --lib build/lib/libwgtensor.so --backend cpu --seeds 1-8
  numpy_diff.py --lib ... --backend webgpu --seeds 1-1000 --cases 200   (many more, locally)
Exit status 0 only with zero mismatches and at least one case compared.
"""
import argparse
import ctypes
import math
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".deps", "python"))  # scripts/setup-deps.sh installs NumPy here
import numpy as np  # noqa: E402

F32, F16, I32, U8, BOOL = 0, 1, 2, 3, 4
NP_DTYPE = {F32: np.float32, F16: np.float16, I32: np.int32, U8: np.uint8, BOOL: np.bool_}
NAME = {F32: "f32", F16: "f16", I32: "i32", U8: "u8", BOOL: "bool"}
RANK = {BOOL: 0, U8: 1, I32: 2, F16: 3, F32: 4}  # promotion order bool < u8 < i32 < f16 < f32


def promote(a, b):
    return a if RANK[a] >= RANK[b] else b


def is_float(d):
    return d in (F32, F16)


def category(d):
    return 0 if d == BOOL else 2 if is_float(d) else 1


def promote_tensors(a, a_ndim, b, b_ndim):
    """PyTorch's rule, which wgtensor follows: a 0-d tensor beside a dimensioned
    one does not widen the result within its category (bool < int < float)."""
    if (a_ndim == 0) != (b_ndim == 0):
        dim, zero = (b, a) if a_ndim == 0 else (a, b)
        if category(zero) <= category(dim):
            return dim
    return promote(a, b)


class QlinearFusion(ctypes.Structure):
    """wgt_qlinear_fusion (wgtensor.h)."""
    _fields_ = [("norm_weight", ctypes.c_void_p), ("norm_eps", ctypes.c_double), ("bias", ctypes.c_void_p),
                ("swiglu", ctypes.c_bool)]


class Lib:
    """The few public calls the test needs, with their C signatures."""

    def __init__(self, path):
        L = ctypes.CDLL(path)
        P, I, I64, D, B = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_bool
        I64P, IP = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int)

        def sig(name, res, *args):
            f = getattr(L, name)
            f.restype, f.argtypes = res, list(args)
            setattr(self, name[4:], f)

        sig("wgt_context_create", P, P)
        sig("wgt_context_destroy", None, P)
        sig("wgt_context_status", I, P)
        sig("wgt_context_error_message", ctypes.c_char_p, P)
        sig("wgt_context_clear_error", I, P)
        sig("wgt_scope_push", I, P)
        sig("wgt_scope_pop", I, P)
        sig("wgt_tensor_from_host", P, P, I, I, I64P, P)
        sig("wgt_tensor_read", I, P, P, ctypes.c_size_t)
        sig("wgt_tensor_dtype", I, P)
        sig("wgt_tensor_ndim", I, P)
        sig("wgt_tensor_shape", I64P, P)
        sig("wgt_permute", P, P, IP)
        sig("wgt_slice", P, P, I, I64, I64, I64)
        sig("wgt_expand", P, P, I, I64P)
        sig("wgt_unsqueeze", P, P, I)
        sig("wgt_reshape", P, P, I, I64P)
        for name in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
                     "logical_and", "logical_or"):
            sig("wgt_" + name, P, P, P)
        sig("wgt_where", P, P, P, P)
        for name in UNARY:
            sig("wgt_" + name, P, P)
        sig("wgt_clamp", P, P, D, D)
        sig("wgt_cast", P, P, I)
        for name in ("sum", "mean", "max", "min", "prod"):
            sig("wgt_" + name, P, P, IP, I, B)
        sig("wgt_var", P, P, IP, I, I, B)
        sig("wgt_argmax", P, P, I, B)
        sig("wgt_argmin", P, P, I, B)
        sig("wgt_cumsum", P, P, I)
        sig("wgt_softmax", P, P, I)
        sig("wgt_log_softmax", P, P, I)
        sig("wgt_matmul", P, P, P)
        sig("wgt_fused", P, P, ctypes.c_char_p, ctypes.POINTER(P), I)
        sig("wgt_fused_params", P, P, ctypes.c_char_p, ctypes.POINTER(P), I, ctypes.POINTER(D), I)
        sig("wgt_binary_scalar", P, I, P, D)
        sig("wgt_clamp_min", P, P, D)
        sig("wgt_clamp_max", P, P, D)
        sig("wgt_leaky_relu", P, P, D)
        sig("wgt_elu", P, P, D)
        sig("wgt_index_select", P, P, I, P)
        sig("wgt_quantize_rows_into", I, P, P, P)
        sig("wgt_dequantize_rows", P, P, P, I)
        sig("wgt_attention_q8", P, P, P, P, P, P, B)
        sig("wgt_scaled_dot_product_attention", P, P, P, P, B, D, ctypes.c_uint64)
        sig("wgt_gather", P, P, I, P)
        sig("wgt_embedding", P, P, P)
        sig("wgt_one_hot", P, P, I64, I)
        sig("wgt_gelu_linear", P, P, P, P)
        sig("wgt_attention_linear_ex", P, P, P, P, B, P, P, I)
        sig("wgt_attention_qlinear_ex", P, P, P, P, B, P, P, I, P)
        sig("wgt_attention_q8_linear_ex", P, P, P, P, P, P, B, P, P, I)
        sig("wgt_attention_q8_qlinear_ex", P, P, P, P, P, P, B, P, P, I, P)
        sig("wgt_qlinear_ex", P, P, P, P, I, ctypes.POINTER(QlinearFusion))
        sig("wgt_set_matmul_precision", I, P, I)
        sig("wgt_tensor_set_requires_grad", I, P, B)
        sig("wgt_backward_ex", I, P, P, B)
        sig("wgt_tensor_grad", P, P)
        sig("wgt_scatter_add", P, P, I, P, P)
        sig("wgt_concat", P, ctypes.POINTER(P), I, I)
        sig("wgt_pad", P, P, I64P, D)
        sig("wgt_tril", P, P, I64)
        sig("wgt_triu", P, P, I64)
        sig("wgt_topk", I, P, I64, B, ctypes.POINTER(P), ctypes.POINTER(P))
        sig("wgt_arange", P, P, I, D, D, D)
        self.op = op_enum(os.path.join(ROOT, "include", "wgtensor.h"))


def op_enum(header):
    """WGT_OP_* values, read from the public header's enum (it grows)."""
    text = open(header).read()
    body = text[text.index("typedef enum wgt_op {"):]
    body = body[body.index("{") + 1:body.index("} wgt_op;")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = [n.strip() for n in body.split(",") if n.strip()]
    return {n[len("WGT_OP_"):].lower(): i for i, n in enumerate(names)}


UNARY = ["neg", "abs", "sign", "exp", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
         "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "softplus", "floor", "ceil", "round", "logical_not"]
TRANSCENDENTAL = {"exp", "log", "log1p", "sin", "cos", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "softplus",
                  "rsqrt", "pow", "softmax", "log_softmax", "fused"}

_erf = np.vectorize(math.erf, otypes=[np.float64])


def unary_ref(name, x):
    """float64 reference of the formulas in src/core/expr.h."""
    with np.errstate(all="ignore"):
        return {
            "neg": lambda: -x, "abs": lambda: np.abs(x), "sign": lambda: np.sign(x), "exp": lambda: np.exp(x),
            "log": lambda: np.log(x), "log1p": lambda: np.log1p(x), "sqrt": lambda: np.sqrt(x),
            "rsqrt": lambda: 1 / np.sqrt(x), "reciprocal": lambda: 1 / x, "sin": lambda: np.sin(x),
            "cos": lambda: np.cos(x), "tanh": lambda: np.tanh(x), "sigmoid": lambda: 1 / (1 + np.exp(-x)),
            "relu": lambda: np.where(np.isnan(x), x, np.maximum(x, 0)),
            "gelu": lambda: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
            "gelu_tanh": lambda: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
            "silu": lambda: x / (1 + np.exp(-x)),
            "softplus": lambda: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0),
            "floor": lambda: np.floor(x), "ceil": lambda: np.ceil(x), "round": lambda: np.round(x),
        }[name]()


# Functions whose value at +-inf is a limit the formula does not reach (inf * 0):
# their cases draw finite values and NaN only.
NO_INF = {"gelu", "gelu_tanh", "silu", "softplus"}


class Mismatch(Exception):
    pass


def to_dtype(values, dtype):
    """Store conversion of expr.h: float64/int64 values -> dtype's array."""
    v = np.asarray(values)
    if dtype == BOOL:
        return v != 0  # NaN != 0 is True
    if is_float(dtype):
        with np.errstate(all="ignore"):
            return v.astype(np.float64).astype(np.float32).astype(NP_DTYPE[dtype])
    if v.dtype.kind == "f":  # CAST F32 -> I32: toward zero, saturating, NaN -> 0
        with np.errstate(all="ignore"):
            f = v.astype(np.float32).astype(np.float64)
            i = np.where(np.isnan(f), 0, np.clip(np.trunc(f), -2147483648.0, 2147483647.0)).astype(np.int64)
    else:
        i = v.astype(np.int64)
    i32 = ((i + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)  # i32 arithmetic wraps
    return i32 if dtype == I32 else (i32.astype(np.int64) & 0xFF).astype(np.uint8)


def value_of(a):
    """The value type of expr.h: floats widen to float64 (f16 exactly), ints to int64."""
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a.astype(np.int64)


class Runner:
    def __init__(self, lib, ctx, rng, allow_f16=True):
        self.lib, self.ctx, self.rng = lib, ctx, rng
        self.allow_f16 = allow_f16

    # ---------------------------------------------------------------- data
    def data(self, dtype, shape, specials=True, no_inf=False, positive=False, small=False):
        r = self.rng
        n = int(np.prod(shape)) if shape else 1
        if dtype == BOOL:
            vals = [r.random() < 0.5 for _ in range(n)]
        elif dtype == U8:
            vals = [r.randrange(256) for _ in range(n)]
        elif dtype == I32:
            vals = [r.randrange(-100, 101) for _ in range(n)]
        else:
            vals = []
            for _ in range(n):
                u = r.random()
                if specials and u < 0.06:
                    choices = [math.nan, 0.0, -0.0] + ([] if no_inf else [math.inf, -math.inf])
                    vals.append(r.choice(choices))
                elif small:
                    vals.append(r.uniform(-2, 2))
                else:
                    vals.append(r.gauss(0, 3) if r.random() < 0.8 else r.uniform(-50, 50))
            if positive:
                vals = [abs(v) for v in vals]
        return np.array(vals, dtype=NP_DTYPE[dtype]).reshape(shape)

    def upload(self, arr, dtype):
        shape = (ctypes.c_int64 * max(1, arr.ndim))(*arr.shape)
        host = np.ascontiguousarray(arr.astype(NP_DTYPE[dtype]))
        if dtype == BOOL:
            host = host.astype(np.uint8)
        t = self.lib.tensor_from_host(self.ctx, dtype, arr.ndim, shape, host.ctypes.data)
        self.check_call(t, "wgt_tensor_from_host")
        return t

    def read(self, t, what):
        self.check_call(t, what)
        dtype = self.lib.tensor_dtype(t)
        ndim = self.lib.tensor_ndim(t)
        sp = self.lib.tensor_shape(t)
        shape = tuple(sp[i] for i in range(ndim))
        out = np.empty(shape, dtype=np.uint8 if dtype == BOOL else NP_DTYPE[dtype])
        s = self.lib.tensor_read(t, out.ctypes.data, out.nbytes)
        if s != 0:
            raise Mismatch(f"{what}: wgt_tensor_read failed: {self.lib.context_error_message(self.ctx).decode()}")
        return (out != 0) if dtype == BOOL else out, dtype

    def check_call(self, t, what):
        if not t or self.lib.context_status(self.ctx) != 0:
            msg = self.lib.context_error_message(self.ctx).decode()
            self.lib.context_clear_error(self.ctx)
            raise Mismatch(f"{what} failed: {msg}")

    # ---------------------------------------------------------- view chains
    def view_chain(self, arr, t, out_shape=None):
        """Applies 0-3 random views to (numpy array, tensor) alike; returns both."""
        r, lib = self.rng, self.lib
        steps = []
        for _ in range(r.randrange(4)):
            kind = r.choice(["permute", "slice", "unsqueeze", "reshape"])
            nd = arr.ndim
            if kind == "permute" and nd >= 2:
                perm = list(range(nd))
                r.shuffle(perm)
                t = lib.permute(t, (ctypes.c_int * nd)(*perm))
                arr = arr.transpose(perm)
            elif kind == "slice" and nd >= 1:
                axis = r.randrange(nd)
                n = arr.shape[axis]
                start = r.randrange(max(1, n))
                step = r.choice([1, 1, 2, 3])
                stop = r.randrange(start, n + 1)
                if stop == start:
                    stop = min(n, start + 1)
                t = lib.slice(t, axis, start, stop, step)
                arr = arr[(slice(None),) * axis + (slice(start, stop, step),)]
            elif kind == "unsqueeze" and nd < 5:
                axis = r.randrange(nd + 1)
                t = lib.unsqueeze(t, axis)
                arr = np.expand_dims(arr, axis)
            elif kind == "reshape" and nd >= 1:
                shape = [int(np.prod(arr.shape))] if r.random() < 0.5 else list(arr.shape[::-1])
                if int(np.prod(shape)) != arr.size:
                    continue
                t = lib.reshape(t, len(shape), (ctypes.c_int64 * len(shape))(*shape))
                arr = arr.reshape(shape)
            else:
                continue
            steps.append(kind)
            self.check_call(t, "view " + kind)
        return arr, t, steps

    def operand(self, dtype, shape, **kw):
        """A tensor of `shape`, either uploaded directly or reached through views
        of a bigger or differently ordered tensor (so kernels see strides)."""
        r = self.rng
        mode = r.random()
        if mode < 0.4 or not shape:
            a = self.data(dtype, shape, **kw)
            return a, self.upload(a, dtype), []
        if mode < 0.7:  # a transposed parent, permuted back
            nd = len(shape)
            perm = list(range(nd))
            r.shuffle(perm)
            inv = [perm.index(i) for i in range(nd)]
            parent = self.data(dtype, tuple(shape[p] for p in perm), **kw)
            t = self.lib.permute(self.upload(parent, dtype), (ctypes.c_int * nd)(*inv))
            self.check_call(t, "permute")
            return parent.transpose(inv), t, ["permute"]
        # a strided slice of a longer parent along one axis
        axis = r.randrange(len(shape))
        step = r.choice([2, 3])
        start = r.randrange(3)
        big = list(shape)
        big[axis] = start + step * shape[axis] + r.randrange(2)
        parent = self.data(dtype, tuple(big), **kw)
        t = self.lib.slice(self.upload(parent, dtype), axis, start, start + step * shape[axis], step)
        self.check_call(t, "slice")
        return parent[(slice(None),) * axis + (slice(start, start + step * shape[axis], step),)], t, ["slice"]

    def broadcast_operand(self, dtype, out_shape, **kw):
        """An operand that broadcasts to out_shape: fewer leading dims and some
        size-1 dims, sometimes made by wgt_expand of a size-1 dim."""
        r = self.rng
        nd = len(out_shape)
        keep = r.randrange(nd + 1) if r.random() < 0.3 else nd
        shape = [1 if r.random() < 0.25 else d for d in out_shape[nd - keep:]]
        a, t, steps = self.operand(dtype, tuple(shape), **kw)
        if r.random() < 0.3 and shape:
            full = list(out_shape[nd - keep:])
            t = self.lib.expand(t, len(full), (ctypes.c_int64 * len(full))(*full))
            self.check_call(t, "expand")
            a = np.broadcast_to(a, full)
            steps = steps + ["expand"]
        return a, t, steps

    def random_shape(self, max_nd=4, max_dim=6):
        r = self.rng
        return tuple(r.randrange(1, max_dim + 1) for _ in range(r.randrange(max_nd + 1)))

    def dtype(self, choices=(F32, F16, I32, U8, BOOL)):
        pool = [d for d in choices if d != F16 or self.allow_f16]
        return self.rng.choice(pool)

    # --------------------------------------------------------------- compare
    def compare(self, got, got_dtype, want, want_dtype, kind, scale=None, what=""):
        if got_dtype != want_dtype:
            raise Mismatch(f"{what}: dtype {NAME[got_dtype]}, expected {NAME[want_dtype]}")
        want = to_dtype(want, want_dtype)
        if got.shape != want.shape:
            raise Mismatch(f"{what}: shape {got.shape}, expected {want.shape}")
        if not is_float(want_dtype):
            bad = np.argwhere(got != want)
            if bad.size:
                i = tuple(bad[0])
                raise Mismatch(f"{what}: at {i} got {got[i]}, expected {want[i]} ({len(bad)} elements differ)")
            return
        with np.errstate(all="ignore"):
            self.compare_floats(got.astype(np.float64), want.astype(np.float64), want_dtype, kind, scale, what)

    def compare_floats(self, g, w, want_dtype, kind, scale, what):
        if np.any(np.isnan(g) != np.isnan(w)):
            i = tuple(np.argwhere(np.isnan(g) != np.isnan(w))[0])
            raise Mismatch(f"{what}: NaN position differs at {i}: got {g[i]}, expected {w[i]}")
        inf_g, inf_w = np.isinf(g), np.isinf(w)
        if np.any(inf_g != inf_w) or np.any(g[inf_w] != w[inf_w]):
            i = tuple(np.argwhere((inf_g != inf_w) | (inf_w & (g != w)))[0])
            raise Mismatch(f"{what}: inf position differs at {i}: got {g[i]}, expected {w[i]}")
        fin = ~np.isnan(w) & ~inf_w
        if want_dtype == F16:
            rel, absolute = 1.5e-3, 1e-3
        else:
            rel, absolute = (1e-5 if kind == "transcendental" else 2e-6), 1e-6
        if scale is None:
            bound = rel * np.abs(w) + absolute * 1e-3
        else:  # accumulated results: relative to the sum of |terms|
            s = np.asarray(scale, dtype=np.float64)
            s = np.broadcast_to(np.where(np.isfinite(s), s, 0), w.shape)
            rel_acc = 2e-3 if want_dtype == F16 else 4e-6
            bound = rel_acc * s + rel * np.abs(w) + 1e-30
        err = np.abs(g - w)
        bad = fin & (err > bound)
        if np.any(bad):
            i = tuple(np.argwhere(bad)[0])
            raise Mismatch(f"{what}: at {i} got {g[i]!r}, expected {w[i]!r} (error {err[i]:.3g}, bound {bound[i]:.3g})")

    # ------------------------------------------------------------------ cases
    def case_binary(self):
        r = self.rng
        op = r.choice(["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
                       "logical_and", "logical_or"])
        da, db = self.dtype(), self.dtype()
        if op == "sub" and (da == BOOL and db == BOOL):
            db = I32
        out_shape = self.random_shape()
        kw = {"small": op == "pow"}
        a, ta, sa = self.broadcast_operand(da, out_shape, **kw)
        b, tb, sb = self.broadcast_operand(db, out_shape, **kw)
        t = getattr(self.lib, op)(ta, tb)
        got, gd = self.read(t, "wgt_" + op)
        va, vb = value_of(a), value_of(b)
        common = promote_tensors(da, a.ndim, db, b.ndim)
        if op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"):
            if is_float(common):
                va, vb = va.astype(np.float64), vb.astype(np.float64)
            with np.errstate(all="ignore"):
                fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                      "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or}[op]
                want = fn(va, vb)
            want_dtype, kind = BOOL, "exact"
        else:
            want_dtype = common
            if op in ("div", "pow") and not is_float(common):
                want_dtype = F32
            if is_float(want_dtype):
                # operands as f32 values: an integer operand converts exactly (|v| <= 255)
                va, vb = va.astype(np.float64), vb.astype(np.float64)
            with np.errstate(all="ignore"):
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
                      "maximum": np.maximum, "minimum": np.minimum}[op]
                want = fn(va, vb)
                if op in ("div", "mul", "add", "sub") and is_float(want_dtype):
                    want = want.astype(np.float32)  # one f32 rounding, as the kernel does
            kind = "transcendental" if op == "pow" else "exact"
        return f"{op} {NAME[da]}{a.shape}{sa} {NAME[db]}{b.shape}{sb}", got, gd, want, want_dtype, kind, None

    def case_unary(self):
        r = self.rng
        op = r.choice(UNARY)
        d = self.dtype()
        shape = self.random_shape()
        a, ta, sa = self.operand(d, shape, no_inf=op in NO_INF, small=op in ("sin", "cos"))
        t = getattr(self.lib, op)(ta)
        got, gd = self.read(t, "wgt_" + op)
        if op == "logical_not":
            return f"{op} {NAME[d]}{shape}{sa}", got, gd, value_of(a) == 0, BOOL, "exact", None
        float_only = op not in ("neg", "abs", "sign", "relu", "floor", "ceil", "round")  # rounding keeps ints, as PyTorch
        want_dtype = d if (is_float(d) or not float_only) else F32
        v = value_of(a)
        if is_float(want_dtype):
            want = unary_ref(op, v.astype(np.float64))
        elif op in ("floor", "ceil", "round"):
            want = v
        else:
            with np.errstate(all="ignore"):
                want = {"neg": lambda: -v, "abs": lambda: np.abs(v), "sign": lambda: np.sign(v),
                        "relu": lambda: np.maximum(v, 0)}[op]()
        kind = "transcendental" if op in TRANSCENDENTAL else "exact"
        # 0.5 x (1 + tanh/erf(..)) cancels for negative x in f32: error relative to |x|
        scale = np.abs(v.astype(np.float64)) if op in ("gelu", "gelu_tanh") else None
        return f"{op} {NAME[d]}{shape}{sa}", got, gd, want, want_dtype, kind, scale

    def case_where(self):
        out_shape = self.random_shape()
        dc, da, db = self.dtype(), self.dtype(), self.dtype()
        c, tc, _ = self.broadcast_operand(dc, out_shape)
        a, ta, _ = self.broadcast_operand(da, out_shape)
        b, tb, _ = self.broadcast_operand(db, out_shape)
        got, gd = self.read(self.lib.where(tc, ta, tb), "wgt_where")
        want = np.where(value_of(c) != 0, value_of(a), value_of(b))
        common = promote_tensors(da, a.ndim, db, b.ndim)
        if is_float(common):
            want = want.astype(np.float64)
        return f"where {NAME[dc]} {NAME[da]} {NAME[db]} {out_shape}", got, gd, want, common, "exact", None

    def case_reduce(self):
        r = self.rng
        op = r.choice(["sum", "mean", "max", "min", "prod", "var", "argmax", "argmin"])
        d = self.dtype((F32, F16, I32, U8) if op not in ("var",) else (F32, F16, I32))
        shape = self.random_shape(max_nd=3, max_dim=7) or (5,)
        a, ta, sa = self.operand(d, shape, small=op == "prod")
        if op == "prod" and not is_float(d):
            a_small = True  # ints: products of up to 7 values of |v| <= 100 may wrap: compare in wrapped i32
        nd = len(shape)
        keep = r.random() < 0.5
        v = value_of(a)
        if op in ("argmax", "argmin"):
            axis = r.randrange(nd)
            got, gd = self.read(getattr(self.lib, op)(ta, axis, keep), "wgt_" + op)
            if is_float(d):
                vf = v.astype(np.float64)
                want = np.argmax(vf, axis=axis) if op == "argmax" else np.argmin(vf, axis=axis)
            else:
                want = np.argmax(v, axis=axis) if op == "argmax" else np.argmin(v, axis=axis)
            if keep:
                want = np.expand_dims(want, axis)
            return f"{op} {NAME[d]}{shape}{sa} axis {axis}", got, gd, want, I32, "exact", None
        axes = sorted(r.sample(range(nd), r.randrange(nd + 1)))
        if op == "var" and axes and int(np.prod([shape[x] for x in axes])) < 2:
            axes = list(range(nd))
        if op == "var" and int(np.prod([shape[x] for x in axes] if axes else shape)) < 2:
            return None
        arr = (ctypes.c_int * max(1, len(axes)))(*axes)
        if op == "var":
            corr = r.randrange(2)
            t = self.lib.var(ta, arr, len(axes), corr, keep)
        else:
            t = getattr(self.lib, op)(ta, arr, len(axes), keep)
        got, gd = self.read(t, "wgt_" + op)
        ax = tuple(axes) if axes else None
        with np.errstate(all="ignore"):
            vf = v.astype(np.float64)
            if op in ("sum", "prod"):
                want_dtype = d if is_float(d) else I32
                if is_float(d):
                    want = (np.sum if op == "sum" else np.prod)(vf, axis=ax, keepdims=keep)
                else:
                    want = (np.sum if op == "sum" else np.prod)(v, axis=ax, keepdims=keep)
            elif op == "mean":
                want_dtype = d if is_float(d) else F32
                want = np.mean(vf, axis=ax, keepdims=keep)
            elif op == "var":
                want_dtype = d if is_float(d) else F32
                want = np.var(vf, axis=ax, ddof=corr, keepdims=keep)
            else:
                want_dtype = d
                want = (np.max if op == "max" else np.min)(vf if is_float(d) else v, axis=ax, keepdims=keep)
            if op in ("sum", "mean") and is_float(d):
                n = int(np.prod([shape[x] for x in axes])) if axes else int(np.prod(shape))
                scale = np.sum(np.abs(vf), axis=ax, keepdims=keep) / (n if op == "mean" else 1)
            elif op == "var":
                dev = np.abs(vf - np.mean(vf, axis=ax, keepdims=True))
                scale = np.sum(dev * dev, axis=ax, keepdims=keep) * 4 / max(1, (np.size(vf) // max(1, np.size(want))) - corr)
            elif op == "prod" and is_float(d):
                scale = np.abs(want) * 8
            else:
                scale = None
        return f"{op} {NAME[d]}{shape}{sa} axes {axes} keepdim {keep}", got, gd, want, want_dtype, "exact", scale

    def case_cumsum(self):
        d = self.dtype((F32, F16, I32, U8))
        shape = self.random_shape(max_nd=3, max_dim=8) or (4,)
        a, ta, sa = self.operand(d, shape)
        axis = self.rng.randrange(len(shape))
        got, gd = self.read(self.lib.cumsum(ta, axis), "wgt_cumsum")
        v = value_of(a)
        if is_float(d):
            with np.errstate(all="ignore"):
                want = np.cumsum(v, axis=axis)
            scale = np.cumsum(np.where(np.isfinite(v), np.abs(v), 0), axis=axis)
            return f"cumsum {NAME[d]}{shape}{sa} axis {axis}", got, gd, want, d, "exact", scale
        return f"cumsum {NAME[d]}{shape}{sa} axis {axis}", got, gd, np.cumsum(v, axis=axis), I32, "exact", None

    def case_softmax(self):
        d = self.dtype((F32, F16))
        shape = self.random_shape(max_nd=3, max_dim=9) or (6,)
        a, ta, sa = self.operand(d, shape, specials=False)
        axis = self.rng.randrange(len(shape))
        log = self.rng.random() < 0.5
        got, gd = self.read((self.lib.log_softmax if log else self.lib.softmax)(ta, axis), "softmax")
        v = value_of(a)
        m = np.max(v, axis=axis, keepdims=True)
        lse = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
        want = v - lse if log else np.exp(v - lse)
        scale = (np.abs(v) + np.abs(lse)) if log else None
        name = "log_softmax" if log else "softmax"
        return f"{name} {NAME[d]}{shape}{sa} axis {axis}", got, gd, want, d, "transcendental", scale

    def case_matmul(self):
        r = self.rng
        d = self.dtype((F32, F16))
        M, K, N = r.randrange(1, 9), r.randrange(1, 17), r.randrange(1, 9)
        batch = self.random_shape(max_nd=2, max_dim=3)
        a_shape = batch + (M, K) if r.random() < 0.85 else (K,)
        b_batch = batch[r.randrange(len(batch) + 1):] if batch else ()
        b_shape = b_batch + (K, N) if r.random() < 0.85 else (K,)
        a, ta, sa = self.operand(d, a_shape, specials=False)
        b, tb, sb = self.operand(d, b_shape, specials=False)
        got, gd = self.read(self.lib.matmul(ta, tb), "wgt_matmul")
        va, vb = value_of(a), value_of(b)
        want = np.matmul(va, vb)
        scale = np.matmul(np.abs(va), np.abs(vb))
        return f"matmul {NAME[d]} {a_shape}{sa} x {b_shape}{sb}", got, gd, want, d, "exact", scale

    def case_cast(self):
        src, dst = self.dtype(), self.dtype()
        shape = self.random_shape()
        a, ta, sa = self.operand(src, shape)
        if is_float(src) and not is_float(dst):
            pass  # the documented rule (toward zero, saturating, NaN -> 0; u8 keeps the low 8 bits) is to_dtype's
        got, gd = self.read(self.lib.cast(ta, dst), "wgt_cast")
        return f"cast {NAME[src]}->{NAME[dst]} {shape}{sa}", got, gd, value_of(a), dst, "exact", None

    def case_view_chain(self):
        """A chain of views of one tensor, then a copy through a unary op."""
        d = self.dtype()
        shape = self.random_shape(max_nd=4, max_dim=5) or (3,)
        a = self.data(d, shape)
        t = self.upload(a, d)
        a, t, steps = self.view_chain(a, t)
        got, gd = self.read(self.lib.abs(t), "abs of a view")
        v = value_of(a)
        return f"view chain {steps} of {NAME[d]}{shape} -> abs", got, gd, np.abs(v), d, "exact", None

    def case_fused(self):
        r = self.rng
        exprs = [("a * b + c", lambda a, b, c: a * b + c), ("maximum(a, b) - c", lambda a, b, c: np.maximum(a, b) - c),
                 ("where(a > b, a - b, c * 2)", lambda a, b, c: np.where(a > b, a - b, c * np.float32(2))),
                 ("a / (abs(b) + 1) + c * 0", lambda a, b, c: a / (np.abs(b) + np.float32(1)) + c * np.float32(0)),
                 ("(a - a) + b", lambda a, b, c: (a - a) + b),
                 ("erf(a) * b + c", lambda a, b, c: (_erf(a.astype(np.float64)).astype(np.float32) * b + c))]
        text, fn = r.choice(exprs)
        out_shape = self.random_shape()
        ops = [self.broadcast_operand(F32, out_shape) for _ in range(3)]
        arr = (ctypes.c_void_p * 3)(*[o[1] for o in ops])
        got, gd = self.read(self.lib.fused(self.ctx, text.encode(), arr, 3), "wgt_fused")
        with np.errstate(all="ignore"):
            # in f32, op by op: each node result is rounded to f32 (expr.h: no fma, no reassociation)
            want = fn(*[o[0].astype(np.float32) for o in ops])
        want = np.broadcast_to(want, np.broadcast_shapes(*[o[0].shape for o in ops]))  # every input broadcasts
        return f"fused '{text}' {out_shape}", got, gd, want, F32, "transcendental", None

    def case_scalar(self):
        """wgt_binary_scalar: the scalar takes an integer tensor's dtype when
        integral, else the result is floating; f16 stays f16 (PyTorch's rules)."""
        r = self.rng
        op = r.choice(["add", "sub", "mul", "div", "maximum", "minimum", "eq", "lt", "ge"])
        d = self.dtype((F32, F16, I32, U8))
        value = r.choice([0.0, 2.0, -3.0, 0.5, -1.25, 7.0, math.inf, -math.inf, math.nan])
        if d == U8 and math.isfinite(value) and value == int(value):
            value = abs(value)  # an integer outside [0, 255] is an error for u8 (test_semantics)
        shape = self.random_shape()
        a, ta, sa = self.operand(d, shape)
        got, gd = self.read(self.lib.binary_scalar(self.lib.op[op], ta, value), "wgt_binary_scalar " + op)
        integral = math.isfinite(value) and value == int(value)
        v = value_of(a)
        if op in ("eq", "lt", "ge"):
            w = v.astype(np.float64)
            sv = float(np.float16(value)) if d == F16 else value  # f16 compares in f16 (PyTorch)
            with np.errstate(all="ignore"):
                want = {"eq": np.equal, "lt": np.less, "ge": np.greater_equal}[op](w, sv)
            return f"scalar {op} {NAME[d]}{shape}{sa} {value}", got, gd, want, BOOL, "exact", None
        if is_float(d):
            want_dtype = d
        elif integral and op != "div":
            want_dtype = d
        else:
            want_dtype = F32
        with np.errstate(all="ignore"):
            if is_float(want_dtype):
                w = v.astype(np.float64)
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                      "maximum": np.maximum, "minimum": np.minimum}[op]
                want = fn(w.astype(np.float32), np.float32(value)).astype(np.float64)
            else:
                iv = int(value)
                want = {"add": v + iv, "sub": v - iv, "mul": v * iv, "maximum": np.maximum(v, iv),
                        "minimum": np.minimum(v, iv)}[op]
        return f"scalar {op} {NAME[d]}{shape}{sa} {value}", got, gd, want, want_dtype, "exact", None

    def case_clamp(self):
        r = self.rng
        d = self.dtype((F32, F16, I32, U8))
        shape = self.random_shape()
        a, ta, sa = self.operand(d, shape)
        lo, hi = sorted([r.choice([-3.5, -1.0, 0.0, 2.0, 10.0]), r.choice([-2.0, 0.5, 4.0, 200.0])])
        kind = r.choice(["clamp", "clamp_min", "clamp_max"])
        t = (self.lib.clamp(ta, lo, hi) if kind == "clamp" else
             self.lib.clamp_min(ta, lo) if kind == "clamp_min" else self.lib.clamp_max(ta, hi))
        got, gd = self.read(t, "wgt_" + kind)
        v = value_of(a)
        if not is_float(d):  # integer bounds rounded inward, limited to the dtype's range
            top = 255 if d == U8 else 2 ** 31 - 1
            bottom = 0 if d == U8 else -2 ** 31
            lo, hi = min(max(math.ceil(lo), bottom), top), min(max(math.floor(hi), bottom), top)
        with np.errstate(all="ignore"):
            w = v.astype(np.float64) if is_float(d) else v
            if kind in ("clamp", "clamp_min"):
                w = np.where(np.isnan(w), w, np.maximum(w, lo)) if is_float(d) else np.maximum(w, lo)
            if kind in ("clamp", "clamp_max"):
                w = np.where(np.isnan(w), w, np.minimum(w, hi)) if is_float(d) else np.minimum(w, hi)
        return f"{kind} {NAME[d]}{shape}{sa} ({lo}, {hi})", got, gd, w, d, "exact", None

    def case_activation(self):
        d = self.dtype((F32, F16))
        shape = self.random_shape()
        a, ta, sa = self.operand(d, shape)
        p = self.rng.choice([0.0, 0.01, 0.5, 1.0])
        elu = self.rng.random() < 0.5
        got, gd = self.read((self.lib.elu if elu else self.lib.leaky_relu)(ta, p), "activation")
        v = value_of(a).astype(np.float64)
        with np.errstate(all="ignore"):
            neg = (np.exp(v) - 1) * p if elu else v * p
            want = np.where(v > 0, v, neg)
            # elu is alpha (exp(x) - 1) in f32 (expr.h), not expm1: near 0 the
            # error is absolute, about one ulp of 1 times alpha
            scale = np.where(v > 0, 0, p * np.exp(np.minimum(v, 0))) if elu else None
        name = "elu" if elu else "leaky_relu"
        return f"{name}({p}) {NAME[d]}{shape}{sa}", got, gd, want, d, "transcendental", scale

    def case_index_select(self):
        d = self.dtype()
        shape = self.random_shape(max_nd=3) or (4,)
        a, ta, sa = self.operand(d, shape)
        axis = self.rng.randrange(len(shape))
        D = shape[axis]
        idx = np.array([self.rng.randrange(-D, D) for _ in range(self.rng.randrange(1, 7))], dtype=np.int32)
        got, gd = self.read(self.lib.index_select(ta, axis, self.upload(idx, I32)), "wgt_index_select")
        want = np.take(value_of(a), idx, axis=axis)  # negative indices wrap once, as NumPy's take
        return f"index_select {NAME[d]}{shape}{sa} axis {axis} {idx.tolist()}", got, gd, want, d, "exact", None

    def case_gather(self):
        """gather (torch.gather / np.take_along_axis), embedding, one_hot and
        scatter_add (np.add.at) with in-range indices."""
        r = self.rng
        kind = r.choice(["gather", "embedding", "one_hot", "scatter_add"])
        if kind == "embedding":
            d = self.dtype()
            V, D = r.randrange(1, 9), r.randrange(1, 6)
            w, tw, sw = self.operand(d, (V, D))
            ids = np.array([r.randrange(V) for _ in range(r.randrange(1, 7))], dtype=np.int32)
            ids = ids.reshape((-1,) if r.random() < 0.5 else (1, -1))
            got, gd = self.read(self.lib.embedding(tw, self.upload(ids, I32)), "wgt_embedding")
            return f"embedding {NAME[d]}{(V, D)}{sw} ids {ids.tolist()}", got, gd, value_of(w)[ids], d, "exact", None
        if kind == "one_hot":
            C = r.randrange(1, 8)
            dt = self.dtype()
            ids = np.array([r.randrange(C) for _ in range(r.randrange(0, 7))], dtype=np.int32)
            got, gd = self.read(self.lib.one_hot(self.upload(ids, I32), C, dt), "wgt_one_hot")
            want = (ids[:, None] == np.arange(C)[None, :]).astype(np.int64)
            return f"one_hot {ids.tolist()} C {C} -> {NAME[dt]}", got, gd, want, dt, "exact", None
        shape = self.random_shape(max_nd=3, max_dim=5) or (4,)
        nd = len(shape)
        axis = r.randrange(nd)
        D = shape[axis]
        ishape = [r.randrange(1, s + 1) for s in shape]
        ishape[axis] = r.randrange(1, 7)
        idx = np.array([r.randrange(-D, D) for _ in range(int(np.prod(ishape)))], dtype=np.int32).reshape(ishape)
        wrapped = np.where(idx < 0, idx + D, idx)
        if kind == "gather":
            d = self.dtype()
            x, tx, sx = self.operand(d, shape)
            got, gd = self.read(self.lib.gather(tx, axis, self.upload(idx, I32)), "wgt_gather")
            sub = value_of(x)[tuple(slice(0, s) if a != axis else slice(None) for a, s in enumerate(ishape))]
            want = np.take_along_axis(sub, wrapped, axis=axis)
            return f"gather {NAME[d]}{shape}{sx} axis {axis} index {tuple(ishape)}", got, gd, want, d, "exact", None
        d = self.dtype((F32, I32))
        dst, tdst, sd = self.operand(d, shape, specials=False)
        src, tsrc, _ = self.operand(d, tuple(ishape), specials=False)
        got, gd = self.read(self.lib.scatter_add(tdst, axis, self.upload(idx, I32), tsrc), "wgt_scatter_add")
        want = value_of(dst).copy().astype(np.float64 if d == F32 else np.int64)
        for pos in np.ndindex(*ishape):
            target = list(pos)
            target[axis] = wrapped[pos]
            want[tuple(target)] += value_of(src)[pos]
        scale = np.abs(value_of(dst)).astype(np.float64) * 0 + np.sum(np.abs(value_of(src))) + np.abs(value_of(dst))
        return (f"scatter_add {NAME[d]}{shape}{sd} axis {axis} index {tuple(ishape)}", got, gd, want, d, "exact",
                scale if d == F32 else None)

    def case_concat(self):
        d = self.dtype()
        shape = list(self.random_shape(max_nd=3) or (3,))
        axis = self.rng.randrange(len(shape))
        parts, tensors = [], []
        for _ in range(self.rng.randrange(1, 4)):
            s = list(shape)
            s[axis] = self.rng.randrange(0, 4)
            a, t, _ = self.operand(d, tuple(s))
            parts.append(a)
            tensors.append(t)
        arr = (ctypes.c_void_p * len(tensors))(*tensors)
        got, gd = self.read(self.lib.concat(arr, len(tensors), axis), "wgt_concat")
        want = np.concatenate([value_of(p) for p in parts], axis=axis)
        return f"concat {len(parts)} x {NAME[d]} axis {axis}", got, gd, want, d, "exact", None

    def case_pad(self):
        d = self.dtype()
        shape = self.random_shape(max_nd=3) or (2,)
        a, ta, sa = self.operand(d, shape)
        pads = [self.rng.randrange(3) for _ in range(2 * len(shape))]
        value = self.rng.choice([0.0, 1.0, -2.0, 0.5])
        p = (ctypes.c_int64 * len(pads))(*pads)
        got, gd = self.read(self.lib.pad(ta, p, value), "wgt_pad")
        pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(len(shape))]  # np.pad's order
        base = value_of(a).astype(np.float64)
        want = np.pad(base, pairs, constant_values=value)
        return f"pad {NAME[d]}{shape}{sa} {pads} {value}", got, gd, want, d, "exact", None

    def case_tri(self):
        d = self.dtype()
        shape = self.random_shape(max_nd=3, max_dim=6)
        shape = shape if len(shape) >= 2 else (3, 4)
        a, ta, sa = self.operand(d, shape)
        k = self.rng.randrange(-3, 4)
        lower = self.rng.random() < 0.5
        got, gd = self.read((self.lib.tril if lower else self.lib.triu)(ta, k), "tril/triu")
        want = (np.tril if lower else np.triu)(value_of(a), k)
        return f"{'tril' if lower else 'triu'} {NAME[d]}{shape}{sa} k {k}", got, gd, want, d, "exact", None

    def case_topk(self):
        d = self.dtype((F32, F16, I32, U8))
        shape = self.random_shape(max_nd=2, max_dim=9) or (5,)
        a, ta, sa = self.operand(d, shape)
        n = shape[-1]
        k = self.rng.randrange(0, n + 1)
        largest = self.rng.random() < 0.5
        vals, inds = ctypes.c_void_p(), ctypes.c_void_p()
        s = self.lib.topk(ta, k, largest, ctypes.byref(vals), ctypes.byref(inds))
        if s != 0:
            self.check_call(None, "wgt_topk")
        got, gd = self.read(vals.value, "wgt_topk values")
        got_i, gd_i = self.read(inds.value, "wgt_topk indices")
        v = value_of(a)
        key = v.astype(np.float64)
        # order: NaN largest, then value, ties by lower index (a stable sort)
        rank = np.where(np.isnan(key), np.inf, key)
        nan_first = np.isnan(key)
        if largest:
            order = np.lexsort((np.arange(n) * np.ones_like(rank), -rank, ~nan_first), axis=-1)
        else:
            order = np.lexsort((np.arange(n) * np.ones_like(rank), rank, nan_first), axis=-1)
        order = order[..., :k]
        want_i = order
        want_v = np.take_along_axis(v, order, axis=-1)
        self.compare(got_i, gd_i, want_i, I32, "exact", None, f"topk indices {NAME[d]}{shape}{sa} k {k}")
        return f"topk values {NAME[d]}{shape}{sa} k {k} largest {largest}", got, gd, want_v, d, "exact", None

    def case_fused_params(self):
        out_shape = self.random_shape()
        a, ta, sa = self.broadcast_operand(F32, out_shape)
        p = [self.rng.choice([0.5, -2.0, 3.25, math.inf, math.nan, 0.0]) for _ in range(2)]
        arr = (ctypes.c_void_p * 1)(ta)
        vals = (ctypes.c_double * 2)(*p)
        got, gd = self.read(self.lib.fused_params(self.ctx, b"a * p0 + p1", arr, 1, vals, 2), "wgt_fused_params")
        with np.errstate(all="ignore"):
            want = a.astype(np.float32) * np.float32(p[0]) + np.float32(p[1])
        return f"fused_params a * {p[0]} + {p[1]} {a.shape}{sa}", got, gd, want, F32, "exact", None

    # ------------------------------------------------ 8-bit rows (KV cache)
    @staticmethod
    def q8_reference(x):
        """NumPy's 8-bit rows of x [.., D]: per group of 32, s = max|x| * f32(1/127) (f32),
        code = x / s rounded half to even (np.rint) in [-127, 127]; zeros: s 0,
        codes 0; a NaN or an infinity: s NaN, codes 0. Returns codes as i32 words
        (four int8 a word, little end first) [.., D/4] and scales [.., D/32]."""
        lead, D = x.shape[:-1], x.shape[-1]
        g = x.astype(np.float32).reshape(-1, 32)
        finite = np.all(np.isfinite(g), axis=1)
        with np.errstate(all="ignore"):
            amax = np.max(np.abs(np.where(np.isfinite(g), g, 0)), axis=1).astype(np.float32)
            s = np.where(finite, amax * (np.float32(1) / np.float32(127)), np.float32(np.nan)).astype(np.float32)
            q = np.rint(g / s[:, None])
        codes = np.where((finite & (amax > 0))[:, None], np.clip(q, -127, 127), 0).astype(np.int8)
        words = codes.reshape(-1).view(np.uint8).reshape(-1, 4).astype(np.uint32)
        words = words[:, 0] | words[:, 1] << 8 | words[:, 2] << 16 | words[:, 3] << 24
        return words.view(np.int32).reshape(lead + (D // 4,)), s.reshape(lead + (D // 32,))

    def case_quantize_rows(self):
        """wgt_quantize_rows_into against q8_reference (codes and scales bit for bit),
        sometimes into every other row of a longer destination; then
        wgt_dequantize_rows against code * s."""
        r = self.rng
        d = self.dtype((F32, F16))
        shape = self.random_shape(max_nd=3, max_dim=4) + (32 * r.randrange(1, 4),)
        x = self.data(d, shape, small=r.random() < 0.5)
        tx = self.upload(x, d)
        codes_w, scales_w = self.q8_reference(x)
        step = r.choice([1, 2]) if len(shape) > 1 else 1
        big_c = list(codes_w.shape)
        big_s = list(scales_w.shape)
        big_c[0] *= step
        big_s[0] *= step
        tc = self.upload(np.zeros(big_c, np.int32), I32)
        ts = self.upload(np.zeros(big_s, np.float32), F32)
        if step > 1:
            tc = self.lib.slice(tc, 0, 0, big_c[0], step)
            ts = self.lib.slice(ts, 0, 0, big_s[0], step)
        if self.lib.quantize_rows_into(tc, ts, tx) != 0:
            self.check_call(None, "wgt_quantize_rows_into")
        got_c, gcd = self.read(tc, "codes")
        got_s, gsd = self.read(ts, "scales")
        what = f"quantize_rows {NAME[d]}{shape} step {step}"
        self.compare(got_c, gcd, codes_w, I32, "exact", None, what + " codes")
        if gsd != F32:
            raise Mismatch(f"{what} scales: dtype {NAME[gsd]}, expected f32")
        # bit for bit (compare's float check allows f32 rounding): a product with
        # 1/127 rounds alike on every backend
        self.compare(got_s.astype(np.float32).view(np.int32), I32, scales_w.astype(np.float32).view(np.int32), I32,
                     "exact", None, what + " scale bits")
        back, bd = self.read(self.lib.dequantize_rows(tc, ts, d), "wgt_dequantize_rows")
        c8 = codes_w.view(np.int8).reshape(shape).astype(np.float32)
        want = c8 * np.repeat(scales_w, 32, axis=-1)
        return what + " dequantized", back, bd, want, d, "exact", None

    def case_attention_q8(self):
        """wgt_attention_q8 against softmax(q k^T / sqrt(D) [causal]) v in float64
        over NumPy's dequantized keys and values."""
        r = self.rng
        d = self.dtype((F32, F16))
        Hkv = r.randrange(1, 3)
        H = Hkv * r.randrange(1, 5)
        Tq, Tk, D = r.choice([1, 1, 2, 3, 4, 7]), r.randrange(1, 90), r.choice([32, 64])
        causal = r.random() < 0.7
        q = self.data(d, (1, H, Tq, D), specials=False, small=True)
        k = self.data(F32, (1, Hkv, Tk, D), specials=False, small=True)
        v = self.data(F32, (1, Hkv, Tk, D), specials=False)
        kc, ks = self.q8_reference(k)
        vc, vs = self.q8_reference(v)
        args = [self.upload(a, I32 if a.dtype == np.int32 else F32) for a in (kc, ks, vc, vs)]
        got, gd = self.read(self.lib.attention_q8(self.upload(q, d), *args, causal), "wgt_attention_q8")
        kd = (kc.view(np.int8).reshape(k.shape).astype(np.float64) * np.repeat(ks, 32, axis=-1))
        vd = (vc.view(np.int8).reshape(v.shape).astype(np.float64) * np.repeat(vs, 32, axis=-1))
        g = H // Hkv
        kd, vd = np.repeat(kd, g, axis=1), np.repeat(vd, g, axis=1)
        sc = np.matmul(value_of(q), kd.transpose(0, 1, 3, 2)) / math.sqrt(D)
        if causal:  # query i sees keys j <= i + Tk - Tq
            seen = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + Tk - Tq
            sc = np.where(seen, sc, -np.inf)
        with np.errstate(all="ignore"):
            m = np.max(sc, axis=-1, keepdims=True)
            p = np.exp(sc - np.where(np.isfinite(m), m, 0))
            want = np.matmul(p, vd) / np.sum(p, axis=-1, keepdims=True)
        want = np.where(np.isnan(want), 0.0, want)  # a row that sees no key: zeros
        scale = np.full(want.shape, 4.0 * np.max(np.abs(vd), initial=0.0))
        return (f"attention_q8 {NAME[d]} H {H} Hkv {Hkv} Tq {Tq} Tk {Tk} D {D} causal {causal}", got, gd, want, d,
                "transcendental", scale)

    def case_attention_long(self):
        """Decode attention over a long cache: 1-4 query rows against 2049-2700
        keys (WebGPU: past 32 chunks of 64 keys the chunks are merged a
        workgroup a row, attention_decode_combine_split.wgsl), float keys
        (wgt_scaled_dot_product_attention) or 8-bit ones (wgt_attention_q8),
        causal, against softmax(q k^T / sqrt(D)) v in float64 (over the 8-bit
        codes' values). The long arrays come from a NumPy generator seeded by
        the case's draws (per-element draws would take seconds a case)."""
        r = self.rng
        d = self.dtype((F32, F16))
        Hkv = r.randrange(1, 3)
        H = Hkv * r.randrange(1, 5)
        Tq, Tk, D = r.randrange(1, 5), r.randrange(2049, 2700), r.choice([32, 64])
        g = np.random.default_rng(r.randrange(2 ** 32))
        q = g.uniform(-2, 2, (1, H, Tq, D)).astype(NP_DTYPE[d])
        q8 = r.random() < 0.5
        kv_dtype = F32 if q8 else d
        k = g.uniform(-2, 2, (1, Hkv, Tk, D)).astype(NP_DTYPE[kv_dtype])
        v = g.normal(0, 3, (1, Hkv, Tk, D)).astype(NP_DTYPE[kv_dtype])
        if q8:
            kc, ks = self.q8_reference(k)
            vc, vs = self.q8_reference(v)
            args = [self.upload(a, I32 if a.dtype == np.int32 else F32) for a in (kc, ks, vc, vs)]
            got, gd = self.read(self.lib.attention_q8(self.upload(q, d), *args, True), "wgt_attention_q8")
            kd = kc.view(np.int8).reshape(k.shape).astype(np.float64) * np.repeat(ks, 32, axis=-1)
            vd = vc.view(np.int8).reshape(v.shape).astype(np.float64) * np.repeat(vs, 32, axis=-1)
        else:
            out = self.lib.scaled_dot_product_attention(self.upload(q, d), self.upload(k, d), self.upload(v, d), True,
                                                        0.0, 0)
            got, gd = self.read(out, "wgt_scaled_dot_product_attention")
            kd, vd = value_of(k), value_of(v)
        kd, vd = np.repeat(kd, H // Hkv, axis=1), np.repeat(vd, H // Hkv, axis=1)
        sc = np.matmul(value_of(q), kd.transpose(0, 1, 3, 2)) / math.sqrt(D)
        seen = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + Tk - Tq  # causal, bottom-right aligned
        sc = np.where(seen, sc, -np.inf)
        p = np.exp(sc - np.max(sc, axis=-1, keepdims=True))
        want = np.matmul(p, vd) / np.sum(p, axis=-1, keepdims=True)
        # the output's terms: the p-weighted mean of |v| (not attention_q8's
        # 4 max|v|, under which f16 draws missed a dropped chunk of keys)
        scale = 4.0 * np.matmul(p, np.abs(vd)) / np.sum(p, axis=-1, keepdims=True)
        return (f"attention_long {'q8' if q8 else NAME[d]} keys, q {NAME[d]} H {H} Hkv {Hkv} Tq {Tq} Tk {Tk} D {D}",
                got, gd, want, d, "transcendental", scale)

    def case_gelu_linear(self, grad):
        """wgt_gelu_linear(h, W, b) (grad False) or the gradient of sum(out * g)
        with respect to h (grad True): (g W) * gelu'(h), which WebGPU's GEMM makes
        with GELU's slope in a second pass over its tile (a few-operation erfc)."""
        r = self.rng
        rows, n_in, n_out = r.randrange(1, 40), r.randrange(1, 40), r.randrange(1, 40)
        lead = (rows,) if r.random() < 0.5 else (1, rows) if r.random() < 0.5 else (rows, 1)
        h = self.data(F32, lead + (n_in,), specials=False, small=True)
        w = self.data(F32, (n_out, n_in), specials=False, small=True)
        b = self.data(F32, (n_out,), specials=False, small=True) if r.random() < 0.5 else None
        th, tw = self.upload(h, F32), self.upload(w, F32)
        tb = self.upload(b, F32) if b is not None else None
        hv, wv = value_of(h), value_of(w)
        a = 0.5 * hv * (1 + _erf(hv / math.sqrt(2)))
        shape = f"h {lead + (n_in,)}, W {(n_out, n_in)}{', bias' if b is not None else ''}"
        if not grad:
            got, gd = self.read(self.lib.gelu_linear(th, tw, tb), "wgt_gelu_linear")
            want = a @ wv.T + (value_of(b) if b is not None else 0)
            scale = np.abs(a) @ np.abs(wv).T + (np.abs(value_of(b)) if b is not None else 0)
            return f"gelu_linear {shape}", got, gd, want, F32, "transcendental", scale
        g = self.data(F32, lead + (n_out,), specials=False, small=True)
        tg = self.upload(g, F32)
        self.lib.tensor_set_requires_grad(th, True)
        out = self.lib.gelu_linear(th, tw, tb)
        self.check_call(out, "wgt_gelu_linear")
        if self.lib.backward_ex(out, tg, False) != 0:
            self.check_call(None, "wgt_backward_ex")
        got, gd = self.read(self.lib.tensor_grad(th), "the gradient of h")
        gw = value_of(g) @ wv
        slope = 0.5 * (1 + _erf(hv / math.sqrt(2))) + hv * np.exp(-0.5 * hv * hv) / math.sqrt(2 * math.pi)
        want = gw * slope
        scale = (np.abs(value_of(g)) @ np.abs(wv)) * np.abs(slope) + np.abs(gw)
        return f"gelu_linear dh {shape}", got, gd, want, F32, "transcendental", scale

    def case_attention_linear(self):
        """wgt_attention_linear_ex (f16 weights) / wgt_attention_qlinear_ex (8-bit
        weights in NumPy's q8_reference layout, wgt_qlinear's) against, in float64:
        softmax(q k^T / sqrt(D), causal) v, rounded to q's dtype as the op's
        attention output is, its heads merged, times the weight's values, plus the
        bias. One query row mostly (WebGPU merges the attention's chunk partials in
        the projection's GEMV there), sometimes two (the composition). Half the
        cases read an 8-bit KV cache (wgt_attention_q8_(q)linear_ex over NumPy's
        q8_reference codes of k and v; the float64 attention over their values)."""
        r = self.rng
        d = self.dtype((F32, F16))
        Hkv = r.randrange(1, 3)
        H = Hkv * r.randrange(1, 5)
        Tq, Tk, D = r.choice([1, 1, 1, 2]), r.randrange(1, 300), r.choice([32, 64])
        N = r.randrange(1, 48)
        q = self.data(d, (1, H, Tq, D), specials=False, small=True)
        k = self.data(d, (1, Hkv, Tk, D), specials=False, small=True)
        v = self.data(d, (1, Hkv, Tk, D), specials=False)
        w = self.data(F32, (N, H * D), specials=False, small=True)
        b = self.data(F32, (N,), specials=False) if r.random() < 0.5 else None
        tq, tb = self.upload(q, d), self.upload(b, F32) if b is not None else None
        quantized, kv8 = r.random() < 0.5, r.random() < 0.5
        if kv8:  # the cache's codes and scales, and the values they stand for
            kc, ks = self.q8_reference(k.astype(np.float32))
            vc, vs = self.q8_reference(v.astype(np.float32))
            kvals = kc.view(np.int8).reshape(k.shape).astype(np.float64) * np.repeat(ks, 32, axis=-1)
            vvals = vc.view(np.int8).reshape(v.shape).astype(np.float64) * np.repeat(vs, 32, axis=-1)
            cache = [self.upload(a, I32 if a.dtype == np.int32 else F32) for a in (kc, ks, vc, vs)]
        else:
            kvals, vvals = value_of(k), value_of(v)
            cache = [self.upload(k, d), self.upload(v, d)]
        if quantized:
            wc, ws = self.q8_reference(w)
            wv = wc.view(np.int8).reshape(w.shape).astype(np.float64) * np.repeat(ws, 32, axis=-1)
            tail = (True, self.upload(wc, I32), self.upload(ws, F32), 8, tb)
            name = "wgt_attention_q8_qlinear_ex" if kv8 else "wgt_attention_qlinear_ex"
        else:
            wv = value_of(w.astype(np.float16))
            tail = (True, self.upload(w, F16), tb, F32)
            name = "wgt_attention_q8_linear_ex" if kv8 else "wgt_attention_linear_ex"
        out = getattr(self.lib, name[4:])(tq, *cache, *tail)
        got, gd = self.read(out, name)
        g = H // Hkv
        kd, vd = np.repeat(kvals, g, axis=1), np.repeat(vvals, g, axis=1)
        sc = np.matmul(value_of(q), kd.transpose(0, 1, 3, 2)) / math.sqrt(D)
        seen = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + Tk - Tq  # causal, bottom-right aligned
        sc = np.where(seen, sc, -np.inf)
        with np.errstate(all="ignore"):
            m = np.max(sc, axis=-1, keepdims=True)
            p = np.exp(sc - np.where(np.isfinite(m), m, 0))
            a = np.matmul(p, vd) / np.sum(p, axis=-1, keepdims=True)
        a = np.where(np.isnan(a), 0.0, a)
        if d == F16:
            a = a.astype(np.float16).astype(np.float64)
        a = a.transpose(0, 2, 1, 3).reshape(Tq, H * D)  # heads merged: [Tq, H D]
        want = a @ wv.T + (value_of(b) if b is not None else 0)
        terms = np.abs(a) @ np.abs(wv).T
        # the attention's own f32 error (a few ulps an element); with f16 q each
        # element may round to f16 the other way (2^-11 of it): relative to the
        # sum of |terms| at compare's 4e-6
        scale = terms * (4.0 if d == F32 else 1.0 + 2.0 ** -11 / 4e-6) + (np.abs(value_of(b)) if b is not None else 0)
        return (f"attention_linear q {NAME[d]} H {H} Hkv {Hkv} Tq {Tq} Tk {Tk} D {D} N {N} "
                f"{'q8' if quantized else 'f16'} weight{', bias' if b is not None else ''}{', 8-bit cache' if kv8 else ''}", got,
                gd, want, F32,
                "transcendental", scale)

    def case_qlinear_medium(self):
        """wgt_qlinear_ex at WGT_MATMUL_PRECISION_MEDIUM (x quantized like the
        weights, wgtensor.h), mostly one row (LLM decode: WebGPU's INT8_X GEMV),
        plain, with a bias or with SwiGLU, 8- or 4-bit weight codes drawn at
        random with random scales, against float64: x's codes and scales by
        q8_reference, the exact integer sum of code products per group, times
        s_x s_w, summed over groups (then the bias, then silu(g) u)."""
        r = self.rng
        M, K, bits = r.choice([1, 1, 1, 2, 3]), 32 * r.randrange(1, 9), r.choice([4, 8])
        fusion = r.choice(["plain", "bias", "swiglu"])
        N = 2 * r.randrange(1, 24) if fusion == "swiglu" else r.randrange(1, 48)
        x = self.data(F32, (M, K), specials=False)
        lo, hi = (-8, 7) if bits == 4 else (-127, 127)
        wcodes = np.array([r.randint(lo, hi) for _ in range(N * K)], np.int64).reshape(N, K)
        ws = np.array([r.uniform(0.001, 0.1) for _ in range(N * K // 32)], np.float32).reshape(N, K // 32)
        if bits == 8:
            b = (wcodes & 0xFF).astype(np.uint32).reshape(N, K // 4, 4)
            words = b[..., 0] | b[..., 1] << 8 | b[..., 2] << 16 | b[..., 3] << 24
        else:
            b = (wcodes + 8).astype(np.uint32).reshape(N, K // 8, 8)
            words = sum(b[..., j] << (4 * j) for j in range(8))
        bias = self.data(F32, (N,), specials=False) if fusion == "bias" else None
        xc, xs = self.q8_reference(x)
        xcodes = xc.view(np.int8).reshape(M, K).astype(np.int64)
        G = K // 32
        isum = np.einsum("mgj,ngj->mng", xcodes.reshape(M, G, 32), wcodes.reshape(N, G, 32))
        terms = isum.astype(np.float64) * (xs[:, None, :].astype(np.float64) * ws[None, :, :].astype(np.float64))
        want, scale = terms.sum(axis=-1), np.abs(terms).sum(axis=-1)
        if bias is not None:
            want, scale = want + value_of(bias), scale + np.abs(value_of(bias))
        if fusion == "swiglu":
            g, u = want[:, 0::2], want[:, 1::2]
            with np.errstate(over="ignore"):  # exp(-g) of a large negative g: inf, silu 0
                silu = g / (1 + np.exp(-g))
            want = silu * u
            # each sum's error (relative to its |terms|) carries through silu(g) u
            scale = scale[:, 0::2] * np.abs(u) * 1.2 + scale[:, 1::2] * np.abs(silu)
        f = QlinearFusion(None, 0.0, self.upload(bias, F32) if bias is not None else None, fusion == "swiglu")
        tw, ts = self.upload(words.view(np.int32), I32), self.upload(ws, F32)
        old = self.lib.set_matmul_precision(self.ctx, 1)
        out = self.lib.qlinear_ex(self.upload(x, F32), tw, ts, bits, ctypes.byref(f))
        self.lib.set_matmul_precision(self.ctx, old)
        got, gd = self.read(out, "wgt_qlinear_ex")
        desc = f"qlinear_medium x [{M}, {K}] {bits}-bit [{N}, {K}] {fusion}"
        return desc, got, gd, want, F32, "transcendental", scale

    CASES = [("binary", 30), ("unary", 25), ("where", 5), ("reduce", 15), ("cumsum", 4), ("softmax", 4),
             ("matmul", 5), ("cast", 6), ("view_chain", 4), ("fused", 4), ("scalar", 10), ("clamp", 4),
             ("activation", 3), ("index_select", 3), ("concat", 3), ("pad", 3), ("tri", 3), ("topk", 4),
             ("fused_params", 3), ("gather", 6), ("quantize_rows", 3), ("attention_q8", 3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="path of libwgtensor.so")
    ap.add_argument("--backend", choices=["cpu", "webgpu"], required=True)
    ap.add_argument("--seeds", default="1-4", help="seed range a-b or a list a,b,c")
    ap.add_argument("--cases", type=int, default=100, help="cases per seed")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    seeds = []
    for part in args.seeds.split(","):
        lo, _, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi or lo) + 1))

    os.environ["WGT_BACKEND"] = args.backend
    lib = Lib(args.lib)
    ctx = lib.context_create(None)
    if not ctx or lib.context_status(ctx) != 0:
        print(f"FAIL: cannot create a {args.backend} context: "
              f"{lib.context_error_message(ctx).decode() if ctx else 'NULL'}")
        return 1
    names = [n for n, _ in Runner.CASES]
    weights = [w for _, w in Runner.CASES]
    compared, mismatches, per_kind = 0, 0, {}

    def one(kind, where, make_case):
        """Runs one case (None: skipped) in a scope of its own and counts it."""
        nonlocal compared, mismatches
        lib.scope_push(ctx)
        try:
            case = make_case()
            if case is None:
                return
            desc, got, gd, want, want_dtype, k, scale = case
            runner.compare(got, gd, want, want_dtype, k, scale, desc)
            compared += 1
            per_kind[kind] = per_kind.get(kind, 0) + 1
            if args.verbose:
                print(f"ok   {where}: {desc}")
        except Mismatch as m:
            compared += 1
            mismatches += 1
            print(f"MISMATCH {where}: {m}")
        finally:
            lib.scope_pop(ctx)
            if lib.context_status(ctx) != 0:
                lib.context_clear_error(ctx)

    for seed in seeds:
        rng = random.Random(seed)
        runner = Runner(lib, ctx, rng)
        for i in range(args.cases):
            kind = rng.choices(names, weights)[0]
            one(kind, f"seed {seed} case {i}", getattr(runner, "case_" + kind))
        # wgt_gelu_linear and its h gradient, from a generator of their own (the
        # draws above stay what they were)
        runner = Runner(lib, ctx, random.Random(1000003 + seed))
        for i in range(max(1, args.cases // 10)):
            for grad in (False, True):
                kind = "gelu_linear_grad" if grad else "gelu_linear"
                one(kind, f"seed {seed} {kind} {i}", lambda: runner.case_gelu_linear(grad))
        # wgt_attention_(q)linear_ex, from a generator of their own too
        runner = Runner(lib, ctx, random.Random(2000003 + seed))
        for i in range(max(1, args.cases // 10)):
            one("attention_linear", f"seed {seed} attention_linear {i}", runner.case_attention_linear)
        # decode attention over a long cache, one a seed, from a generator of its own
        runner = Runner(lib, ctx, random.Random(3000003 + seed))
        one("attention_long", f"seed {seed} attention_long", runner.case_attention_long)
        # wgt_qlinear_ex at MEDIUM precision (int8 x), from a generator of its own
        runner = Runner(lib, ctx, random.Random(4000003 + seed))
        for i in range(max(1, args.cases // 10)):
            one("qlinear_medium", f"seed {seed} qlinear_medium {i}", runner.case_qlinear_medium)
    lib.context_destroy(ctx)
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(per_kind.items()))
    print(f"numpy_diff {args.backend}: seeds {args.seeds}, {compared} cases compared ({kinds}), "
          f"{mismatches} mismatches")
    passed = compared - mismatches
    print(f"{passed} passed, {mismatches} failed")
    return 0 if mismatches == 0 and compared > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
