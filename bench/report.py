#!/usr/bin/env python3
"""Writes BENCHMARKS.md and its SVG plots from the benchmark results of scripts/bench.sh.

  report.py machine                      print the machine and dependency versions as JSON (run it
                                         with the venv's Python: its torch, torchvision, torchaudio
                                         and networkx are the ones reported)
  report.py write --results=DIR --md=BENCHMARKS.md --svg-dir=docs/bench [--command=TEXT]

DIR holds machine.json (`report.py machine` at the start of the run), compile.json
(bench/compile_compare.py), train_step.json and call_overhead.json (Google Benchmark's JSON
output with repetitions, aggregates only). The plots are written as plain SVG, no plotting library.
Every target of the benchmark issue is stated as met or missed from the figures, with the
criterion used; nothing here is tuned to a target.
"""

import argparse
import datetime
import html
import json
import math
import os
import platform
import subprocess
import sys

# The Python packages of the venv (scripts/setup.sh) the benchmarks use: libtorch is the wheel's.
PYTHON_PACKAGES = ["torch", "torchvision", "torchaudio", "networkx"]
# The Debian packages that build the benchmarks.
DEBIAN_PACKAGES = ["libbenchmark-dev", "g++", "cmake", "ninja-build"]


def _run(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return ""


def machine(build_dir=None):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version
    versions = {}
    for p in PYTHON_PACKAGES:
        try:
            versions["%s (venv)" % p] = version(p)
        except PackageNotFoundError:
            versions["%s (venv)" % p] = "not installed"
    # torch's build: its CUDA version (None: a CPU-only build) and BLAS, from the torch running this.
    try:
        import torch
        versions["torch's CUDA build"] = ("CUDA %s (torch.version.cuda; GPU available: %s)"
                                          % (torch.version.cuda, "yes" if torch.cuda.is_available() else "no")
                                          if torch.version.cuda else "no (CPU-only build)")
        config = torch.__config__.show()
        blas = next((part.split("=", 1)[1] for part in config.replace(",", " ").split()
                     if part.startswith("BLAS_INFO=")), "")
    except ImportError:
        versions["torch's CUDA build"] = "not installed"
        blas = ""
    for p in DEBIAN_PACKAGES:
        versions[p] = _run(["dpkg-query", "-W", "-f=${Version}", p]) or "not installed"
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    build_type = ""
    if build_dir:
        try:
            with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
                for line in f:
                    if line.startswith("CMAKE_BUILD_TYPE:"):
                        build_type = line.split("=", 1)[1].strip()
        except OSError:
            pass
    return {"build_type": build_type, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "nproc": os.cpu_count(), "cpu": cpu, "memory_gb": round(mem_gb, 1),
            "kernel": platform.release(), "os": _run(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
            "load_start": os.getloadavg(), "blas": blas, "versions": versions}


# --- SVG ----------------------------------------------------------------------------------------

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def _ticks(lo, hi, log):
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        return [10.0 ** e for e in range(a, b + 1)], 10.0 ** a, 10.0 ** b
    span = hi - lo or abs(hi) or 1.0
    step = 10 ** math.floor(math.log10(span / 5))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 6:
            step *= m
            break
    start = math.floor(lo / step) * step
    ticks = [start]
    while ticks[-1] < hi - 1e-12 * span:
        ticks.append(start + step * len(ticks))
    return ticks, ticks[0], ticks[-1]


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return "%.0e" % v
    return "%g" % round(v, 6)


def svg_plot(series, title, xlabel, ylabel, logx=False, logy=False, width=720, height=440):
    """series: [{"name", "points": [(x, y, label)], "line": bool, "dashed": bool, "color"}].
    Returns SVG text."""
    xs = [p[0] for s in series for p in s["points"]]
    ys = [p[1] for s in series for p in s["points"]]
    if not xs:
        raise ValueError("nothing to plot in %r" % title)
    lox, hix = min(xs), max(xs)
    loy, hiy = min(ys), max(ys)
    if not logx:
        lox, hix = min(0.0, lox), hix * 1.05
    if not logy:
        loy, hiy = min(0.0, loy), hiy * 1.08
    xt, x0, x1 = _ticks(lox, hix, logx)
    yt, y0, y1 = _ticks(loy, hiy, logy)
    # The legend sits right of the plot: room for its longest name (about 7 px a character).
    left, right, top, bottom = 90, max(190, 40 + 7 * max(len(s["name"]) for s in series)), 40, 60
    width = max(width, left + right + 400)
    pw, ph = width - left - right, height - top - bottom

    def px(x):
        f = (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) if logx else (x - x0) / (x1 - x0)
        return left + f * pw

    def py(y):
        f = (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) if logy else (y - y0) / (y1 - y0)
        return top + ph - f * ph

    e = html.escape
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>' % (left, e(title))]
    for t in xt:
        x = px(t)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x, top, x, top + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, top + ph + 16, e(_fmt(t))))
    for t in yt:
        y = py(t)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y, left + pw, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, y + 4, e(_fmt(t))))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (left, top, pw, ph))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (left + pw / 2, height - 18, e(xlabel)))
    out.append('<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">%s</text>'
               % (top + ph / 2, top + ph / 2, e(ylabel)))
    for i, s in enumerate(series):
        c = s.get("color", COLORS[i % len(COLORS)])
        pts = [(px(x), py(y), label) for x, y, label in s["points"]]
        if s.get("line") and len(pts) > 1:
            dash = ' stroke-dasharray="6,4"' if s.get("dashed") else ""
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>'
                       % (c, dash, " ".join("%.1f,%.1f" % (x, y) for x, y, _ in pts)))
        for k, (x, y, label) in enumerate(pts):
            out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (x, y, c))
            if label:  # alternately above and below the point, so close neighbours stay readable
                out.append('<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>'
                           % (x + 6, y - 6 if k % 2 == 0 else y + 14, c, e(label)))
        ly = top + 14 + 18 * i
        out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>' % (left + pw + 16, ly - 4, c))
        out.append('<text x="%d" y="%d">%s</text>' % (left + pw + 26, ly, e(s["name"])))
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- figures ------------------------------------------------------------------------------------


def load_json(path):
    with open(path) as f:
        return json.load(f)


def gbench_medians(doc):
    """{run_name: {"time_us": median real time, counters...}} from Google Benchmark JSON with
    repetitions (aggregates); a run without repetitions counts as its own median."""
    out = {}
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    cvs = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "cv":
            cvs[b.get("run_name", b["name"])] = b["real_time"]  # a fraction
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "iteration" and name in out:
            continue
        row = {"time_us": b["real_time"] * scale[b["time_unit"]], "cpu_us": b["cpu_time"] * scale[b["time_unit"]],
               "repetitions": b.get("repetitions", 1)}
        for k, v in b.items():
            if k in ("peak_bytes_above_pre_step", "allocations_per_step", "compilations"):
                row[k] = v
        out[name] = row
    for name, cv in cvs.items():
        if name in out:
            out[name]["cv"] = cv
    return out


def budget_curve_points(train, model, time_key="time_us"):
    """[(budget, peak / eager's peak, step time / eager's)] of the min_cut variants of `model` at a
    fixed budget (aotgrad_min_cut is budget 1, aotgrad_min_cut_budget_B the others), by budget;
    `time_key` "cpu_us" compares CPU times (steadier than wall time on shared cores)."""
    eager = train.get("TrainStep/%s/eager" % model)
    if not eager:
        return []
    pts = []
    for name, row in train.items():
        parts = name.split("/")
        if len(parts) != 3 or parts[1] != model:
            continue
        v = parts[2]
        if v.endswith("_zero_grad"):  # gradients kept between steps: another eager reference
            continue
        if v == "aotgrad_min_cut":
            b = 1.0
        elif v.startswith("aotgrad_min_cut_budget_"):
            b = float(v[len("aotgrad_min_cut_budget_"):])
        else:
            continue
        pts.append((b, row["peak_bytes_above_pre_step"] / eager["peak_bytes_above_pre_step"],
                    row[time_key] / eager[time_key]))
    return sorted(pts)


def budget_curve_svg(train, models, with_times=True, time_key="time_us"):
    """Peak memory relative to eager against the budget, one line per model, eager at 1; with
    `with_times` each point labelled with its step time (`time_key`: wall "time_us" or "cpu_us")
    relative to eager's. None when no model has a budget sweep."""
    unit = "time" if time_key == "time_us" else "CPU time"
    series = []
    for m in models:
        pts = budget_curve_points(train, m, time_key)
        if len(pts) < 2:
            continue
        series.append({"name": m, "line": True,
                       "points": [(b, r, "%.2fx %s" % (t, unit) if with_times else "") for b, r, t in pts]})
    if not series:
        return None
    # Eager with every block checkpointed by hand (torch.utils.checkpoint's baseline) does not
    # depend on the budget: a dashed line at its peak, labelled with its step time.
    for i, m in enumerate([s["name"] for s in series]):
        eager = train.get("TrainStep/%s/eager" % m)
        ckpt = train.get("TrainStep/%s/eager_checkpoint" % m)
        if not eager or not ckpt:
            continue
        r = ckpt["peak_bytes_above_pre_step"] / eager["peak_bytes_above_pre_step"]
        t = ckpt[time_key] / eager[time_key]
        series.append({"name": m + " per-block checkpoint", "line": True, "dashed": True,
                       "color": COLORS[i % len(COLORS)],
                       "points": [(0.0, r, "%.2fx %s" % (t, unit) if with_times else ""), (1.0, r, "")]})
    series.append({"name": "eager", "line": True, "color": "#888",
                   "points": [(0.0, 1.0, ""), (1.0, 1.0, "")]})
    return svg_plot(series, "Training step peak against the activation memory budget (priced by peak)",
                    "activation memory budget", "peak memory / eager's")


def fit_exponent(points):
    """Least-squares slope of log(y) against log(x)."""
    lx = [math.log(x) for x, _ in points]
    ly = [math.log(y) for _, y in points]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else float("nan")


def mib(b):
    return "%.3f MiB" % (b / 2**20)


def ms(s):
    return "%.1f" % (s * 1e3)


def verdict(ok):
    return "**met**" if ok else "**missed**"


def write_report(results_dir, md_path, svg_dir, command):
    mach = load_json(os.path.join(results_dir, "machine.json"))
    comp = load_json(os.path.join(results_dir, "compile.json"))
    train = gbench_medians(load_json(os.path.join(results_dir, "train_step.json")))
    call = gbench_medians(load_json(os.path.join(results_dir, "call_overhead.json")))
    os.makedirs(svg_dir, exist_ok=True)
    svg_rel = os.path.relpath(svg_dir, os.path.dirname(os.path.abspath(md_path)))
    models = comp["models"]
    gpts = [m for m in models if m["model"].startswith("gpt_")]
    load_end = os.getloadavg()
    w = comp["gpt_width"]
    # The reference AOTAutograd compile.json measured ("PyTorch 2.11's AOTAutograd"; its results
    # are under the key "functorch").
    reference = comp["reference"]

    L = []
    L.append("# aotgrad benchmarks")
    L.append("")
    L.append("Written by `scripts/bench.sh` (%s); every figure below comes from that one run "
             "(but for the sections at the end that other tools write, each dated in its own "
             "text: OpInfo conformance, `scripts/opinfo_sweep.sh`; Real models, "
             "`scripts/model_sweep.sh`; saved bytes, `tools/saved_compare.py`; the memory budget "
             "against PyTorch, `bench/budget_compare.py`). Rerun it to reproduce them:" % mach["date"])
    L.append("")
    L.append("```sh\n%s\n```" % command)
    L.append("")
    L.append("## Machine")
    L.append("")
    L.append("| | |")
    L.append("|---|---|")
    L.append("| CPU | %s, %d logical cores (`nproc`) |" % (mach["cpu"], mach["nproc"]))
    L.append("| memory | %.1f GiB |" % mach["memory_gb"])
    L.append("| OS | %s, Linux %s |" % (mach["os"], mach["kernel"]))
    L.append("| load average (1, 5, 15 min) | at the start %s; at the end %s |"
             % (" ".join("%.2f" % x for x in mach["load_start"]), " ".join("%.2f" % x for x in load_end)))
    L.append("| BLAS | libtorch's: %s (torch.__config__) |" % (mach["blas"] or "?"))
    L.append("| aotgrad build | CMAKE_BUILD_TYPE=%s (scripts/build.sh) |" % (mach.get("build_type") or "?"))
    for p, v in mach["versions"].items():
        L.append("| %s | %s |" % (p, v))
    L.append("| PyTorch (Python) | %s, at::get_num_threads() %d |" % (comp["torch"], comp["torch_threads"]))
    L.append("")
    L.append("The machine is shared: other engineers were building on it during the run (see the load "
             "average). Absolute times move with the load; the ratios are measured in the same run, "
             "model by model, aotgrad and %s one right after the other." % reference)
    L.append("")

    # --- targets summary (filled below) ---
    targets_at = len(L)

    # --- compile time ---
    L.append("## Compile time")
    L.append("")
    L.append("Models (defined once, in `bench/compile_compare.py`, from `tools/export.py`'s classes): "
             "GPT-2-small width (nanoGPT's GPT: d %d, %d heads, tanh GELU, tied LM head) with 1, 2, 4, 12, "
             "24 and 48 layers at vocab %d, seq %d, batch %d -- the graphs of GPT-2-small-width models "
             "with cheap tensors -- and torchvision's resnet18 (BN in training mode, batch 4, 3x32x32). "
             "Every parameter requires grad."
             % (w["d"], w["heads"], w["vocab"], w["seq"], w["batch"]))
    L.append("")
    L.append("- **aotgrad**: `aotgrad compile MODEL.fx --grad=PARAMS --stats=json` (min-cut partition, "
             "core decompositions, the verifier after every stage: structural checks on the "
             "intermediate graphs, metadata re-inferred on the input, forward and backward graphs), "
             "run %d time(s) in fresh processes, "
             "median of each phase; the CLI's own timers, from reading the file to the partitioned graphs "
             "(process start-up, the op registry's construction included -- `startup_us`, about 0.8 ms "
             "-- not included, as %s is timed after `import torch` and a warm-up). There is no "
             "separate simplify stage in the training "
             "pipeline: the min-cut partitioner's CSE is inside `partition`."
             % (comp["aotgrad_reps"], reference))
    runs = ("first call, in a fresh Python process per model after an untimed warm-up compilation of a "
            "small MLP; median of up to %d compilation(s) (a model whose first compilation takes more "
            "than %g s is measured once: the `reps` column)." % (comp["functorch_reps"], comp["slow_seconds"]))
    L.append("- **%s**: `torch._functorch.aot_autograd.aot_function` on the module's functional "
             "call (PyTorch's `aot_module`, the tied LM head traced under both its names), "
             "`partition_fn=min_cut_rematerialization_partition`, Inductor's decomposition table "
             "(`torch._inductor.decomposition.select_decomp_table()`), no-op compilers (make_boxed_func) "
             "and no Dynamo (no capture), " % reference + runs +
             " Phases: `forward` -- the inputs made fake and the forward run under functionalization "
             "to collect its output and mutation metadata; `joint` -- the one make_fx of forward + "
             "backward, which functionalizes and decomposes as it traces; `post-trace` -- the joint "
             "graph's clean-up passes up to the partitioner; `partition`; `total` -- up to the forward "
             "compiler. It traces with fake tensors: no kernels run.")
    L.append("- aotgrad starts from the exported text: the export (`tools/export.py`, make_fx, timed once) "
             "is PyTorch's capture, shown separately and not in aotgrad's total; `ratio` is %s "
             "total / aotgrad total, `ratio incl. export` is %s total / (export + aotgrad total)." % (reference, reference))
    L.append("")
    L.append("Totals in ms (medians), process CPU time and wall time; the phases follow. On this shared "
             "machine a process waits for a core for part of its wall time, the longer the run the more "
             "surely, so the ratios and the growth are judged on CPU time and shown on wall time too. aotgrad: "
             "the process CPU time (std::clock; its compilation is single-threaded). %s: the CPU "
             "time of its Python thread (time.thread_time), which leaves out libtorch's worker threads -- "
             "which its fake-tensor traces hardly use: they run no kernels -- so it is a lower bound "
             "of its CPU time and the CPU ratio errs in its favour." % reference)
    L.append("")
    L.append("| model | fw ops | joint nodes (aotgrad / {0}) | **aotgrad CPU** | **{0} CPU** | **ratio, CPU** | "
             "aotgrad wall | {0} wall | ratio, wall | {0} reps | export (wall) | ratio incl. export, wall |".format(reference))
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        a, f = m["aotgrad"]["phases_s"], m["functorch"]["phases_s"]
        ac, fc = m["aotgrad"]["cpu_phases_s"], m["functorch"]["cpu_phases_s"]
        L.append("| %s | %d | %d / %d | **%s** | **%s** | **%.0f×** | %s | %s | %.0f× | %d | %s | %.1f× |"
                 % (m["model"], m["forward_ops"], m["aotgrad"]["joint_nodes"], m["functorch"]["joint_nodes"],
                    ms(ac["total"]), ms(fc["total"]), m["cpu_ratio"], ms(a["total"]), ms(f["total"]), m["ratio"],
                    m["functorch"]["reps"], ms(m["export_s"]), f["total"] / (a["total"] + m["export_s"])))
    L.append("")
    for who, key, cols in (("aotgrad", "aotgrad", [("parse", "parse"), ("decompose composites", "decompose_composites"),
                                                   ("functionalize", "functionalize"), ("joint", "joint"),
                                                   ("decompose", "decompose"), ("partition", "partition"),
                                                   ("total", "total")]),
                           (reference, "functorch", [("forward", "forward"), ("joint trace", "joint_trace"),
                                                     ("post-trace", "post_trace"), ("partition", "partition"),
                                                     ("total", "total")])):
        L.append("%s phases, ms, CPU time / wall time (the median of each phase, so they need not add up to "
                 "the median total):" % who)
        L.append("")
        L.append("| model | " + " | ".join(c for c, _ in cols) + " |")
        L.append("|---" * (len(cols) + 1) + "|")
        for m in models:
            c, wl = m[key]["cpu_phases_s"], m[key]["phases_s"]
            L.append("| %s | " % m["model"] + " | ".join("%s / %s" % (ms(c[k]), ms(wl[k])) for _, k in cols) + " |")
        L.append("")
    # Plot: compile time against graph size.
    series = [
        {"name": "aotgrad (GPT)", "line": True,
         "points": [(m["forward_ops"], m["aotgrad"]["cpu_phases_s"]["total"], m["model"]) for m in gpts]},
        {"name": reference + " (GPT)", "line": True,
         "points": [(m["forward_ops"], m["functorch"]["cpu_phases_s"]["total"], m["model"]) for m in gpts]},
    ]
    others = [m for m in models if not m["model"].startswith("gpt_")]
    if others:
        series.append({"name": "aotgrad (resnet18)", "color": "#17becf",
                       "points": [(m["forward_ops"], m["aotgrad"]["cpu_phases_s"]["total"], m["model"]) for m in others]})
        series.append({"name": reference + " (resnet18)", "color": "#ff7f0e",
                       "points": [(m["forward_ops"], m["functorch"]["cpu_phases_s"]["total"], m["model"]) for m in others]})
    with open(os.path.join(svg_dir, "compile_time.svg"), "w") as fsvg:
        fsvg.write(svg_plot(series, "Compile CPU time against graph size (log-log)", "forward graph ATen ops",
                            "compile time, process CPU (s)", logx=True, logy=True))
    L.append("![compile time against graph size](%s/compile_time.svg)" % svg_rel)
    L.append("")
    big = [m for m in gpts if m["model"] not in ("gpt_1l", "gpt_2l")]
    fit_set = big if len(big) >= 2 else gpts
    def slope(who, key):
        if len(fit_set) < 2:
            return float("nan")
        return fit_exponent([(m["forward_ops"], m[who][key]["total"]) for m in fit_set])
    exp_a, exp_f = slope("aotgrad", "cpu_phases_s"), slope("functorch", "cpu_phases_s")
    exp_aw, exp_fw = slope("aotgrad", "phases_s"), slope("functorch", "phases_s")
    L.append("Growth: the slope of log(time) against log(forward ops) over %s is %.2f for aotgrad and "
             "%.2f for %s on CPU time (%.2f and %.2f on wall time; 1 is linear, nan: fewer than "
             "two GPT models). aotgrad's CPU time per joint node: %s."
             % (", ".join(m["model"] for m in fit_set), exp_a, exp_f, reference, exp_aw, exp_fw,
                ", ".join("%s %.1f µs" % (m["model"], 1e6 * m["aotgrad"]["cpu_phases_s"]["total"] / m["aotgrad"]["joint_nodes"])
                          for m in gpts)))
    L.append("")

    # --- saved activations ---
    L.append("## Saved activation bytes")
    L.append("")
    L.append("Unique storage bytes of the values the forward saves for the backward that are not "
             "parameters, buffers or inputs (views of them count as them): aotgrad's "
             "`saved_activation_bytes` from `aotgrad compile --stats=json`, %s's from the tensors "
             "its compiled forward returns (`tools/functorch_min_cut.py`'s `saved_summary`); its "
             "default_partition runs on the same joint graph as its min-cut (a copy taken before the "
             "min-cut partitioner, which edits the graph it is given). Saved values counted in "
             "parentheses." % reference)
    L.append("")
    L.append("| model | aotgrad default | aotgrad min-cut | {0} default | {0} min-cut | "
             "aotgrad min-cut / {0} min-cut |".format(reference))
    L.append("|---|---|---|---|---|---|")
    saved_ok = True
    for m in models:
        a, f = m["aotgrad"], m["functorch"]
        am, fm = a["saved_activation_bytes"]["min_cut"], f["saved_activation_bytes"]["min_cut"]
        saved_ok = saved_ok and am <= fm
        L.append("| %s | %s (%d) | %s (%d) | %s (%d) | %s (%d) | %.3f |"
                 % (m["model"], mib(a["saved_activation_bytes"]["default"]), a["saved_values"]["default"],
                    mib(am), a["saved_values"]["min_cut"], mib(f["saved_activation_bytes"]["default"]),
                    f["saved_values"]["default"], mib(fm), f["saved_values"]["min_cut"], am / fm if fm else float("nan")))
    L.append("")

    # --- training step ---
    L.append("## Training step")
    L.append("")
    L.append("`train_step_bench` (Google Benchmark, median of its repetitions): one step (grads reset to "
             "undefined, forward with the loss, backward; cv: the coefficient of variation of the "
             "repetitions' step times) of the exported GPT blocks `gpt_block` (vocab 64, "
             "d 32, 2 heads, seq 8, batch 2) and `gpt_block_wide` (vocab 64, d 64, 4 heads, seq 64, batch 8: "
             "activations outweigh parameters), by the eager libtorch C++ model and by CompiledFunction "
             "(interpreter backend). Peak memory: the tracking allocator's peak of tensor storage above "
             "the level before the step. These are the transformer models the benchmark has an eager C++ "
             "twin for; the GPT-2-width models above are not in it.")
    L.append("")
    L.append("Step time is wall time (CPU time, shown beside it, counts every thread of the process, "
             "libtorch's BLAS and OpenMP threads too).")
    L.append("")
    L.append("| model | variant | step time (µs) | cv | vs eager | CPU time (µs) | peak memory | vs eager | allocations |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    train_models = []
    for name in train:
        parts = name.split("/")
        if len(parts) == 3 and parts[1] not in train_models:
            train_models.append(parts[1])
    train_ok = {}
    for tm in train_models:
        pts = []
        for name, row in train.items():
            parts = name.split("/")
            if len(parts) != 3 or parts[1] != tm:
                continue
            variant = parts[2]
            # A *_zero_grad variant keeps its gradients between steps, as eager_zero_grad does.
            ref = "eager_zero_grad" if variant.endswith("_zero_grad") else "eager"
            eager = train.get("TrainStep/%s/%s" % (tm, ref))
            rt = row["time_us"] / eager["time_us"] if eager else float("nan")
            rm = row["peak_bytes_above_pre_step"] / eager["peak_bytes_above_pre_step"] if eager else float("nan")
            if variant != ref:
                train_ok.setdefault(tm, []).append((variant, rm < 1 and rt <= 1.05, rt, rm))
            L.append("| %s | %s | %.1f | %s | %.2f× | %.1f | %s | %.3f× | %d |"
                     % (tm, variant, row["time_us"], "%.1f%%" % (100 * row["cv"]) if "cv" in row else "—", rt,
                        row["cpu_us"], mib(row["peak_bytes_above_pre_step"]), rm,
                        row.get("allocations_per_step", 0)))
            pts.append((row["time_us"], row["peak_bytes_above_pre_step"] / 2**20, variant.replace("aotgrad_", "")))
        with open(os.path.join(svg_dir, "train_step_%s.svg" % tm), "w") as fsvg:
            fsvg.write(svg_plot([{"name": tm, "points": pts}], "Training step: peak memory against time, " + tm,
                                "median step time (µs)", "peak memory above pre-step (MiB)"))
    L.append("")
    for tm in train_models:
        L.append("![training step peak memory against step time, %s](%s/train_step_%s.svg)" % (tm, svg_rel, tm))
        L.append("")
    curve = budget_curve_svg(train, train_models)
    if curve:
        with open(os.path.join(svg_dir, "budget_curve.svg"), "w") as fsvg:
            fsvg.write(curve)
        L.append("![training step peak memory against the activation memory budget](%s/budget_curve.svg)" % svg_rel)
        L.append("")

    # --- call overhead ---
    L.append("## Call overhead")
    L.append("")
    L.append("`call_overhead_bench` (Google Benchmark, median of its repetitions): `relu(x * w + b)` on "
             "f32[4] tensors. Inference: the three ATen ops called directly, the Interpreter on the graph, "
             "CompiledGraph and aot_function (under no_grad, compiled before timing); overhead = time - "
             "direct. Training (`.sum()` of it, w and b requiring grad, forward + backward): eager "
             "libtorch autograd against CompiledFunction and aot_function; overhead = time - eager.")
    L.append("")
    L.append("Google Benchmark's CPU time is the process's CPU time; with 2 cores shared by several "
             "builds, wall time also counts the time the benchmark waited for a core, so the overhead "
             "is judged on CPU time (these tiny ops run on one thread) and wall time is shown beside it.")
    L.append("")
    L.append("| benchmark | CPU time (µs) | overhead, CPU (µs) | wall time (µs) | overhead, wall (µs) |")
    L.append("|---|---|---|---|---|")
    direct = call.get("BM_Inference_DirectAten")
    eager_step = call.get("BM_TrainStep_EagerAutograd")
    overheads = {}
    for name, row in call.items():
        ref = direct if name.startswith("BM_Inference") else eager_step
        oh = row["cpu_us"] - ref["cpu_us"] if ref else float("nan")
        ohw = row["time_us"] - ref["time_us"] if ref else float("nan")
        overheads[name] = (oh, ohw)
        L.append("| %s | %.2f | %s | %.2f | %s |" % (name, row["cpu_us"], "—" if row is ref else "%.2f" % oh,
                                                   row["time_us"], "—" if row is ref else "%.2f" % ohw))
    L.append("")

    startup = None
    startup_path = os.path.join(results_dir, "cli_startup.json")
    if os.path.exists(startup_path):
        startup = load_json(startup_path)
        L.append("## Command-line start-up")
        L.append("")
        L.append("`bench/cli_startup.sh` (hyperfine, median of %d runs per command, %d for `run`): the "
                 "process wall time of `aotgrad` on a generated chain of %d nodes (two inputs, add, mul, "
                 "sigmoid and relu in turn). check, ops, opt and compile do not load libtorch; run does "
                 "(the command line's libtorch module, aotgrad_torch.so), which most of its time is."
                 % (startup["commands"]["check"]["runs"], startup["commands"]["run"]["runs"],
                    startup["graph_nodes"]))
        L.append("")
        L.append("| command | median (ms) | min (ms) | max (ms) |")
        L.append("|---|---|---|---|")
        for name, row in startup["commands"].items():
            L.append("| `aotgrad %s` | %.1f | %.1f | %.1f |" % (name.replace("_grad", " --grad=all"),
                                                           row["median_ms"], row["min_ms"], row["max_ms"]))
        L.append("")

    # --- targets ---
    T = ["## Targets", ""]
    ratios = [m["cpu_ratio"] for m in models]
    worst = min(models, key=lambda m: m["cpu_ratio"])
    wall = [m["ratio"] for m in models]
    incl = [m["functorch"]["phases_s"]["total"] / (m["aotgrad"]["phases_s"]["total"] + m["export_s"]) for m in models]
    T.append("- Compile at least 100× faster than %s on the same model: %s -- %.0f× to %.0f× on CPU "
             "time (lowest: %s), %.0f× to %.0f× on wall time. Counting the make_fx export aotgrad's input "
             "comes from (wall time), %.1f× to %.1f×."
             % (reference, verdict(min(ratios) >= 100), min(ratios), max(ratios), worst["model"], min(wall), max(wall),
                min(incl), max(incl)))
    if math.isnan(exp_a):
        T.append("- Linear in graph size: not measured (fewer than two GPT models in this run).")
    else:
        T.append("- Linear in graph size: %s -- slope %.2f of log(CPU time) against log(forward ops) over %s "
                 "(criterion: at most 1.10; on wall time %.2f)."
                 % (verdict(exp_a <= 1.10), exp_a, ", ".join(m["model"] for m in fit_set), exp_aw))
    T.append("- Saved activation bytes no larger than %s's min-cut on every model: %s." % (reference, verdict(saved_ok)))
    for tm in train_models:
        rows = train_ok.get(tm, [])
        good = [v for v, ok, _, _ in rows if ok]
        mc = [r for r in rows if r[0] == "aotgrad_min_cut"]
        detail = "; ".join("%s %.2f× time, %.3f× peak" % (v.replace("aotgrad_", ""), rt, rm) for v, _, rt, rm in rows)
        T.append("- Training-step peak memory below eager at no more than 5%% extra step time, %s: %s -- %s "
                 "(met by: %s; the default configuration, min_cut: %s)."
                 % (tm, verdict(bool(mc) and mc[0][1]), detail, ", ".join(good) or "none",
                    "yes" if mc and mc[0][1] else "no"))
    for name in ("BM_Inference_CompiledGraph", "BM_Inference_AotFunction"):
        if name in overheads:
            T.append("- Call overhead under 5 µs, %s: %s -- %.2f µs CPU time over the direct ATen calls "
                     "(wall time: %.2f µs)." % (name.replace("BM_Inference_", ""), verdict(overheads[name][0] < 5),
                                                overheads[name][0], overheads[name][1]))
    if startup:
        check = startup["commands"]["check"]["median_ms"]
        T.append("- `aotgrad check` on a %d-node graph within %.0f ms of process wall time: %s -- %.1f ms "
                 "median (`aotgrad run`, which loads libtorch: %.0f ms)."
                 % (startup["graph_nodes"], startup["target_check_ms"],
                    verdict(check <= startup["target_check_ms"]), check,
                    startup["commands"]["run"]["median_ms"]))
    T.append("")
    T.append("Where a target is missed, the reason is in the section's figures: see the notes below.")
    T.append("")
    notes = notes_for(models, train_ok, overheads, exp_a, reference)
    T.extend(notes)
    L[targets_at:targets_at] = T
    text = "\n".join(L) + "\n" + _kept_sections(md_path)
    tmp = md_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, md_path)


def _kept_sections(md_path):
    """The sections the sweeps write into BENCHMARKS.md between their markers, kept as they are:
    OpInfo conformance (scripts/opinfo_sweep.sh), Real models (scripts/model_sweep.sh), saved
    bytes against PyTorch's AOTAutograd (tools/saved_compare.py), the memory budget against
    PyTorch's (bench/budget_compare.py --benchmarks), the dynamic capture's two ways
    (bench/dynamic_bench's Capture benchmarks, dated in its text) and aotgrad's partitioner inside
    torch.compile against PyTorch's (bench/python_partition.py --benchmarks)."""
    try:
        with open(md_path) as f:
            old = f.read()
    except OSError:
        return ""
    kept = ""
    for name in ("opinfo_sweep", "model_sweep", "saved_compare", "budget_compare",
                 "dynamic_capture", "python_partition"):
        begin, end = "<!-- %s: begin -->" % name, "<!-- %s: end -->" % name
        if begin in old and end in old:
            kept += "\n" + old[old.index(begin):old.index(end) + len(end)] + "\n"
    return kept


def notes_for(models, train_ok, overheads, exp_a, reference):
    """Facts behind missed targets, computed from the figures (not opinions)."""
    out = []
    for m in models:
        if m["cpu_ratio"] < 100:
            a = m["aotgrad"]["cpu_phases_s"]
            top = max((k for k in a if k != "total"), key=lambda k: a[k])
            out.append("- %s: compile ratio %.0f× (CPU time); aotgrad's largest phase is %s (%.1f ms of %.1f ms "
                       "CPU), %.1f µs per joint node."
                       % (m["model"], m["cpu_ratio"], top, a[top] * 1e3, a["total"] * 1e3,
                          1e6 * a["total"] / m["aotgrad"]["joint_nodes"]))
    for m in models:
        am, fm = m["aotgrad"]["saved_activation_bytes"]["min_cut"], m["functorch"]["saved_activation_bytes"]["min_cut"]
        if am > fm:
            out.append("- %s: aotgrad's min-cut saves %s, %s's %s." % (m["model"], mib(am), reference, mib(fm)))
    for tm, rows in train_ok.items():
        for v, ok, rt, rm in rows:
            if v == "aotgrad_min_cut" and ok and rm > 0.99:
                out.append("- %s, min_cut: the peak is below eager's only nominally (%.1f%% lower); its step "
                           "time is %.2f× eager's (see the cv column for the spread of the repetitions)."
                           % (tm, 100 * (1 - rm), rt))
            if v == "aotgrad_min_cut" and not ok:
                why = []
                if rm >= 1:
                    why.append("its peak is %.2f× eager's" % rm)
                if rt > 1.05:
                    why.append("its step takes %.2f× eager's time" % rt)
                out.append("- %s, min_cut: %s." % (tm, " and ".join(why)))
    if exp_a > 1.10:
        out.append("- aotgrad's compile CPU time grows faster than linearly (slope %.2f)." % exp_a)
    if out:
        out.insert(0, "Notes:")
        out.append("")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("machine", help="print the machine and dependency versions as JSON")
    m.add_argument("--build-dir", help="the build directory (for its CMAKE_BUILD_TYPE)")
    w = sub.add_parser("write", help="write BENCHMARKS.md and the SVG plots")
    w.add_argument("--results", required=True)
    w.add_argument("--md", required=True)
    w.add_argument("--svg-dir", required=True)
    w.add_argument("--command", default="scripts/bench.sh")
    args = p.parse_args(argv)
    if args.cmd == "machine":
        print(json.dumps(machine(args.build_dir), indent=1))
        return 0
    for f in ("machine.json", "compile.json", "train_step.json", "call_overhead.json"):
        if not os.path.exists(os.path.join(args.results, f)):
            print("report.py: error: %s has no %s" % (args.results, f), file=sys.stderr)
            return 1
    write_report(args.results, args.md, args.svg_dir, args.command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
