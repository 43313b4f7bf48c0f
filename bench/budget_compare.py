#!/usr/bin/env python3
"""Training-step peak memory under the activation memory budget, aotgrad against PyTorch's AOTAutograd.

The measured peak of one training step at the same budgets, on the same models (issue 41, item 5).

PyTorch's side (a fresh Python process per model, one intra-op thread): PyTorch's AOTAutograd
(torch._functorch.aot_autograd.aot_module_simplified, no Dynamo) with
min_cut_rematerialization_partition, torch._functorch.config.activation_memory_budget = b and its
default solver (activation_memory_budget_solver "dp", runtime estimator "flops"), and the no-op
boxed compilers of torch.compile's "aot_eager" backend (torch._dynamo.backends.debugging.boxed_nop,
keep_inference_input_mutations=True), so that the partitioned forward and backward fx graphs run
op by op on PyTorch's CPU kernels. Decompositions: aot_eager's (none) for the `pytorch` columns;
also Inductor's table (`pytorch_inductor_decomp`, the graphs torch.compile partitions, then run
unfused: every decomposed op allocates its own result) unless --no-inductor-decomp. One step is
forward with the loss, then backward; the gradients are dropped before it (set to None, PyTorch
2.x's zero_grad) or, for the pytorch#197838 reproduction, kept and zeroed in place (the issue's
harness). Every configuration runs one untimed step (compilation) first, then --reps measured
steps (the peak is their maximum).

How PyTorch's peak is measured on the CPU: torch.profiler with profile_memory=True records an event
for every allocation and free of c10's CPU allocator (the allocator reports them itself, with their
byte counts, the free as a negative count); the running sum of those events over the step, in the
order they happened, is the bytes of tensor storage alive above the level before the step, and its
maximum is the step's peak. Eager PyTorch (the same nn.Module called directly) is measured the same
way in the same process, so `pytorch_ratio` has one method above and below the line. When aotgrad's
runtime library is found (beside the aotgrad binary, or --aotgrad-lib), its tracking allocator (the
allocator `aotgrad run --stats=json` and bench/train_step_bench read, installed under c10's CPU
allocator through ctypes before any tensor exists) measures every step a second time; the two
figures are reported side by side (`*_tracking_peak_bytes`) and must agree.

aotgrad's side: the model exported by tools/export.py (in the PyTorch process, with this PyTorch, on
the same weights and inputs), then `aotgrad run GRAPH --train --grad=PARAMETERS --memory-budget=b
--stats=json` (OMP_NUM_THREADS=1): its measured_peak_bytes, the tracking allocator's peak above the
level before the step (aotgrad's default budget pricing, by predicted peak), and the same with
--budget-pricing=sum (PyTorch's pricing: summed saved bytes). aotgrad's eager figure is
bench/train_step_bench's `TrainStep/<model>/eager` (the libtorch C++ twin of the model, same
tracking allocator) where the benchmark has the model, else PyTorch's eager step under the tracking
allocator, else the profiler's; `aotgrad_eager_source` says which.

pytorch#197838 ("activation_memory_budget: physical peak allocated memory is non-monotonic across
budgets": budget 0.05 peaks 4.17x higher than 0.15 on a LLaMA model): with --repro, the issue's
model is rebuilt without transformers (LlamaModel's layout: float32 RMSNorm, rotary embeddings,
SDPA causal attention, SiLU-gated MLP, no biases; hidden 256, 8 heads, intermediate 688, vocab 1000,
4*scale layers, sequence 128*scale, batch 2, loss last_hidden_state.sum()) and measured as the
other models at the issue's budgets, with the gradients kept as its harness does. Adapted: CPU
instead of CUDA (CPU SDPA kernel, c10's CPU allocator without the caching allocator's rounding),
no Dynamo and no transformers, PyTorch 2.11 instead of 2.14, the profiler instead of
torch.cuda.max_memory_allocated.

usage: PYTHON bench/budget_compare.py --aotgrad=BUILD/aotgrad [--models=mlp,gpt_block,...]
           [--budgets=1,0.8,...] [--repro] [--repro-scale=4] [--quick] [--dir=DIR] [--out=FILE]
(PYTHON: the venv's, whose torch is the libtorch aotgrad was built on)"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's "no GPU" notices, before torch loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

BUDGETS = (1.0, 0.8, 0.6, 0.5, 0.4, 0.2, 0.15, 0.05, 0.0)
MODELS = ("mlp", "gpt_block", "gpt_block_wide", "cnn_bn")
# The scale-4 budgets, with the two ends.
REPRO_BUDGETS = (1.0, 0.3, 0.2, 0.15, 0.1, 0.05, 0.0)
REPRO = "pytorch#197838"
QUICK_MODEL, QUICK_BUDGETS = "gpt_block_wide", (1.0, 0.15, 0.05)
# The runtime library's tracking allocator (include/aotgrad/runtime/memory.h), by mangled name.
SYM_INSTALL = "_ZN7aotgrad26install_tracking_allocatorEv"
SYM_STATS = "_ZN7aotgrad12memory_statsEv"
SYM_RESET = "_ZN7aotgrad17reset_peak_memoryEv"


def fmt_budget(b):
    return "%g" % b


# --- the tracking allocator, through ctypes --------------------------------------------------------


class TrackingAllocator:
    """aotgrad's tracking allocator (libaotgrad_runtime) in this process: install() before any
    tensor is made; peak_above(fn) is the most bytes of tensor storage alive above the level before
    fn() while it ran."""

    def __init__(self, path):
        import ctypes

        class Stats(ctypes.Structure):
            _fields_ = [("current_bytes", ctypes.c_int64), ("peak_bytes", ctypes.c_int64),
                        ("allocations", ctypes.c_int64)]

        lib = ctypes.CDLL(path)
        self._install = getattr(lib, SYM_INSTALL)
        self._stats = getattr(lib, SYM_STATS)
        self._stats.restype = Stats
        self._reset = getattr(lib, SYM_RESET)
        self.path = path

    def install(self):
        self._install()

    def begin(self):
        self._reset()
        return self._stats().current_bytes

    def peak_since(self, before):
        return self._stats().peak_bytes - before


# --- PyTorch's side (the worker process) -----------------------------------------------------------


def make_llama(scale):
    """pytorch#197838's model (its harness's LlamaWrap at hf_models(scale)), as transformers'
    LlamaModel computes it, in plain PyTorch; returns (model, inputs)."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.eps = eps

        def forward(self, x):
            dtype = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads, self.head_dim = heads, d // heads
            self.q_proj = nn.Linear(d, d, bias=False)
            self.k_proj = nn.Linear(d, d, bias=False)
            self.v_proj = nn.Linear(d, d, bias=False)
            self.o_proj = nn.Linear(d, d, bias=False)

        def forward(self, x, cos, sin):
            b, s, d = x.shape
            shape = (b, s, self.heads, self.head_dim)
            q = self.q_proj(x).view(shape).transpose(1, 2)
            k = self.k_proj(x).view(shape).transpose(1, 2)
            v = self.v_proj(x).view(shape).transpose(1, 2)
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(y.transpose(1, 2).reshape(b, s, d))

    class DecoderLayer(nn.Module):
        def __init__(self, d, heads, inter):
            super().__init__()
            self.input_layernorm = RMSNorm(d)
            self.self_attn = Attention(d, heads)
            self.post_attention_layernorm = RMSNorm(d)
            self.gate_proj = nn.Linear(d, inter, bias=False)
            self.up_proj = nn.Linear(d, inter, bias=False)
            self.down_proj = nn.Linear(inter, d, bias=False)

        def forward(self, x, cos, sin):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin)
            h = self.post_attention_layernorm(x)
            return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

    class Llama(nn.Module):
        def __init__(self, layers, d=256, heads=8, vocab=1000):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(DecoderLayer(d, heads, int(d * 2.6875)) for _ in range(layers))
            self.norm = RMSNorm(d)
            hd = d // heads
            inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def forward(self, ids):
            b, s = ids.shape
            x = self.embed_tokens(ids)
            pos = torch.arange(s, device=ids.device).unsqueeze(0).float()
            freqs = (self.inv_freq[None, :, None].float().expand(b, -1, 1) @ pos[:, None, :]).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for layer in self.layers:
                x = layer(x, cos, sin)
            return self.norm(x).sum()

    model = Llama(layers=4 * scale)
    return model, {"ids": torch.randint(0, 1000, (2, 128 * scale))}


def llama_description(scale):
    return ("%s's LLaMA (its harness's LlamaWrap, scale %d) rebuilt in plain PyTorch: %d layers, "
            "hidden 256, 8 heads, intermediate 688, vocab 1000, SDPA causal attention, sequence %d, "
            "batch 2, loss last_hidden_state.sum()" % (REPRO, scale, 4 * scale, 128 * scale))


def build(name, scale):
    import torch
    import export
    torch.manual_seed(0)  # tools/export.py's default seed: the checked-in graphs' weights
    if name == "llama":
        return make_llama(scale) + (llama_description(scale),)
    model, inputs = export.MODELS[name][1]()
    return model, inputs, export.MODELS[name][0]


def profiler_peak(events):
    """The most bytes alive at once above the start, from the profiler's CPU allocation events."""
    import torch
    mem = [e for e in events if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU]
    mem.sort(key=lambda e: e.start_ns())  # stable: events of one nanosecond keep their order
    alive = peak = 0
    for e in mem:
        alive += e.nbytes()
        peak = max(peak, alive)
    return peak


def measure_step(step, tracking):
    """One call of step() under the profiler (and the tracking allocator when there is one):
    (profiler peak, tracking allocator peak or None), bytes above the level before it."""
    from torch.profiler import ProfilerActivity, profile
    before = tracking.begin() if tracking else None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    tracked = tracking.peak_since(before) if tracking else None
    return profiler_peak(prof.profiler.kineto_results.events()), tracked


def worker(args):
    """Measures eager PyTorch and PyTorch's AOTAutograd at each budget on one model; exports the
    model for aotgrad; prints one JSON object."""
    tracking = None
    if args.aotgrad_lib:
        tracking = TrackingAllocator(args.aotgrad_lib)
        tracking.install()  # before any tensor
    import gc
    import warnings
    import torch
    import torch._functorch.config as functorch_config
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    import export
    warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
    torch.set_num_threads(1)

    name = args.worker
    model, inputs, description = build(name, args.repro_scale)
    model.train()
    prefix = os.path.join(args.dir, name)
    export.export(model, inputs, prefix, metadata={"model": name, "seed": 0})
    grad = ",".join(export.placeholder_name(n) for n, p in model.named_parameters() if p.requires_grad)
    order = list(inputs)
    values = [inputs[k] for k in order]
    keep = args.zero_grad == "in-place"

    def reset():
        model.zero_grad(set_to_none=not keep)

    def measured(step):
        """Untimed first step, then the measured ones: the largest peak of each method."""
        reset()
        step()
        peaks, tracked = [], []
        for _ in range(args.reps):
            reset()
            p, t = measure_step(step, tracking)
            peaks.append(p)
            tracked.append(t)
        return {"peak_bytes": max(peaks), "peaks": peaks,
                "tracking_peak_bytes": max(tracked) if tracking else None}

    def eager_step():
        model(*values).backward()

    class TupleOut(torch.nn.Module):  # aot_module_simplified wants a tuple of outputs
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            return (self.m(*a),)

    wrapped = TupleOut(model)
    decomps = {"pytorch": None}
    if args.inductor_decomp:
        import torch._inductor.lowering  # noqa: F401  its decompositions consult the lowerings
        from torch._inductor.decomposition import select_decomp_table
        decomps["pytorch_inductor_decomp"] = select_decomp_table()

    result = {"model": name, "description": description, "grad": grad,
              "graph": prefix + ".fx", "inputs": prefix + ".inputs.safetensors",
              "parameters": sum(p.numel() for p in model.parameters()),
              "zero_grad": args.zero_grad, "torch": torch.__version__,
              "torch_threads": torch.get_num_threads(),
              "tracking_allocator": bool(tracking),
              "solver": str(functorch_config.activation_memory_budget_solver),
              "runtime_estimator": str(functorch_config.activation_memory_budget_runtime_estimator)}
    start = time.perf_counter()
    result["eager"] = measured(eager_step)
    rows = []
    for b in args.budget_list:
        row = {"budget": b}
        for key, table in decomps.items():
            compiled = None
            try:
                with functorch_config.patch(activation_memory_budget=b):
                    t0 = time.perf_counter()
                    compiled = aot_module_simplified(
                        wrapped, values, fw_compiler=boxed_nop, bw_compiler=boxed_nop,
                        partition_fn=min_cut_rematerialization_partition, decompositions=table,
                        keep_inference_input_mutations=True)
                    m = measured(lambda: compiled(*values)[0].backward())
                    m["seconds"] = time.perf_counter() - t0
                row[key] = m
            except Exception as e:  # noqa: BLE001 -- reported in the row, the sweep goes on
                row[key] = {"error": "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:300])}
            del compiled
            gc.collect()
        rows.append(row)
        print("budget_compare: %s budget %s: %s" % (name, fmt_budget(b), ", ".join(
            "%s %s" % (k, row[k].get("peak_bytes", "error")) for k in decomps)), file=sys.stderr, flush=True)
    result["rows"] = rows
    result["seconds"] = time.perf_counter() - start
    print(json.dumps(result))
    return 0


# --- aotgrad's side and the driver -----------------------------------------------------------------


def run(cmd, what, env=None, tries=3):
    """cmd's stdout; a binary that did not load (exit 127: a library being rebuilt under it) is
    tried again, up to `tries` times, 15 s apart."""
    for attempt in range(tries):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if p.returncode != 127:
            break
        time.sleep(15)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (what, p.returncode, p.stderr.strip()[-2000:]))
    return p.stdout


def single_thread_env():
    return dict(os.environ, OMP_NUM_THREADS="1", AOTGRAD_CACHE_DIR="off")


def aotgrad_step(binary, w, budget, pricing):
    cmd = [binary, "run", w["graph"], "--inputs=" + w["inputs"], "--train", "--grad=" + w["grad"],
           "--memory-budget=" + fmt_budget(budget), "--budget-pricing=" + pricing,
           "--zero-grad=" + w["zero_grad"], "--stats=json"]
    j = json.loads(run(cmd, "aotgrad run (%s, budget %s, %s)" % (w["model"], fmt_budget(budget), pricing),
                       single_thread_env()).splitlines()[0])
    return {"peak_bytes": j["measured_peak_bytes"], "predicted_peak_bytes": j["predicted_peak"]["bytes"],
            "saved": j["saved"]}


def train_step_bench_eager(binary, models):
    """{(model, zero_grad): peak} of train_step_bench's eager C++ twins (those it has)."""
    bench = os.path.join(os.path.dirname(os.path.abspath(binary)), "bench", "train_step_bench")
    if not os.access(bench, os.X_OK) or not models:
        return {}, None
    names = "|".join(sorted(models))
    try:
        out = run([bench, "--benchmark_filter=^TrainStep/(%s)/eager(_zero_grad)?$" % names,
                   "--benchmark_min_time=0.01", "--benchmark_format=json"], "train_step_bench",
                  single_thread_env())
        benchmarks = json.loads(out)["benchmarks"] if out.strip() else []  # none of the models
    except (RuntimeError, ValueError, KeyError) as e:
        print("budget_compare: no eager figures from train_step_bench: %s" % e, file=sys.stderr)
        return {}, None
    got = {}
    for b in benchmarks:
        _, model, variant = b["name"].split("/")[:3]
        got[(model, "in-place" if variant.endswith("_zero_grad") else "set-to-none")] = \
            int(b["peak_bytes_above_pre_step"])
    return got, os.path.relpath(bench, os.path.dirname(os.path.abspath(binary)))


def ratio(a, b):
    return a / b if a is not None and b else None


def rises(points):
    """Non-monotone steps of a (budget, peak) curve, budget 0 left out (PyTorch's 0 saves only the
    inputs without the knapsack; the issue leaves it out too): the largest peak(lo) / peak(hi)
    over budgets lo < hi, and the issue's 0.05 against 0.15."""
    pts = sorted((b, p) for b, p in points if p is not None and b > 0)
    worst = None
    for i, (lo, plo) in enumerate(pts):
        for hi, phi in pts[i + 1:]:
            r = plo / phi
            if r > 1 and (worst is None or r > worst["ratio"]):
                worst = {"low": lo, "high": hi, "ratio": r, "low_peak_bytes": plo, "high_peak_bytes": phi}
    d = dict(pts)
    pair = d[0.05] / d[0.15] if 0.05 in d and 0.15 in d else None
    return {"monotone": worst is None, "worst_rise": worst, "peak_0.05_over_0.15": pair}


def compare(binary, w, bench_eager, bench_name, sum_pricing):
    """The model's rows: PyTorch's figures from the worker, aotgrad's from its CLI, the ratios."""
    e = w["eager"]
    bench = bench_eager.get((w["model"], w["zero_grad"]))
    if bench is not None:
        a_eager, source = bench, bench_name
    elif e["tracking_peak_bytes"] is not None:
        a_eager, source = e["tracking_peak_bytes"], "tracking allocator, PyTorch eager"
    else:
        a_eager, source = e["peak_bytes"], "profiler, PyTorch eager"
    eager = {"pytorch_method": e["peak_bytes"], "aotgrad_method": a_eager,
             "tracking_allocator": e["tracking_peak_bytes"], "train_step_bench": bench}
    rows = []
    for r in w["rows"]:
        b = r["budget"]
        row = {"budget": b}
        for key in ("pytorch", "pytorch_inductor_decomp"):
            if key not in r:
                continue
            m = r[key]
            row[key + "_peak_bytes"] = m.get("peak_bytes")
            row[key + "_ratio"] = ratio(m.get("peak_bytes"), e["peak_bytes"])
            row[key + "_tracking_peak_bytes"] = m.get("tracking_peak_bytes")
            if "error" in m:
                row[key + "_error"] = m["error"]
        for key, pricing in (("aotgrad", "peak"), ("aotgrad_sum", "sum")):
            if pricing == "sum" and not sum_pricing:
                continue
            try:
                a = aotgrad_step(binary, w, b, pricing)
            except RuntimeError as e:  # reported in the row, the sweep goes on
                row[key + "_peak_bytes"] = row[key + "_ratio"] = None
                row[key + "_error"] = str(e)[:500]
                continue
            row[key + "_peak_bytes"] = a["peak_bytes"]
            row[key + "_ratio"] = ratio(a["peak_bytes"], a_eager)
            row[key + "_predicted_peak_bytes"] = a["predicted_peak_bytes"]
        row["eager_peak_bytes"] = {"pytorch_method": eager["pytorch_method"],
                                   "aotgrad_method": eager["aotgrad_method"]}
        rows.append(row)
    curves = {}
    for key in ("pytorch", "pytorch_inductor_decomp", "aotgrad", "aotgrad_sum"):
        col = key + "_peak_bytes"
        if any(col in r for r in rows):
            curves[key] = rises([(r["budget"], r.get(col)) for r in rows])
    agree = [(r["budget"], k) for r in rows for k in ("pytorch", "pytorch_inductor_decomp")
             if r.get(k + "_tracking_peak_bytes") is not None
             and r[k + "_tracking_peak_bytes"] != r[k + "_peak_bytes"]]
    out = {k: w[k] for k in ("model", "description", "parameters", "zero_grad", "grad")}
    out.update({"eager_peak_bytes": eager, "aotgrad_eager_source": source,
                "pytorch_eager_source": "profiler, PyTorch eager",
                "methods_disagree": agree, "rows": rows, "non_monotone": curves,
                "pytorch_seconds": w["seconds"]})
    if e["tracking_peak_bytes"] is not None and e["tracking_peak_bytes"] != e["peak_bytes"]:
        out["methods_disagree"].append(("eager", "pytorch"))
    return out


def table(m):
    def mib(v):
        return "%.3f" % (v / 2**20) if v is not None else "error"

    def x(v):
        return "%.3f" % v if v is not None else "-"
    e = m["eager_peak_bytes"]
    lines = ["%s (%s gradients; eager %d B by the profiler, %d B by %s)"
             % (m["model"], m["zero_grad"], e["pytorch_method"], e["aotgrad_method"], m["aotgrad_eager_source"])]
    cols = [("pytorch", "PyTorch"), ("pytorch_inductor_decomp", "PyTorch+Ind.decomp"),
            ("aotgrad", "aotgrad"), ("aotgrad_sum", "aotgrad sum-priced")]
    cols = [(k, t) for k, t in cols if k + "_peak_bytes" in m["rows"][0]]
    lines.append("  budget | " + " | ".join("%s MiB (x eager)" % t for _, t in cols))
    for r in m["rows"]:
        lines.append("  %6s | " % fmt_budget(r["budget"]) + " | ".join(
            "%s (%s)" % (mib(r.get(k + "_peak_bytes")), x(r.get(k + "_ratio"))) for k, _ in cols))
    for k, t in cols:
        c = m["non_monotone"].get(k)
        if c:
            lines.append("  %s: %s" % (t, curve_note(c, "non-monotone, budget %s peaks %.3fx budget %s",
                                                     "; 0.05 / 0.15 = %.3f")))
    return "\n".join(lines)


def curve_note(c, rise_format, pair_format):
    """'monotone' or the worst rise of a peak curve (`rise_format` of the low budget, the ratio and
    the high budget), then its peak at 0.05 over 0.15 (`pair_format`) where measured."""
    w = c["worst_rise"]
    pair = c["peak_0.05_over_0.15"]
    return ("monotone" if c["monotone"] else
            rise_format % (fmt_budget(w["low"]), w["ratio"], fmt_budget(w["high"]))) + (
                pair_format % pair if pair else "")


def markdown(doc, command):
    """The "Memory budget against PyTorch" section of BENCHMARKS.md (tools/benchmarks_md.py): one
    table per model, peaks in KiB and as a fraction of eager's, and whether each curve is
    monotone."""
    def kib(v):
        return "%.1f" % (v / 2**10) if v is not None else "error"

    def x(v):
        return "%.3f" % v if v is not None else "-"
    g = doc["git"]
    L = ["## Memory budget against %s" % doc["reference"], "",
         "The measured peak of one training step (forward with the loss, backward) at the same "
         "activation memory budgets on the same models and weights: %s's `activation_memory_budget` "
         "(min_cut_rematerialization_partition, solver %s, runtime estimator %s; no-op compilers, "
         "so the partitioned graphs run op by op on PyTorch's CPU kernels; *+Ind.* with Inductor's "
         "decomposition table, the graphs torch.compile partitions) against aotgrad's "
         "`--memory-budget` (priced by the predicted peak; *sum* by summed saved bytes, PyTorch's "
         "pricing). Peaks in KiB above the level before the step, and as a fraction of eager's "
         "peak; %d measured step(s) each after one untimed step. `bench/budget_compare.py` says "
         "how each side is measured." % (doc["reference"], doc["pytorch_solver"],
                                         doc["pytorch_runtime_estimator"], doc["reps"]),
         "", "```sh", command, "```", "",
         "Run at commit %s%s, torch %s, %d thread(s), load %s at the start and %s at the end."
         % ((g["commit"] or "?")[:12], " (with modified files)" if g["modified_files"] else "",
            doc["torch"], doc["torch_threads"], " ".join("%.2f" % v for v in doc["load_start"]),
            " ".join("%.2f" % v for v in doc["load_end"])), ""]
    cols = [("pytorch", "PyTorch"), ("pytorch_inductor_decomp", "PyTorch +Ind."),
            ("aotgrad", "aotgrad"), ("aotgrad_sum", "aotgrad sum")]
    for m in doc["models"]:
        have = [(k, t) for k, t in cols if k + "_peak_bytes" in m["rows"][0]]
        e = m["eager_peak_bytes"]
        L.append("**%s**%s (%s gradients; eager %s KiB by the profiler, %s KiB by %s):" % (
            m["model"], " -- " + m["repro"] if m.get("repro") else "", m["zero_grad"],
            kib(e["pytorch_method"]), kib(e["aotgrad_method"]), m["aotgrad_eager_source"]))
        L += ["", "| budget | " + " | ".join(t for _, t in have) + " |",
              "|---:|" + "---:|" * len(have)]
        for r in m["rows"]:
            L.append("| %s | " % fmt_budget(r["budget"]) + " | ".join(
                "%s (%s)" % (kib(r.get(k + "_peak_bytes")), x(r.get(k + "_ratio")))
                for k, _ in have) + " |")
        notes = ["%s %s" % (t, curve_note(m["non_monotone"][k],
                                          "non-monotone (budget %s peaks %.3fx budget %s)",
                                          ", 0.05 / 0.15 = %.3f"))
                 for k, t in have if m["non_monotone"].get(k)]
        L += ["", "; ".join(notes) + ".", ""]
    return "\n".join(L)


def git_state():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        return {"commit": head or None, "modified_files": bool(dirty)}
    except OSError:
        return {"commit": None, "modified_files": None}


def worker_subprocess(args, name, budgets, zero_grad, reps, inductor, lib):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker=" + name, "--dir=" + args.dir,
           "--budgets=" + ",".join(fmt_budget(b) for b in budgets), "--zero-grad=" + zero_grad,
           "--reps=%d" % reps, "--repro-scale=%d" % args.repro_scale]
    if not inductor:
        cmd.append("--no-inductor-decomp")
    if lib:
        cmd.append("--aotgrad-lib=" + lib)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
    if p.returncode != 0:
        raise RuntimeError("the PyTorch measurement of %s failed (exit %d)" % (name, p.returncode))
    return json.loads(p.stdout.strip().splitlines()[-1])


def parse_budgets(text):
    try:
        budgets = [float(b) for b in text.split(",") if b]
    except ValueError:
        raise argparse.ArgumentTypeError("budgets are numbers in [0, 1], comma-separated: %r" % text)
    if not budgets or any(not 0 <= b <= 1 for b in budgets):
        raise argparse.ArgumentTypeError("budgets are numbers in [0, 1], comma-separated: %r" % text)
    return budgets


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aotgrad", help="the aotgrad command-line binary")
    p.add_argument("--aotgrad-lib", help="aotgrad's runtime library, for its tracking allocator "
                   "(default: libaotgrad_runtime.so beside the binary, when there)")
    p.add_argument("--models", default=",".join(MODELS), help="of tools/export.py's models (default: %(default)s)")
    p.add_argument("--budgets", type=parse_budgets, default=list(BUDGETS), help="default: "
                   + ",".join(fmt_budget(b) for b in BUDGETS))
    p.add_argument("--zero-grad", choices=["set-to-none", "in-place"], default="set-to-none",
                   help="the models' gradients between steps (the reproduction keeps them, as the issue)")
    p.add_argument("--reps", type=int, default=2, help="measured steps per configuration (default 2)")
    p.add_argument("--no-inductor-decomp", dest="inductor_decomp", action="store_false",
                   help="leave out PyTorch with Inductor's decomposition table")
    p.add_argument("--no-sum-pricing", dest="sum_pricing", action="store_false",
                   help="leave out aotgrad with --budget-pricing=sum")
    p.add_argument("--repro", action="store_true", help="also reproduce %s (LLaMA, minutes)" % REPRO)
    p.add_argument("--repro-scale", type=int, default=4, help="the issue's --scale (default 4)")
    p.add_argument("--repro-budgets", type=parse_budgets, default=list(REPRO_BUDGETS))
    p.add_argument("--quick", action="store_true", help="%s at budgets %s only, PyTorch with aot_eager's "
                   "decompositions only, one measured step" % (QUICK_MODEL, ",".join(map(fmt_budget, QUICK_BUDGETS))))
    p.add_argument("--dir", help="directory for the exported graphs and inputs (default: a temporary one)")
    p.add_argument("--out", help="write the results (JSON) here")
    p.add_argument("--benchmarks", metavar="BENCHMARKS.md",
                   help="write the results as the file's 'Memory budget against PyTorch' section")
    p.add_argument("--command", help="the command the section names (default: this one)")
    p.add_argument("--worker", metavar="MODEL", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.budget_list = args.budgets
    if args.reps < 1:
        p.error("--reps must be at least 1")
    if args.worker:
        return worker(args)
    if not args.aotgrad:
        p.error("--aotgrad is required")
    if not os.access(args.aotgrad, os.X_OK):
        p.error("--aotgrad: %s is not an executable" % args.aotgrad)
    import export
    names = [m for m in args.models.split(",") if m]
    if args.quick:
        names, args.budgets, args.reps, args.inductor_decomp = [QUICK_MODEL], list(QUICK_BUDGETS), 1, False
    if not names and not args.repro:
        p.error("nothing to measure: give --models or --repro")
    unknown = [m for m in names if m not in export.MODELS]
    if unknown:
        p.error("unknown model %s (known: %s)" % (", ".join(unknown), ", ".join(export.MODELS)))
    lib = args.aotgrad_lib
    if lib is None:
        near = os.path.join(os.path.dirname(os.path.abspath(args.aotgrad)), "libaotgrad_runtime.so")
        lib = near if os.path.exists(near) else None
    elif not os.path.exists(lib):
        p.error("--aotgrad-lib: no file %s" % lib)
    scratch = None
    if not args.dir:
        scratch = tempfile.TemporaryDirectory(prefix="budget_compare.")
        args.dir = scratch.name
    os.makedirs(args.dir, exist_ok=True)

    jobs = [(n, args.budgets, args.zero_grad, args.reps, args.inductor_decomp) for n in names]
    if args.repro:
        jobs.append(("llama", args.repro_budgets, "in-place", 1, False))
    workers = []
    for name, budgets, zero_grad, reps, inductor in jobs:
        print("budget_compare: %s: PyTorch ..." % name, file=sys.stderr, flush=True)
        workers.append(worker_subprocess(args, name, budgets, zero_grad, reps, inductor, lib))
    bench_eager, bench_name = train_step_bench_eager(args.aotgrad, {w["model"] for w in workers})
    doc = {"tool": "bench/budget_compare.py", "reference": "PyTorch %s's AOTAutograd"
           % ".".join(workers[0]["torch"].split("+")[0].split(".")[:2]),
           "torch": workers[0]["torch"], "torch_threads": workers[0]["torch_threads"],
           "pytorch_solver": workers[0]["solver"], "pytorch_runtime_estimator": workers[0]["runtime_estimator"],
           "tracking_allocator": workers[0]["tracking_allocator"], "reps": args.reps,
           "quick": args.quick, "git": git_state(), "load_start": os.getloadavg(), "models": []}
    for w in workers:
        print("budget_compare: %s: aotgrad ..." % w["model"], file=sys.stderr, flush=True)
        m = compare(args.aotgrad, w, bench_eager, bench_name, args.sum_pricing)
        if w["model"] == "llama":
            m["repro"] = REPRO
        doc["models"].append(m)
        print(table(m), flush=True)
    doc["load_end"] = os.getloadavg()
    bad = [(m["model"], d) for m in doc["models"] for d in m["methods_disagree"]]
    if bad:
        print("budget_compare: the profiler and the tracking allocator disagree on %s" % bad,
              file=sys.stderr)
    failed = [(m["model"], r["budget"], r[k]) for m in doc["models"] for r in m["rows"]
              for k in ("aotgrad_error", "aotgrad_sum_error") if k in r]
    for f in failed:
        print("budget_compare: %s budget %s: %s" % (f[0], fmt_budget(f[1]), f[2]), file=sys.stderr)
    if args.out:
        export._write_files({args.out: (json.dumps(doc, indent=1) + "\n").encode("utf-8")})
    if args.benchmarks:
        import benchmarks_md
        command = args.command or "bench/budget_compare.py " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("--benchmarks"))
        benchmarks_md.put_section(args.benchmarks, "budget_compare", markdown(doc, command))
    if scratch:
        scratch.cleanup()
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
