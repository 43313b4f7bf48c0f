#!/usr/bin/env python3
"""aotgrad.min_cut_partition against PyTorch 2.11's min_cut_rematerialization_partition on the same
joint graphs, in one run (issue 42's benchmark, its first part: partition time and saved bytes).

Each model is compiled once by torch.compile with the aot_autograd backend, Inductor's
decomposition table and no-op compilers; the partition_fn receives each joint graph and partitions
it both ways in the same process, at the same point -- aotgrad first (it reads the joint graph),
then PyTorch (its passes edit the joint graph in place) -- and the graph goes on with PyTorch's
partition. Partition time: the median of --reps runs each (aotgrad's: the joint graph crossing
into aotgrad's IR node by node, the min-cut, the graphs coming back as GraphModules; PyTorch's:
each on a fresh copy of the joint graph, whose passes edit the graph they partition, the original
last); both after an untimed warm-up partition, and with the garbage collector off while timed
(after a collection), as timeit times. Saved bytes: the forward's outputs after the user
outputs that are not primals (activations, not parameters or inputs), distinct nodes, bytes of
their fake values.

Models: nanoGPT at the 124M configuration (export.GPT: vocab 50257, d 768, 12 heads, 12 layers,
random init; batch 1, 128 tokens), torchvision's resnet50 (batch 2, 3x64x64) and vit_b_16 (batch
1, 224x224), and a Llama-style decoder block written here (RMSNorm, rotary embeddings, grouped-query
attention, SwiGLU; d 512, 8 heads, 2 KV heads, batch 2, 128 tokens).

Its second part (--peak-models): each model trains under Inductor at memory budgets 1, 0.5, 0.2
and 0.05 with either partitioner, at larger batches (PEAK_BATCH: nanoGPT 8, resnet50 16,
vit_b_16 4, the Llama block 16), and each training step's measured peak (CPU tensor storage, by
aotgrad's tracking allocator) and time are written beside each other: aotgrad's peak should never
rise as the budget falls, and at budget 1 its step time should be PyTorch's within noise.

usage: python_partition.py [--models=a,b] [--reps=N] [--peak-models=a,b] [--steps=N]
                           [--json=FILE] [--benchmarks=BENCHMARKS.md]
  (the build's package: PYTHONPATH=build/python, or the venv's installed one)
"""
import argparse
import datetime
import gc
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402
from torch._functorch.partitioners import min_cut_rematerialization_partition  # noqa: E402
from torch.fx._lazy_graph_module import _make_graph_module  # noqa: E402

import aotgrad  # noqa: E402
from aotgrad import _C  # noqa: E402
from aotgrad.partition import graph_modules  # noqa: E402
import benchmarks_md  # noqa: E402  BENCHMARKS.md's marked sections
import export  # noqa: E402  nanoGPT's GPT


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaBlock(nn.Module):
    """A Llama-style decoder block: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU."""

    def __init__(self, d=512, heads=8, kv_heads=2, hidden=1376, seq=128):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm1(x)
        q = self.wq(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) / self.hd ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def nanogpt(batch=1):
    torch.manual_seed(0)
    m = export.GPT(vocab=50257, d=768, heads=12, seq=1024, layers=12)
    idx, targets = torch.randint(0, 50257, (batch, 128)), torch.randint(0, 50257, (batch, 128))
    return m, lambda mod: mod(idx, targets)


def resnet50(batch=2):
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet50(num_classes=10)
    x, y = torch.randn(batch, 3, 64, 64), torch.randint(0, 10, (batch,))
    return m, lambda mod: F.cross_entropy(mod(x), y)


def vit_b_16(batch=1):
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.vit_b_16(num_classes=10)
    x, y = torch.randn(batch, 3, 224, 224), torch.randint(0, 10, (batch,))
    return m, lambda mod: F.cross_entropy(mod(x), y)


def llama_block(batch=2):
    torch.manual_seed(0)
    m = LlamaBlock()
    x = torch.randn(batch, 128, 512)
    return m, lambda mod: mod(x).pow(2).mean()


MODELS = {"nanogpt": nanogpt, "resnet50": resnet50, "vit_b_16": vit_b_16,
          "llama_block": llama_block}


def saved_bytes(fw, num_fwd_outputs):
    """Bytes of the activations fw saves: outputs after the user outputs that are no placeholder."""
    total, seen = 0, set()
    for n in fw.graph.output_node().args[0][num_fwd_outputs:]:
        if n is None or n.op == "placeholder" or n.name in seen:
            continue
        seen.add(n.name)
        v = n.meta.get("val")
        if isinstance(v, torch.Tensor):
            total += v.numel() * v.element_size()
    return total


def timed(f, *args, **kw):
    """(f(*args, **kw), its seconds), as timeit times: the garbage collector off meanwhile (after a
    collection), so that neither partitioner pays for a collection of the whole process's objects
    that it happened to trigger."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        r = f(*args, **kw)
        return r, time.perf_counter() - t0
    finally:
        gc.enable()


def fresh_copy(gm):
    """A copy of GraphModule `gm` with its own nodes (each node's meta a shallow copy, its fake
    values shared), for one more partition."""
    g = torch.fx.Graph()
    g.output(g.graph_copy(gm.graph, {}))
    return _make_graph_module(gm, g)


def measure(name, reps):
    model, step = MODELS[name]()
    rows = []

    def partition(joint, joint_inputs, **kw):
        n = len(joint.graph.nodes)
        times, unscheduled = [], []
        for _ in range(reps):
            (fw, _), s = timed(aotgrad.min_cut_partition, joint, joint_inputs, **kw)
            times.append(s)
            unscheduled.append(timed(aotgrad.min_cut_partition, joint, joint_inputs,
                                     schedule="none", **kw)[1])
        ours = saved_bytes(fw, kw["num_fwd_outputs"])
        # Of aotgrad's time: the two GraphModules built back through FX's Graph.create_node, one
        # call per node, which any partitioner that returns GraphModules pays (the last
        # partition's, as min_cut_partition builds them).
        e = aotgrad.explanations[-1]
        built = [timed(graph_modules, e, joint, joint_inputs)[1] for _ in range(reps)]
        # PyTorch's passes edit the joint graph they partition (a second partition of the same
        # graph does less): its median over fresh copies, the original last.
        theirs = []
        for g in [fresh_copy(joint) for _ in range(reps - 1)] + [joint]:
            (pfw, pbw), s = timed(min_cut_rematerialization_partition, g, joint_inputs, **kw)
            theirs.append(s)
        rows.append({"joint_nodes": n, "aotgrad_s": statistics.median(times),
                     "aotgrad_unscheduled_s": statistics.median(unscheduled),
                     "pytorch_s": statistics.median(theirs), "fx_build_s": statistics.median(built),
                     "aotgrad_saved": ours,
                     "pytorch_saved": saved_bytes(pfw, kw["num_fwd_outputs"])})
        return pfw, pbw

    boxed = lambda gm, _: make_boxed_func(gm.forward)  # noqa: E731
    from torch._inductor.decomposition import select_decomp_table
    backend = aot_autograd(fw_compiler=boxed, bw_compiler=boxed, partition_fn=partition,
                           decompositions=select_decomp_table())
    torch._dynamo.reset()
    t0 = time.perf_counter()
    step(torch.compile(model, backend=backend)).backward()
    total = time.perf_counter() - t0
    r = {"model": name, "graphs": len(rows), "compile_s": total,
         "joint_nodes": sum(x["joint_nodes"] for x in rows)}
    for k in ("aotgrad_s", "aotgrad_unscheduled_s", "pytorch_s", "fx_build_s", "aotgrad_saved",
              "pytorch_saved"):
        r[k] = sum(x[k] for x in rows)
    r["speedup"] = r["pytorch_s"] / r["aotgrad_s"] if r["aotgrad_s"] else float("inf")
    r["speedup_unscheduled"] = r["pytorch_s"] / r["aotgrad_unscheduled_s"]
    r["saved_ratio"] = r["aotgrad_saved"] / r["pytorch_saved"] if r["pytorch_saved"] else 1.0
    return r


BUDGETS = (1.0, 0.5, 0.2, 0.05)
# The training-step peaks are measured at batches where the activations, which the budget trades,
# are at least the gradients' size (at the partition part's batches, nanoGPT's 475 MiB of
# gradients alone make its peak).
PEAK_BATCH = {"nanogpt": 8, "resnet50": 16, "vit_b_16": 4, "llama_block": 16}


def step_peaks(name, steps, budgets=BUDGETS):
    """Per budget, a training step (forward and backward) under Inductor with each partitioner:
    aotgrad's (aotgrad.inductor(memory_budget=b)) and PyTorch's (torch.compile with
    activation_memory_budget b). The peak is the most CPU tensor storage alive at once during a
    step beyond what was alive before it (aotgrad's tracking allocator counts every allocation:
    Inductor's buffers, the gradients), the largest over `steps` steps after the compiling one;
    the step time is their median, with their spread (slowest minus fastest)."""
    _C.track_cpu_memory()
    rows = []
    for b in budgets:
        row = {"budget": b}
        for who in ("aotgrad", "pytorch"):
            model, step = MODELS[name](PEAK_BATCH[name])
            torch._dynamo.reset()
            backend = aotgrad.inductor(memory_budget=b) if who == "aotgrad" else "inductor"
            compiled = torch.compile(model, backend=backend)
            peaks, times = [], []
            with torch._functorch.config.patch(activation_memory_budget=b):
                step(compiled).backward()
                for _ in range(steps):
                    model.zero_grad(set_to_none=True)
                    _C.reset_cpu_peak_memory()
                    before = _C.cpu_memory_stats()["current_bytes"]
                    t0 = time.perf_counter()
                    step(compiled).backward()
                    times.append(time.perf_counter() - t0)
                    peaks.append(_C.cpu_memory_stats()["peak_bytes"] - before)
            row[who + "_peak"] = max(peaks)
            row[who + "_step_s"] = statistics.median(times)
            row[who + "_spread_s"] = max(times) - min(times)
        rows.append(row)
    return {"model": name, "rows": rows}


def monotone(rows, who):
    """Whether the peak never rises as the budget falls (rows by falling budget)."""
    return all(b[who + "_peak"] <= a[who + "_peak"] for a, b in zip(rows, rows[1:]))


def peaks_table(peaks, steps):
    lines = ["",
             "### The training-step peak against the memory budget, under Inductor",
             "",
             "Each model trains under Inductor with aotgrad's partitioner "
             "(`aotgrad.inductor(memory_budget=b)`) and with PyTorch's (`torch.compile` with "
             "`activation_memory_budget` b), in the same run. Peak: the most CPU tensor storage "
             "alive at once during one training step (forward and backward, gradients included) "
             "beyond what was alive before it, counted by aotgrad's tracking allocator under "
             "libtorch's CPU allocator, the largest of %d steps after the compiling one. Step: "
             "their median, +- half their spread. Batches: %s." % (
                 steps, ", ".join("%s %d" % kv for kv in PEAK_BATCH.items())),
             "",
             "| model | budget | aotgrad peak MiB | PyTorch peak MiB | aotgrad step ms | "
             "PyTorch step ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for p in peaks:
        if p.get("error"):
            lines.append("| %s | failed: %s | | | | |" % (p["model"], p["error"]))
        for r in p["rows"]:
            lines.append("| %s | %g | %.1f | %.1f | %.1f +- %.1f | %.1f +- %.1f |" % (
                p["model"], r["budget"], r["aotgrad_peak"] / 2**20, r["pytorch_peak"] / 2**20,
                r["aotgrad_step_s"] * 1e3, r["aotgrad_spread_s"] * 5e2,
                r["pytorch_step_s"] * 1e3, r["pytorch_spread_s"] * 5e2))
    lines.append("")
    for p in peaks:
        rows = p["rows"]
        if not rows:
            continue
        one = rows[0]
        gap = abs(one["aotgrad_step_s"] - one["pytorch_step_s"])
        noise = max(one["aotgrad_spread_s"], one["pytorch_spread_s"])
        lines.append(
            "- %s: aotgrad's peak is monotone in the budget: **%s** (%s MiB); PyTorch's: %s (%s "
            "MiB). Step time at budget %g within noise (the difference, %.1f ms, no more than the "
            "larger spread, %.1f ms): **%s** (%.2fx PyTorch's)." % (
                p["model"], "yes" if monotone(rows, "aotgrad") else "no",
                " -> ".join("%.1f" % (r["aotgrad_peak"] / 2**20) for r in rows),
                "yes" if monotone(rows, "pytorch") else "no",
                " -> ".join("%.1f" % (r["pytorch_peak"] / 2**20) for r in rows),
                one["budget"], gap * 1e3, noise * 1e3, "yes" if gap <= noise else "no",
                one["aotgrad_step_s"] / one["pytorch_step_s"]))
    return lines


def table(results, when, command, reps, peaks=(), steps=0):
    lines = ["## aotgrad's partitioner inside torch.compile, against PyTorch's",
             "",
             "`aotgrad.min_cut_partition` against PyTorch 2.11's `min_cut_rematerialization_"
             "partition` on the same joint graphs (torch.compile, the aot_autograd backend with "
             "Inductor's decomposition table), partitioned both ways in one process at the same "
             "point; each time is the median of %d runs (aotgrad's includes the joint graph "
             "crossing into aotgrad's IR node by node and the graphs coming back as GraphModules; "
             "PyTorch's partitions a fresh copy of the joint graph each time, as its passes edit "
             "the graph they partition), both after an untimed warm-up partition and with the "
             "garbage collector off while timed, as timeit times. aotgrad orders the "
             "two graphs with its memory schedule by default (`schedule=\"memory\"`, the "
             "order its budget prices); the next column is `schedule=\"none\"`, the "
             "partitioner's order, as PyTorch's. Saved: bytes of "
             "the activations the forward keeps "
             "(not parameters or inputs). `%s` (%s, torch %s, %d cores, load average %s at the "
             "end)." % (reps, command, when, torch.__version__, os.cpu_count(),
                        " ".join("%.2f" % v for v in os.getloadavg())),
             "",
             "| model | graphs | joint nodes | aotgrad ms | aotgrad ms, schedule none | "
             "of which FX build ms | PyTorch ms | x faster | x faster, schedule none | "
             "aotgrad saved MiB | PyTorch saved MiB | saved ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append("| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | **%.0fx** | %.0fx | %.2f | "
                     "%.2f | %.3f |" % (
                         r["model"], r["graphs"], r["joint_nodes"], r["aotgrad_s"] * 1e3,
                         r["aotgrad_unscheduled_s"] * 1e3, r["fx_build_s"] * 1e3,
                         r["pytorch_s"] * 1e3, r["speedup"], r["speedup_unscheduled"],
                         r["aotgrad_saved"] / 2**20, r["pytorch_saved"] / 2**20,
                         r["saved_ratio"]))
    worst = min(results, key=lambda r: r["speedup"])
    lines += ["",
              "- Partition time at least 50x faster than PyTorch's (issue 42): **%s** -- %.0fx to "
              "%.0fx (lowest: %s; %.0fx to %.0fx with schedule=\"none\")." % (
                  "met" if worst["speedup"] >= 50 else "missed", worst["speedup"],
                  max(r["speedup"] for r in results), worst["model"],
                  min(r["speedup_unscheduled"] for r in results),
                  max(r["speedup_unscheduled"] for r in results)),
              "- \"Of which FX build\": the forward and backward GraphModules built through "
              "FX's `Graph.create_node`, one call per node (aotgrad.fx.to_fx), timed alone. Where "
              "it exceeds PyTorch's time / 50, no partitioner that returns GraphModules built so "
              "can be 50x faster: %s." % "; ".join(
                  "%s %.1f ms against %.1f ms" % (r["model"], r["fx_build_s"] * 1e3,
                                                  r["pytorch_s"] * 1e3 / 50) for r in results),
              "- Saved bytes no more than PyTorch's on every model: **%s**." %
              ("met" if all(r["aotgrad_saved"] <= r["pytorch_saved"] for r in results)
               else "missed")]
    if peaks:
        lines += peaks_table(peaks, steps)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--peak-models", default=",".join(MODELS),
                    help="models whose training-step peaks are measured at each budget ('' none)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--benchmarks")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    peak_names = [m for m in args.peak_models.split(",") if m]
    unknown = [m for m in names + peak_names if m not in MODELS]
    if unknown:
        ap.error("unknown models %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # Both partitioners' first call in a process pays imports and caches (PyTorch's: some 0.3 s):
    # one untimed partition of the smallest model first.
    measure("llama_block", 1)
    results = []
    for name in names:
        r = measure(name, args.reps)
        print("%-12s %d graph(s), %d joint nodes: aotgrad %.1f ms, PyTorch %.1f ms (%.0fx); "
              "saved %.2f / %.2f MiB" % (name, r["graphs"], r["joint_nodes"], r["aotgrad_s"] * 1e3,
                                         r["pytorch_s"] * 1e3, r["speedup"],
                                         r["aotgrad_saved"] / 2**20, r["pytorch_saved"] / 2**20),
              flush=True)
        results.append(r)
    peaks = []
    for name in peak_names:
        try:
            p = step_peaks(name, args.steps)
        except Exception as e:  # noqa: BLE001  one model's failure is a row, not the run's end
            print("%-12s peaks failed: %s" % (name, str(e).strip().splitlines()[-1]), flush=True)
            peaks.append({"model": name, "rows": [], "error": str(e).strip().splitlines()[-1]})
            continue
        for r in p["rows"]:
            print("%-12s budget %-4g peak aotgrad %.1f MiB, PyTorch %.1f MiB; step %.1f / %.1f ms"
                  % (name, r["budget"], r["aotgrad_peak"] / 2**20, r["pytorch_peak"] / 2**20,
                     r["aotgrad_step_s"] * 1e3, r["pytorch_step_s"] * 1e3), flush=True)
        peaks.append(p)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"partition": results, "peaks": peaks}, f, indent=1)
    if args.benchmarks:
        cmd = "bench/python_partition.py" + ("" if args.models == ",".join(MODELS)
                                             else " --models=" + args.models)
        if args.peak_models != ",".join(MODELS):
            cmd += " --peak-models=" + args.peak_models
        benchmarks_md.put_section(args.benchmarks, "python_partition",
                                  table(results, when, cmd, args.reps, peaks, args.steps))


if __name__ == "__main__":
    main()
