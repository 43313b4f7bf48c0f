#!/usr/bin/env python3
"""aotgrad: the OpInfo conformance sweep (issue 20) -- PyTorch's own op database through aotgrad.

For every OpInfo of `torch.testing._internal.common_methods_invocations.op_db` (the venv's PyTorch
2.11, which matches the build's libtorch; run with .venv/bin/python) that supports float32 on the
CPU, up to --samples
(default 3) of its float32 samples, chosen by a fixed seed per op, become cases:

  (a) `a<k>`: the op as a function of the sample's tensors, computing the loss
      sum_i (out_i * w_i).sum() over its floating outputs (after the OpInfo's own
      output_process_fn_grad; a complex output enters as view_as_real), w_i fixed random graph
      inputs `w<i>`. Traced with make_fx, exported in the text form (tools/export.py's graph_text)
      with its inputs as safetensors, trained by `aotgrad run --train --grad=<the inputs that
      require grad>`, and the loss and every input grad compared with eager autograd. A sample with
      no floating output (argmax, eq, ...) is a forward-only case: the graph returns the op's
      tensor outputs, `aotgrad run` runs it and they are compared with eager.
  (b) `b<k>`: the OpInfo's inplace_variant (when it has one) on a sample that does not broadcast
      its input, traced and run by `aotgrad run`; the written-back input (and the returned
      value) compared with eager.

An op passes (a) when all its (a) cases pass, (b) likewise, and passes both when it passes (a) and,
if it has an in-place variant, (b). The same cases go through PyTorch's own AOTAutograd
(torch._functorch.aot_autograd's aot_function, no-op compilers; min-cut and default partition)
with the same comparison: the anchor (its results stay under the keys "functorch" and
"functorch_default").

Comparison rule (fp32; aotgrad, PyTorch and eager all compute in float32): shapes and dtypes
equal; integral and bool values equal; floating values |got - want| <= atol + rtol*|want| with
rtol 1e-4 and atol 1e-5 * max(1, max|want|) (the tensor's own scale, for values that cancel),
NaN equal to NaN and infinities equal to themselves. A grad that differs from eager's still passes
when float64 central differences of the loss along a random direction agree with it and not with
eager's (eager autograd can be wrong: as_strided_scatter's grad was in 1.13); the report notes it.
Random ops (dropout, bernoulli, randn_like, ...: a case whose traced graph gives another result
with another seed) are compared with their traced graph run eagerly, since OpInfo's random ops
seed the generator themselves (with 42, which the graph does not record) and an op's eager kernel
may draw in another order than its ATen decomposition; eager, PyTorch's AOTAutograd and
`aotgrad run --seed=0` all seed the CPU generator with 0 right before the run. Ops with
uninitialized outputs (empty_like, new_empty, ...) compare shapes and dtypes only; a sample whose
eager results differ between two runs is skipped. PyTorch's AOTAutograd compiles on a first call
with copies of the inputs and is measured on a second call, on inputs it has not compiled with. A
sample make_fx cannot trace because of data-dependent control flow on a tensor argument (narrow's
start) is traced again with the tensors that do not require grad as constants, lifted into graph
inputs c<k>.

Failures are classified by cause (export failed in make_fx or in the text form, unknown op <name>,
no derivative <name>, meta mismatch, run error, wrong value, wrong grad, wrong write-back, timeout,
crash (signal)...). Exported cases are cached in --cache-dir keyed by torch version and the
harness version (a hash of the code the cases depend on): a rerun only reruns aotgrad. Export
runs in worker processes (a hang is killed after --export-timeout, a crash is recorded, the worker
restarts after the op); aotgrad runs at most -j at a time, each killed after --timeout. The report
itself (counts, tables, BENCHMARKS.md, the CI sample's expectations) is tools/opinfo_report.py.

usage:
  opinfo_sweep.py run --aotgrad=BIN --out=DIR [--cache-dir=DIR] [--ops=K,...|--ops-file=FILE]
                      [-j N] [--timeout=S] [--samples=N] [--no-functorch] [--expected=FILE]
      writes DIR/report.json and DIR/report.md; with --expected, exits 1 when an op listed as
      passing fails (a regression) and prints the ops listed as failing that now pass.
  opinfo_sweep.py check REPORT.json EXPECTED            the --expected check of a finished run
  opinfo_sweep.py list [--ops=...]                       the op keys of the sweep
  opinfo_sweep.py expected REPORT.json [--ops-file=F]    an expected-results file from a report
  opinfo_sweep.py benchmarks REPORT.json BENCHMARKS.md [--command=TEXT]
      writes the report's markdown into BENCHMARKS.md between its opinfo_sweep markers
"""

import argparse
import hashlib
import itertools
import json
import math
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

import export  # noqa: E402  tools/export.py: the text form and safetensors writer
from opinfo_report import (ANCHORS, build_report, check_expected, expected_text,  # noqa: E402
                           markdown, put_into_benchmarks, summary_text)

RTOL = 1e-4
ATOL = 1e-5
SCAN = 40  # samples looked at per op, from which the seeded selection picks
UNINITIALIZED_OPS = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided"}
EAGER_GRAD_WRONG = ("eager's %s disagrees with float64 finite differences, which agree with this "
                    "grad (%s)")


def harness_version():
    """A hash of what the cached cases depend on: this file's code from its cases section up to
    the export worker (samples, export, comparison, functorch) and tools/export.py."""
    with open(os.path.abspath(__file__), "rb") as f:
        text = f.read()
    text = text[text.index(b"\n# --- cases "):text.index(b"\n# --- the export worker ")]
    with open(export.__file__, "rb") as f:
        text += f.read()
    return hashlib.sha256(text).hexdigest()[:12]


# --- the op database ------------------------------------------------------------------------------


_OP_DB = None


def op_database():
    """{key: OpInfo} for every OpInfo of op_db with float32 on the CPU; key is the OpInfo's name
    and, for a variant, '.' + its variant_test_name (nn.functional.pad.reflect)."""
    global _OP_DB
    if _OP_DB is None:
        argv = sys.argv  # common_utils parses sys.argv (--seed, --repeat, ...) when imported
        sys.argv = argv[:1]
        try:
            from torch.testing._internal.common_methods_invocations import op_db
        finally:
            sys.argv = argv
        db = {}
        for op in op_db:
            if torch.float32 not in op.supported_dtypes("cpu"):
                continue
            key = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
            db[key] = op
        _OP_DB = db
    return _OP_DB


def family(key):
    """A coarse family for the report: the namespace (nn.functional, linalg, special, fft,
    masked, sparse, ...) or 'torch' for the top level."""
    parts = key.split(".")
    if parts[0] == "nn" and len(parts) > 2:
        return "nn.functional"
    if parts[0] in ("linalg", "special", "fft", "masked", "sparse", "signal", "_refs"):
        return parts[0]
    return "torch"


def seed_of(text):
    return zlib.crc32(text.encode("utf-8")) & 0x7FFFFFFF


# --- cases ----------------------------------------------------------------------------------------


class Skip(Exception):
    """A sample that cannot be a case (eager rejects it, it has no tensor output, ...)."""


def _is_float(t):
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


def _flatten_sample(sample):
    """The sample's tensors (each object once, in order) and a function rebuilding
    (input, args, kwargs) from replacements for them."""
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    tensors, slot = [], []
    index = {}
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            if id(leaf) not in index:
                index[id(leaf)] = len(tensors)
                tensors.append(leaf)
            slot.append(index[id(leaf)])
        else:
            slot.append(None)

    def rebuild(replacements):
        new = [replacements[s] if s is not None else leaf for leaf, s in zip(leaves, slot)]
        return pytree.tree_unflatten(new, spec)

    return tensors, rebuild


def _storable(t):
    return t.dtype in export._DTYPE_SAFETENSORS


class Case:
    """One case: a function of its tensor inputs (names, originals, requires_grad flags), what it
    computes (loss | outputs | inplace) and the eager result."""

    def __init__(self, op_key, cid, kind, fn, names, originals, requires_grad):
        self.op_key, self.id, self.kind = op_key, cid, kind
        self.fn, self.names = fn, names
        self.originals, self.requires_grad = originals, requires_grad
        self.expected = None  # {name: tensor}: out_<k>, grad_<input>, <mutated input>
        self.fd = None  # {input: (direction, float64 finite difference)} of a loss case

    def fresh(self, with_grad=True):
        return [t.detach().clone().requires_grad_(bool(rg and with_grad))
                for t, rg in zip(self.originals, self.requires_grad)]

    @property
    def grad_names(self):
        return [n for n, rg in zip(self.names, self.requires_grad) if rg]


def _select(op_key, kind, generate, build, n):
    """Up to n cases from the first SCAN samples of `generate()`, tried in a seeded order, skipping
    those `build` rejects. Returns (cases, skip reasons)."""
    seed = seed_of(op_key + "/" + kind)
    torch.manual_seed(seed)
    samples = list(itertools.islice(generate(), SCAN))
    order = list(range(len(samples)))
    random.Random(seed).shuffle(order)
    cases, skipped = [], []
    for i in order:
        if len(cases) == n:
            break
        torch.manual_seed(seed + 1 + i)
        try:
            cases.append(build(samples[i], "%s%d" % (kind, len(cases))))
        except Skip as e:
            skipped.append(str(e))
    return cases, skipped


def _eager_outputs(op, sample, tensors, rebuild):
    inp, args, kwargs = rebuild(tensors)
    return op(inp, *args, **kwargs)


def _run_seeded(fn, *args, seed=0):
    torch.manual_seed(seed)
    return fn(*args)


def _same(x, y):
    """Whether two eager results (tensors, or {name: tensor}) are the same: a random op's change
    with the seed."""
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    x, y = x.detach(), y.detach()
    if x.is_complex():
        x, y = torch.view_as_real(x.resolve_conj()), torch.view_as_real(y.resolve_conj())
    if x.is_floating_point():
        x, y = torch.nan_to_num(x), torch.nan_to_num(y)
    return torch.equal(x, y)


def _check_deterministic(op, first, second):
    """A sample whose eager results differ between two runs with the same seed has no reference
    (as_strided_scatter's eager backward in 1.13 left memory uninitialized): it is skipped."""
    if op.name in UNINITIALIZED_OPS:
        return
    if isinstance(second, str) or not _same(first, second):
        raise Skip("eager is not deterministic: two runs with the same seed differ")


def grad_cases(op_key, op, n):
    """The (a) cases of an op: loss (or forward-only) functions of each selected sample."""
    requires_grad = bool(op.supports_autograd)

    def build(sample, cid):
        tensors, rebuild = _flatten_sample(sample)
        originals = [t.detach().clone(memory_format=torch.contiguous_format) for t in tensors]
        rg = [bool(t.requires_grad and _is_float(t)) for t in tensors]
        for t in originals:
            if not _storable(t):
                raise Skip("input of dtype %s" % t.dtype)
        process = sample.output_process_fn_grad or (lambda x: x)

        def outputs(*xs):
            return process(_eager_outputs(op, sample, list(xs), rebuild))

        # Eager once, to learn the outputs (and whether the sample is usable).
        ins = [t.clone().requires_grad_(r) for t, r in zip(originals, rg)]
        try:
            out = _run_seeded(outputs, *ins)
        except Exception as e:  # noqa: BLE001
            raise Skip("eager: %s: %s" % (type(e).__name__, _first_line(e)))
        flat = [o for o in pytree.tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        if not flat:
            raise Skip("no tensor output")
        floats = [o for o in flat if _is_float(o)]
        names = ["x%d" % i for i in range(len(originals))]
        if not floats:
            for o in flat:
                if not _storable(o):
                    raise Skip("output of dtype %s" % o.dtype)

            def forward(*xs):
                res = pytree.tree_flatten(outputs(*xs))[0]
                return tuple(o for o in res if isinstance(o, torch.Tensor))

            case = Case(op_key, cid, "forward", forward, names, originals, [False] * len(names))
            with torch.no_grad():
                got = _run_seeded(forward, *case.fresh(False))
                _check_deterministic(op, got, _run_seeded(forward, *case.fresh(False)))
            case.expected = {"out_%d" % k: v.detach().clone() for k, v in enumerate(got)}
            return case
        gen = torch.Generator().manual_seed(seed_of(op_key + "/" + cid + "/w"))
        weights = []
        for o in floats:
            shape = o.shape + ((2,) if o.is_complex() else ())
            weights.append(torch.randn(shape, generator=gen, dtype=torch.float32))
        n_in = len(originals)

        def loss_fn(*xs):
            res = outputs(*xs[:n_in])
            fl = [o for o in pytree.tree_flatten(res)[0] if _is_float(o)]
            total = None
            for o, w in zip(fl, xs[n_in:]):
                term = ((torch.view_as_real(o.resolve_conj()) if o.is_complex() else o) * w).sum()
                total = term if total is None else total + term
            return total

        names = names + ["w%d" % i for i in range(len(weights))]
        case = Case(op_key, cid, "loss", loss_fn, names, originals + weights,
                    rg + [False] * len(weights))
        if not any(case.requires_grad):
            case.kind = "loss_forward"
        expected = _eager_loss_and_grads(case)
        if isinstance(expected, str):
            raise Skip(expected)
        _check_deterministic(op, expected, _eager_loss_and_grads(case))
        case.expected = expected
        if case.kind == "loss":
            case.fd = _finite_differences(case)
        return case

    return _select(op_key, "a",
                   lambda: op.sample_inputs("cpu", torch.float32, requires_grad=requires_grad),
                   build, n)


def _eager_loss_and_grads(case, runner=None, seed=0):
    """{out_0: loss, grad_<x>: ...} of `case` eagerly (or through `runner(fn)`), or an error
    text."""
    ins = case.fresh()
    fn = runner(case.fn) if runner else case.fn
    try:
        loss = _run_seeded(fn, *ins, seed=seed)
    except Exception as e:  # noqa: BLE001
        return "%s: %s" % (type(e).__name__, _first_line(e))
    if not isinstance(loss, torch.Tensor):
        return "the loss is a %s" % type(loss).__name__
    result = {"out_0": loss.detach().clone()}
    wanted = [(n, t) for n, t, rg in zip(case.names, ins, case.requires_grad) if rg]
    if wanted:
        if loss.requires_grad:
            try:
                grads = torch.autograd.grad(loss, [t for _, t in wanted], allow_unused=True)
            except Exception as e:  # noqa: BLE001
                return "backward: %s: %s" % (type(e).__name__, _first_line(e))
        else:
            grads = [None] * len(wanted)
        for (n, t), g in zip(wanted, grads):
            result["grad_" + n] = torch.zeros_like(t) if g is None else g.detach().clone()
    return result


def inplace_cases(op_key, op, n):
    """The (b) cases of an op: its in-place variant on samples that do not broadcast the input."""
    variant = op.inplace_variant

    def build(sample, cid):
        if getattr(sample, "broadcasts_input", False):
            raise Skip("broadcasts its input")
        if not isinstance(sample.input, torch.Tensor):
            raise Skip("input is not a tensor")
        tensors, rebuild = _flatten_sample(sample)
        if tensors[0] is not sample.input:
            raise Skip("input is not the first tensor")
        originals = [t.detach().clone(memory_format=torch.contiguous_format) for t in tensors]
        for t in originals:
            if not _storable(t):
                raise Skip("input of dtype %s" % t.dtype)

        def fn(*xs):
            inp, args, kwargs = rebuild(list(xs))
            return variant(inp, *args, **kwargs)

        names = ["x%d" % i for i in range(len(originals))]
        case = Case(op_key, cid, "inplace", fn, names, originals, [False] * len(names))
        ins = case.fresh(False)
        try:
            with torch.no_grad():
                res = _run_seeded(fn, *ins)
        except Exception as e:  # noqa: BLE001
            raise Skip("eager: %s: %s" % (type(e).__name__, _first_line(e)))
        case.expected = {"x0": ins[0].clone()}
        if isinstance(res, torch.Tensor):
            case.expected["out_0"] = res.clone()
        again = case.fresh(False)
        with torch.no_grad():
            _run_seeded(fn, *again)
        _check_deterministic(op, ins[0], again[0])
        return case

    if variant is None:
        return [], []
    return _select(op_key, "b", lambda: op.sample_inputs("cpu", torch.float32, requires_grad=False),
                   build, n)


def _first_line(e):
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__


# --- export ---------------------------------------------------------------------------------------


def _lift_constants(gm):
    """make_fx's tensor constants (get_attr nodes: tensors the op creates in Python) become graph
    inputs c<k> after the others, as torch.export lifts them; returns their values."""
    graph = gm.graph
    consts = [n for n in graph.nodes if n.op == "get_attr"]
    if not consts:
        return []
    last_ph = [n for n in graph.nodes if n.op == "placeholder"][-1:]
    values = []
    for k, n in enumerate(consts):
        value = getattr(gm, n.target)
        if not isinstance(value, torch.Tensor):
            raise ValueError("constant %s is a %s" % (n.target, type(value).__name__))
        if last_ph:
            with graph.inserting_after(last_ph[0]):
                ph = graph.placeholder("c%d" % k)
        else:
            with graph.inserting_before(next(iter(graph.nodes))):
                ph = graph.placeholder("c%d" % k)
        last_ph = [ph]
        n.replace_all_uses_with(ph)
        graph.erase_node(n)
        values.append(value.detach().clone(memory_format=torch.contiguous_format))
    return values


def _trace(case):
    """make_fx of the case: (graph, indices of the case's inputs that are graph inputs). When the
    trace fails (data-dependent control flow on a tensor argument: narrow's start, quantile's q),
    again with the tensors that neither require grad, nor are loss weights, nor are the in-place
    input, as constants of the function (make_fx records them as constants, which are lifted into
    inputs c<k>)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        return make_fx(case.fn)(*case.fresh()), list(range(len(case.names)))
    except Exception as e:  # noqa: BLE001
        first = e
    keep = [i for i, (n, rg) in enumerate(zip(case.names, case.requires_grad))
            if rg or n.startswith("w") or (case.kind == "inplace" and i == 0)]
    if len(keep) == len(case.names):
        raise ExportError("make_fx", first)
    fixed = case.fresh()

    def fn(*xs):
        full = list(fixed)
        for i, x in zip(keep, xs):
            full[i] = x
        return case.fn(*full)

    try:
        return make_fx(fn)(*[fixed[i] for i in keep]), keep
    except Exception:  # noqa: BLE001
        raise ExportError("make_fx", first) from None


def export_case(case, prefix):
    """Traces the case with make_fx and writes <prefix>.fx, <prefix>.inputs.safetensors and
    <prefix>.expected.safetensors; returns the names of the lifted constants. Raises ExportError
    with the stage ('make_fx' or 'text form')."""
    gm, keep = _trace(case)
    try:
        export._remove_dead_pure_nodes(gm.graph)
        consts = _lift_constants(gm)
        gm.recompile()
        fresh = case.fresh(False)
        inputs = [fresh[i] for i in keep] + consts
        values = export._record_values(gm, [t.clone() for t in inputs])
        const_names = ["c%d" % k for k in range(len(consts))]
        names = [case.names[i] for i in keep] + const_names
        text = export.graph_text(gm, names, values)
        for c in consts:
            if not _storable(c):
                raise ValueError("constant of dtype %s cannot be stored in safetensors" % c.dtype)
    except Exception as e:  # noqa: BLE001
        raise ExportError("text form", e) from None

    def graph_fn(*xs):  # the graph as a function of all the case's inputs
        return gm(*[xs[i] for i in keep], *consts)

    try:
        reference = _graph_reference(case, graph_fn)
        if not _same(reference, _graph_reference(case, graph_fn, seed=1)):
            case.expected = reference  # a random op
    except Exception as e:  # noqa: BLE001
        raise ExportError("traced graph run eagerly", e) from None
    export.write_safetensors(prefix + ".inputs.safetensors", dict(zip(names, inputs)))
    export.write_safetensors(prefix + ".expected.safetensors", case.expected)
    if case.fd:
        fd = {}
        for name, (v, d) in case.fd.items():
            fd["v_" + name], fd["d_" + name] = v, torch.tensor(d, dtype=torch.float64)
        export.write_safetensors(prefix + ".fd.safetensors", fd)
    tmp = prefix + ".fx.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, prefix + ".fx")
    return const_names


def _graph_reference(case, graph_fn, seed=0):
    """The expected results of a random case from its traced graph run eagerly (same ATen ops,
    so the same draws from the generator as aotgrad's and functorch's)."""
    if case.kind in ("loss", "loss_forward"):
        got = _eager_loss_and_grads(case, runner=lambda fn: graph_fn, seed=seed)
        if isinstance(got, str):
            raise ValueError(got)
        return got
    ins = case.fresh(False)
    with torch.no_grad():
        out = _run_seeded(graph_fn, *ins, seed=seed)
    if case.kind == "inplace":
        got = {"x0": ins[0].clone()}
        if "out_0" in case.expected:
            got["out_0"] = out.clone()
        return got
    return {"out_%d" % k: v.detach().clone() for k, v in enumerate(out)}


class ExportError(Exception):
    def __init__(self, stage, error):
        super().__init__("%s: %s: %s" % (stage, type(error).__name__, _first_line(error)))
        self.stage = stage


# --- comparison -----------------------------------------------------------------------------------


def compare(got, want, uninitialized=False):
    """None when `got` matches `want` under the fp32 rule, else a short reason."""
    if got is None:
        return "missing"
    if tuple(got.shape) != tuple(want.shape):
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if uninitialized:
        return None
    if not (want.is_floating_point() or want.is_complex()):
        if torch.equal(got, want):
            return None
        bad = int((got != want).sum())
        return "%d of %d values differ" % (bad, want.numel())
    g, w = got.double(), want.double()
    if w.numel() == 0:
        return None
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if bool(finite.any()) else 0.0
    atol = ATOL * max(1.0, scale)
    same_special = (torch.isnan(g) & torch.isnan(w)) | (torch.isinf(w) & (g == w))
    ok = same_special | ((g - w).abs() <= atol + RTOL * w.abs())
    if bool(ok.all()):
        return None
    diff = (g - w).abs()
    diff[ok] = 0
    diff = torch.nan_to_num(diff, nan=float("inf"))
    i = int(diff.reshape(-1).argmax())
    return ("%d of %d values differ; largest at %d: %.6g vs %.6g" % (
        int((~ok).sum()), w.numel(), i, float(g.reshape(-1)[i]), float(w.reshape(-1)[i])))


def judge(case_meta, got):
    """(cause, detail) of a case's outputs `got` ({name: tensor}) against the expected ones, or
    (None, None) when they match."""
    uninit = case_meta["op"].split(".")[0] in UNINITIALIZED_OPS
    notes = []
    for name, want in case_meta["expected"].items():
        why = compare(got.get(name), want, uninitialized=uninit)
        if name.startswith("grad_") and why == "missing":  # no grad written: a zero grad
            why = compare(torch.zeros_like(want), want)
        if why is None:
            continue
        if name.startswith("grad_"):
            fd = (case_meta.get("fd") or {}).get(name[5:])
            g = got.get(name)
            g = torch.zeros_like(want) if g is None else g
            if (fd is not None and g.shape == want.shape and _fd_agrees(g, fd)
                    and not _fd_agrees(want, fd)):
                # eager's grad is the wrong one: float64 finite differences agree with `got`
                notes.append(EAGER_GRAD_WRONG % (name, why))
                continue
            return "wrong grad", "%s: %s" % (name, why)
        if case_meta["kind"] == "inplace" and name == "x0":
            return "wrong write-back", "%s: %s" % (name, why)
        if why == "missing":
            return "missing output", name
        return "wrong value", "%s: %s" % (name, why)
    return None, ("; ".join(notes) or None)


def _finite_differences(case):
    """{input: (v, d)} for each input that requires grad: a random direction v and the float64
    central difference d of the loss along it (the case's function on float64 copies of its
    floating inputs), the second opinion on a grad that differs from eager's; None when the op
    does not run in float64."""
    gen = torch.Generator().manual_seed(seed_of(case.op_key + "/" + case.id + "/fd"))
    base = [t.detach().double() if t.is_floating_point() else t.detach() for t in case.originals]
    eps = 1e-6
    out = {}
    try:
        for i, (name, rg) in enumerate(zip(case.names, case.requires_grad)):
            if not rg:
                continue
            v = torch.randn(base[i].shape, generator=gen, dtype=torch.float64)
            vals = []
            for sign in (1, -1):
                xs = [t.clone() for t in base]
                xs[i] = xs[i] + sign * eps * v
                with torch.no_grad():
                    vals.append(float(_run_seeded(case.fn, *xs)))
            d = (vals[0] - vals[1]) / (2 * eps)
            if not math.isfinite(d):
                return None
            out[name] = (v, d)
    except Exception:  # noqa: BLE001
        return None
    return out


def _fd_agrees(grad, fd):
    """Whether <grad, v> matches the finite difference d (to 1e-3 of the terms' magnitude)."""
    v, d = fd
    g = grad.detach().double().reshape(v.shape)
    dot = float((g * v).sum())
    scale = float((g.abs() * v.abs()).sum()) + abs(d)
    return abs(dot - d) <= 1e-3 * max(1.0, scale)


# --- PyTorch's AOTAutograd (the anchor; the report's key "functorch") ----------------------------


def _error(detail):
    """('error (<exception type>)', detail) of an exception text 'Type: message'."""
    kind = detail.split(":", 1)[0] if ":" in detail else "other"
    return "error (%s)" % kind, detail


def functorch_result(case, partition):
    """(cause, detail) of the case through PyTorch's AOTAutograd (aot_function) with no-op
    compilers and the partition 'min_cut' or 'default'."""
    from torch._functorch.aot_autograd import aot_function
    from torch._functorch.compilers import nop
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition
    partition_fn = (min_cut_rematerialization_partition if partition == "min_cut"
                    else default_partition)

    def compiled(fn):
        return aot_function(fn, fw_compiler=nop, bw_compiler=nop, partition_fn=partition_fn)

    meta = {"op": case.op_key, "kind": case.kind, "expected": case.expected, "fd": case.fd}
    fn = compiled(case.fn)
    try:  # the first call compiles, on copies
        warm = case.fresh()
        out = _run_seeded(fn, *warm)
        if case.kind in ("loss", "loss_forward") and out.requires_grad:
            out.backward()
    except Exception as e:  # noqa: BLE001
        return _error("%s: %s" % (type(e).__name__, _first_line(e)))
    if case.kind in ("loss", "loss_forward"):
        got = _eager_loss_and_grads(case, runner=lambda _: fn)
        if isinstance(got, str):
            return _error(got)
        return judge(meta, got)
    ins = case.fresh(False)
    try:
        out = _run_seeded(fn, *ins)
    except Exception as e:  # noqa: BLE001
        return _error("%s: %s" % (type(e).__name__, _first_line(e)))
    if case.kind == "inplace":
        got = {"x0": ins[0]}
        if isinstance(out, torch.Tensor):
            got["out_0"] = out
    else:
        got = {"out_%d" % k: v for k, v in enumerate(out)}
    return judge(meta, got)


# --- the export worker ----------------------------------------------------------------------------


class _Alarm(Exception):
    pass


def _with_alarm(seconds, fn, *args):
    def on_alarm(signum, frame):
        raise _Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def op_dir(cache, key):
    return os.path.join(cache, re.sub(r"[^A-Za-z0-9_.-]", "_", key))


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def export_op(key, cache, n_samples, with_functorch, alarm):
    """Builds, exports and (with functorch) anchors the cases of one op into op_dir(cache, key);
    writes op.json last."""
    op = op_database()[key]
    d = op_dir(cache, key)
    os.makedirs(d, exist_ok=True)
    record = {"key": key, "family": family(key), "has_inplace": op.inplace_variant is not None,
              "functorch": with_functorch, "cases": [], "skipped": {}}
    for kind, make in (("a", grad_cases), ("b", inplace_cases)):
        print("phase %s %s samples" % (key, kind), flush=True)
        try:
            cases, skipped = _with_alarm(alarm, make, key, op, n_samples)
        except _Alarm:
            record["cases"].append({"id": kind + "0", "kind": kind, "export": "timeout",
                                    "cause": "timeout (samples)", "detail": "%d s" % alarm})
            continue
        except Exception as e:  # noqa: BLE001  OpInfo's own generator fails: no case
            record["skipped"][kind] = ["samples failed: %s: %s" % (type(e).__name__,
                                                                    _first_line(e))]
            continue
        record["skipped"][kind] = skipped
        for case in cases:
            entry = {"id": case.id, "kind": case.kind, "grad": case.grad_names}
            print("phase %s %s export" % (key, case.id), flush=True)
            try:
                entry["consts"] = _with_alarm(alarm, export_case, case, os.path.join(d, case.id))
                entry["export"] = "ok"
            except _Alarm:
                entry.update(export="timeout", cause="timeout (make_fx)", detail="%d s" % alarm)
            except ExportError as e:
                entry.update(export="error", cause="export failed (%s)" % e.stage, detail=str(e))
            for who, partition in ANCHORS if with_functorch else ():
                print("phase %s %s %s" % (key, case.id, who), flush=True)
                try:
                    cause, detail = _with_alarm(alarm, functorch_result, case, partition)
                except _Alarm:
                    cause, detail = "timeout", "%d s" % alarm
                except Exception as e:  # noqa: BLE001
                    cause, detail = _error("%s: %s" % (type(e).__name__, _first_line(e)))
                entry[who] = {"cause": cause, "detail": detail}
            record["cases"].append(entry)
    _write_json(os.path.join(d, "op.json"), record)


def worker_main(args):
    """`_export`: op keys on stdin, one a line; prints `phase KEY WHAT` before each step and
    `done KEY` after each op, for the parent's timeouts."""
    torch.set_num_threads(1)
    import warnings
    warnings.filterwarnings("ignore")
    keys = [line.strip() for line in sys.stdin if line.strip()]
    for key in keys:
        print("op %s" % key, flush=True)
        export_op(key, args.cache_dir, args.samples, args.functorch, args.alarm)
        print("done %s" % key, flush=True)
    return 0


def load_op(cache, key, with_functorch):
    path = os.path.join(op_dir(cache, key), "op.json")
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if with_functorch and not rec.get("functorch"):
        return None
    return rec


def run_exports(keys, cache, args, log):
    """Exports every op of `keys` not in the cache, in up to args.jobs worker processes; an op
    whose worker hangs past --export-timeout or dies is recorded (op.json) as such."""
    todo = [k for k in keys if load_op(cache, k, args.functorch) is None]
    if not todo:
        return 0
    chunks = [todo[i::args.jobs] for i in range(args.jobs)]
    threads = [threading.Thread(target=_drive_worker, args=(c, cache, args, log))
               for c in chunks if c]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(todo)


def _drive_worker(keys, cache, args, log):
    remaining = list(keys)
    while remaining:
        cmd = [sys.executable, os.path.abspath(__file__), "_export", "--cache-dir=" + cache,
               "--samples=%d" % args.samples, "--alarm=%d" % args.export_alarm]
        if args.functorch:
            cmd.append("--functorch")
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env=dict(os.environ, OMP_NUM_THREADS="1"))
        proc.stdin.write(("\n".join(remaining) + "\n").encode())
        proc.stdin.close()
        current, phase, started, buf = None, "start", time.monotonic(), b""
        failure = None
        while True:
            timeout = args.export_timeout - (time.monotonic() - started)
            if current is None:
                timeout += 120  # importing torch and the op database
            ready = select.select([proc.stdout], [], [], timeout)[0] if timeout > 0 else []
            if not ready:
                proc.kill()
                proc.wait()
                failure = ("timeout (export)", "%s after %d s" % (phase, args.export_timeout))
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                proc.wait()
                if proc.returncode != 0:
                    sig = -proc.returncode if proc.returncode < 0 else None
                    failure = ("crash in export (%s)" % ("signal %d" % sig if sig else
                                                        "exit %d" % proc.returncode), phase)
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                word, _, rest = line.decode().partition(" ")
                if word == "op":
                    current, phase, started = rest, "start", time.monotonic()
                elif word == "phase":
                    phase = rest
                elif word == "done":
                    remaining.remove(rest)
                    current = None
        proc.stdout.close()
        if failure is None:
            if remaining:  # the worker ended early without saying why
                failure = ("crash in export (exit 0)", "ended early")
            else:
                break
        key = current or remaining[0]
        cause, detail = failure
        d = op_dir(cache, key)
        os.makedirs(d, exist_ok=True)
        op = op_database()[key]
        case = {"id": "a0", "kind": "a", "export": "error", "cause": cause, "detail": detail}
        case.update({who: {"cause": cause, "detail": detail} for who, _ in ANCHORS})
        _write_json(os.path.join(d, "op.json"), {
            "key": key, "family": family(key), "has_inplace": op.inplace_variant is not None,
            "functorch": args.functorch, "skipped": {}, "aborted": True, "cases": [case]})
        remaining.remove(key)


# --- running aotgrad ------------------------------------------------------------------------------

_UNKNOWN_OP = re.compile(r"unknown op '([^']+)'")
_NO_DERIVATIVE = re.compile(r"no derivative rule for (\S+?)[:, ]")


def classify_error(stderr):
    """(cause, detail) of a failed aotgrad run from its stderr."""
    text = stderr.strip()
    line = next((ln for ln in text.splitlines() if "error" in ln.lower()), text.splitlines()[0]
                if text else "")
    if "Traceback (most recent call last):" in text:  # Python's: the exception is its last line
        line = text.splitlines()[-1]
    m = _UNKNOWN_OP.search(text)
    if m:
        return "unknown op", m.group(1)
    if "does not declare" in text:
        m = re.search(r"'(aten::[^']+)'", text)
        return "unknown op", m.group(1) if m else line[:200]
    m = _NO_DERIVATIVE.search(text)
    if m:
        return "no derivative", m.group(1)
    if "differs from inferred" in text:
        return "meta mismatch", line[:300]
    if "cannot infer metadata" in text:
        return "meta error", line[:300]
    if "cannot functionalize" in text:
        return "functionalization error", line[:300]
    if "has no decomposition" in text or "decomposition of" in text:
        return "decomposition error", line[:300]
    if re.search(r"\.fx:\d+:\d+: error:", text):
        return "parse error", line[:300]
    return "run error", line[:300]


def aotgrad_command(binary, prefix, entry, out_path):
    cmd = [binary, "run", prefix + ".fx", "--inputs=" + prefix + ".inputs.safetensors",
           "--seed=0", "--outputs=" + out_path]
    if entry["kind"] == "loss":
        cmd += ["--train", "--grad=" + ",".join(entry["grad"])]
    return cmd


def run_aotgrad_case(binary, cache, key, entry, reference, tmpdir, timeout):
    """(cause, detail, seconds) of one case through `aotgrad run`."""
    prefix = os.path.join(op_dir(cache, key), entry["id"])
    out_path = os.path.join(tmpdir, re.sub(r"[^A-Za-z0-9_.-]", "_", key) + "." + entry["id"] +
                            ".out.safetensors")
    cmd = aotgrad_command(binary, prefix, entry, out_path)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           env=dict(os.environ, AOTGRAD_CACHE_DIR="off", OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return "timeout", "killed after %d s" % timeout, time.monotonic() - t0
    dt = time.monotonic() - t0
    # Messages name the case's files: without the cache directory, as <id>.fx.
    stderr = p.stderr.decode("utf-8", "replace").replace(os.path.join(op_dir(cache, key), ""), "")
    stderr = stderr.replace(cache, "CACHE")
    if p.returncode < 0:
        return ("crash (signal %d)" % -p.returncode,
                _last_line(stderr) or signal.Signals(-p.returncode).name, dt)
    if p.returncode != 0:
        cause, detail = classify_error(stderr.replace("aotgrad run: error: ", ""))
        if p.returncode not in (1,):
            cause = "%s (exit %d)" % (cause, p.returncode)
        return cause, detail, dt
    try:
        got, _ = export.read_safetensors(out_path)
    except (OSError, ValueError) as e:
        return "run error", "outputs: %s" % e, dt
    finally:
        if os.path.exists(out_path):
            os.unlink(out_path)
    if entry["kind"] == "inplace" and "x0" not in got:  # not written back: the input as it was
        got["x0"] = export.read_safetensors(prefix + ".inputs.safetensors")[0]["x0"]
    expected, fd = reference
    cause, detail = judge({"op": key, "kind": entry["kind"], "expected": expected, "fd": fd}, got)
    return cause, detail, dt


def _last_line(text):
    lines = text.strip().splitlines()
    return lines[-1][:300] if lines else ""


# --- the sweep ------------------------------------------------------------------------------------


def select_keys(args):
    db = op_database()
    if args.ops_file:
        keys = []
        with open(args.ops_file) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    keys.append(line.split()[0])
    elif args.ops:
        keys = [k for k in args.ops.split(",") if k]
    else:
        return sorted(db)
    unknown = [k for k in keys if k not in db]
    if unknown:
        raise SystemExit("opinfo_sweep.py: unknown op key(s): %s (`opinfo_sweep.py list` lists "
                         "them)" % ", ".join(unknown))
    return keys


def _machine():
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
            "load": " ".join("%.2f" % x for x in os.getloadavg())}


def sweep(args):
    t_start = time.monotonic()
    machine = _machine()
    binary = os.path.abspath(args.aotgrad)
    if not os.access(binary, os.X_OK):
        raise SystemExit("opinfo_sweep.py: %s is not an executable" % binary)
    keys = select_keys(args)
    cache = os.path.join(args.cache_dir, "torch-%s-harness-%s-samples-%d" % (
        torch.__version__, harness_version(), args.samples))
    os.makedirs(cache, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "export.log"), "ab") as log:
        exported = run_exports(keys, cache, args, log)
    t_export = time.monotonic() - t_start
    print("opinfo_sweep: %d ops, %d exported now, %d from the cache (%.0f s)" % (
        len(keys), exported, len(keys) - exported, t_export), flush=True)

    ops = {k: load_op(cache, k, args.functorch) for k in keys}
    jobs = []
    for k in keys:
        for entry in ops[k]["cases"]:
            if entry.get("export") == "ok":
                prefix = os.path.join(op_dir(cache, k), entry["id"])
                expected, _ = export.read_safetensors(prefix + ".expected.safetensors")
                fd = None
                if os.path.exists(prefix + ".fd.safetensors"):
                    raw, _ = export.read_safetensors(prefix + ".fd.safetensors")
                    fd = {n[2:]: (raw[n], float(raw["d_" + n[2:]]))
                          for n in raw if n.startswith("v_")}
                jobs.append((k, entry, (expected, fd)))
            else:
                entry["aotgrad"] = {"cause": entry["cause"], "detail": entry["detail"]}
    tmpdir = tempfile.mkdtemp(prefix="opinfo_sweep.")
    done = [0]
    lock = threading.Lock()

    def work(job):
        k, entry, reference = job
        cause, detail, dt = run_aotgrad_case(binary, cache, k, entry, reference, tmpdir,
                                             args.timeout)
        entry["aotgrad"] = {"cause": cause, "detail": detail, "seconds": round(dt, 2)}
        with lock:
            done[0] += 1
            if args.verbose or (cause and cause.startswith(("crash", "timeout"))):
                print("  %-40s %-4s %s %s" % (k, entry["id"], cause or "pass", detail or ""),
                      flush=True)
            elif done[0] % 100 == 0:
                print("  %d / %d aotgrad runs" % (done[0], len(jobs)), flush=True)

    from concurrent.futures import ThreadPoolExecutor
    t_run0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(work, jobs))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    t_run = time.monotonic() - t_run0
    timing = {"export_s": round(t_export, 1), "aotgrad_s": round(t_run, 1),
              "total_s": round(time.monotonic() - t_start, 1), "aotgrad_runs": len(jobs)}
    report = build_report(keys, ops, {
        "torch": torch.__version__, "harness": harness_version(), "samples": args.samples,
        "rtol": RTOL, "atol": ATOL, "timing": timing, "functorch": bool(args.functorch),
        "jobs": args.jobs, "timeout_s": args.timeout,
        "machine": dict(machine, load_end=_machine()["load"])})
    _write_json(os.path.join(args.out, "report.json"), report)
    md = markdown(report)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(md)
    print(summary_text(report), flush=True)
    print("opinfo_sweep: wrote %s and %s" % (os.path.join(args.out, "report.json"),
                                             os.path.join(args.out, "report.md")))
    if args.expected:
        return check_expected(report, args.expected, os.path.join(args.out, "report.json"))
    return 0


# --- command line ---------------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(prog="opinfo_sweep.py", description=__doc__.split("\n\n")[0],
                                epilog="usage:" + __doc__.split("usage:", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the sweep")
    r.add_argument("--aotgrad", required=True, help="the aotgrad executable")
    r.add_argument("--out", required=True, help="directory for report.json, report.md, export.log")
    r.add_argument("--cache-dir", default=None,
                   help="exported cases (default: $XDG_CACHE_HOME/aotgrad/opinfo or ~/.cache/...)")
    r.add_argument("--ops", default=None, help="comma-separated op keys (default: all)")
    r.add_argument("--ops-file", default=None, help="op keys, the first word of each line")
    r.add_argument("-j", "--jobs", type=int, default=2, help="parallel processes (at most 2)")
    r.add_argument("--timeout", type=int, default=60, help="seconds per aotgrad run (default 60)")
    r.add_argument("--export-timeout", type=int, default=300,
                   help="seconds per op in the export worker before it is killed (default 300)")
    r.add_argument("--export-alarm", type=int, default=60,
                   help="seconds per export step before it is interrupted (default 60)")
    r.add_argument("--samples", type=int, default=3, help="samples per op (default 3)")
    r.add_argument("--no-functorch", dest="functorch", action="store_false",
                   help="skip the anchor, PyTorch's own AOTAutograd")
    r.add_argument("--expected", default=None,
                   help="expected results; exit 1 on a regression (see `expected`)")
    r.add_argument("-v", "--verbose", action="store_true", help="print every aotgrad case")
    w = sub.add_parser("_export", help="(internal) the export worker")
    w.add_argument("--cache-dir", required=True)
    w.add_argument("--samples", type=int, required=True)
    w.add_argument("--alarm", type=int, required=True)
    w.add_argument("--functorch", action="store_true")
    ls = sub.add_parser("list", help="print the op keys")
    ls.add_argument("--ops", default=None)
    ls.add_argument("--ops-file", default=None)
    e = sub.add_parser("expected", help="print an expected-results file from a report.json")
    e.add_argument("report")
    e.add_argument("--ops-file", default=None, help="only the ops of this file, in its order")
    bm = sub.add_parser("benchmarks", help="put a report into BENCHMARKS.md between markers")
    bm.add_argument("report")
    bm.add_argument("benchmarks_md")
    bm.add_argument("--command", default=None, help="the command that produced the report")
    ck = sub.add_parser("check", help="check a report against expected results")
    ck.add_argument("report")
    ck.add_argument("expected")
    args = p.parse_args(argv)

    if args.cmd == "_export":
        return worker_main(args)
    if args.cmd == "list":
        for k in select_keys(args):
            print(k)
        return 0
    if args.cmd == "expected":
        with open(args.report) as f:
            report = json.load(f)
        if args.ops_file:
            rows = {r["key"]: r for r in report["ops"]}
            keys = [k for k in select_keys(argparse.Namespace(ops_file=args.ops_file, ops=None))]
            missing = [k for k in keys if k not in rows]
            if missing:
                raise SystemExit("opinfo_sweep.py: %s: not in %s" % (", ".join(missing), args.report))
            report["ops"] = [rows[k] for k in keys]
        sys.stdout.write(expected_text(report))
        return 0
    if args.cmd == "benchmarks":
        put_into_benchmarks(args.report, args.benchmarks_md, args.command)
        return 0
    if args.cmd == "check":
        with open(args.report) as f:
            return check_expected(json.load(f), args.expected)
    if not 1 <= args.jobs <= 2:
        p.error("-j takes 1 or 2 (the machine's two cores are shared)")
    if args.cache_dir is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        args.cache_dir = os.path.join(base, "aotgrad", "opinfo")
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
