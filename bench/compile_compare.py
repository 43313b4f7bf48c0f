#!/usr/bin/env python3
"""aotgrad against PyTorch's own AOTAutograd (torch._functorch.aot_autograd of the venv's PyTorch,
2.11): compile time per phase and saved activation bytes, on the same model definitions.

Models: GPT-2-small-width language models (tools/export.py's nanoGPT-style GPT at d 768, 12
heads) of 1, 2, 4, 12, 24 and 48 layers, at a small vocabulary, sequence and batch so that the
graphs are GPT-2's but the tensors are cheap; and torchvision's resnet18 (tools/export.py's).

For each model this driver
  - exports the forward with its loss to <dir>/<model>.fx (tools/export.py, graph only, timed once:
    aotgrad's input is that text, so the export is PyTorch's capture, not part of aotgrad's time);
  - runs `aotgrad compile <model>.fx --grad=<parameters> --stats=json` N times with the min-cut
    partition and once with the default partition, in fresh processes, and keeps the median of
    every phase and of the total, wall clock and process CPU time (the CLI's own timers: process
    start-up is not included);
  - in a fresh Python process per model, after an untimed warm-up compilation of a small model,
    compiles the model R times with the reference AOTAutograd, min_cut_rematerialization_partition
    and no-op compilers, no Dynamo (the module is called through aot_module / aot_function: no
    capture), timing (median over the repetitions; wall clock and the CPU time of the Python
    thread, which leaves out the BLAS worker threads: a lower bound of the reference's work) the
    phases FunctorchTimer describes (Inductor's decomposition table, fake tensors): the metadata
    pass over the forward, the one joint trace that functionalizes and decomposes, the joint
    graph's clean-up passes, then the partition and the total up to the forward compiler; a model
    whose first compilation takes longer than --slow-seconds is measured once. The results stay
    under the key "functorch" (and the --functorch-* options keep their names); "reference" names
    the one that ran ("PyTorch 2.11's AOTAutograd", from torch.__version__);
  - measures saved activation bytes (unique storage bytes of saved values that are not parameters,
    buffers or inputs) for aotgrad default and min-cut (the CLI's saved_activation_bytes) and for
    the reference's default and min-cut (tools/functorch_min_cut.py's saved_summary on the tensors
    the compiled forward returns; default_partition runs on a copy of the same joint graph).

Writes one JSON document (--out). usage:
  PYTHON bench/compile_compare.py --aotgrad=BUILD/aotgrad --dir=OUT [--models=...]
      [--aotgrad-reps=9] [--functorch-reps=3] [--slow-seconds=40] --out=OUT/compile.json
"""

import argparse
import copy
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import torch  # noqa: E402

import export  # noqa: E402  the model definitions
import functorch_min_cut  # noqa: E402  the reference's aot_module, REFERENCE, saved_summary

GPT_LAYERS = (1, 2, 4, 12, 24, 48)
GPT_WIDTH = {"vocab": 512, "d": 768, "heads": 12, "seq": 32}
GPT_BATCH = 2
RESNET_BATCH = 4


def gpt(layers):
    torch.manual_seed(0)
    m = export.GPT(vocab=GPT_WIDTH["vocab"], d=GPT_WIDTH["d"], heads=GPT_WIDTH["heads"],
                   seq=GPT_WIDTH["seq"], layers=layers)
    shape = (GPT_BATCH, GPT_WIDTH["seq"])
    return m, {"idx": torch.randint(0, GPT_WIDTH["vocab"], shape),
               "targets": torch.randint(0, GPT_WIDTH["vocab"], shape)}


def resnet18():
    torch.manual_seed(0)
    m = export.resnet18_with_loss()
    m.train()
    return m, {"x": torch.randn(RESNET_BATCH, 3, 32, 32), "target": torch.randint(0, 10, (RESNET_BATCH,))}


def _models():
    models = {}
    for n in GPT_LAYERS:
        desc = ("GPT, %d layer%s, d %d, %d heads, vocab %d, seq %d, batch %d"
                % (n, "" if n == 1 else "s", GPT_WIDTH["d"], GPT_WIDTH["heads"], GPT_WIDTH["vocab"],
                   GPT_WIDTH["seq"], GPT_BATCH))
        models["gpt_%dl" % n] = (desc, lambda n=n: gpt(n))
    models["resnet18"] = ("torchvision resnet18, BN in training mode, batch %d, 3x32x32" % RESNET_BATCH,
                          resnet18)
    return models


MODELS = _models()


def grad_spec(model):
    """The trainable parameters' placeholder names, as tools/export.py --print-grad prints them."""
    return ",".join("p_" + n.replace(".", "_") for n, p in model.named_parameters() if p.requires_grad)


def median_phases(runs):
    """{phase: median} over a list of {phase: seconds} dicts with the same keys."""
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


# --- aotgrad ------------------------------------------------------------------------------------


def aotgrad_compile(binary, fx, grad, partition):
    cmd = [binary, "compile", fx, "--grad=" + grad, "--stats=json", "--partition=" + partition]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd[:3]), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def measure_aotgrad(binary, fx, grad, reps):
    runs, cpu_runs, last = [], [], None
    for _ in range(reps):
        last = aotgrad_compile(binary, fx, grad, "min_cut")
        phases = {k: v / 1e6 for k, v in last["phases_us"].items()}
        phases["total"] = last["total_us"] / 1e6
        runs.append(phases)
        cpu = {k: v / 1e6 for k, v in last["phases_cpu_us"].items()}
        cpu["total"] = last["total_cpu_us"] / 1e6
        cpu_runs.append(cpu)
    default = aotgrad_compile(binary, fx, grad, "default")
    return {"reps": reps, "phases_s": median_phases(runs), "cpu_phases_s": median_phases(cpu_runs),
            "totals_s": [r["total"] for r in runs],
            "joint_nodes": last["joint_nodes"], "fw_nodes": last["fw_nodes"], "bw_nodes": last["bw_nodes"],
            "saved_activation_bytes": {"min_cut": last["saved_activation_bytes"],
                                       "default": default["saved_activation_bytes"]},
            "saved_values": {"min_cut": len(last["saved"]), "default": len(default["saved"])},
            "default_total_s": default["total_us"] / 1e6}


# --- PyTorch's AOTAutograd (results under the key "functorch") -----------------------------------


REFERENCE = functorch_min_cut.REFERENCE  # "PyTorch 2.11's AOTAutograd"
REFERENCE_PHASES = ("forward", "joint_trace", "post_trace", "partition", "total")


class FunctorchTimer:
    """Times PyTorch's own AOTAutograd from the outside, on the same model and with the same
    partitioner, no-op compilers and no Dynamo (the model is called through aot_module /
    aot_function directly: no capture).

    torch._functorch.aot_autograd.aot_function with Inductor's decomposition table, fake tensors.
    Phases: `forward` -- the inputs made fake and the forward run under functionalization
    to collect the metadata of its outputs and mutations; `joint_trace` -- the one make_fx of
    forward + backward, which functionalizes and decomposes as it traces (graph_capture's
    _create_graph, wrapped); `post_trace` -- the joint graph's clean-up passes up to the partition
    function; `partition`; `total` -- up to the forward compiler."""

    def __init__(self):
        self.traces = []
        import torch._functorch._aot_autograd.graph_capture as graph_capture
        real = graph_capture._create_graph

        graph_capture._create_graph = lambda *a, **k: self._timed(real, *a, **k)
        self.expected_traces = 1

    def _timed(self, fn, *args, **kwargs):
        """fn(*args, **kwargs), its wall and CPU interval appended to self.traces."""
        start, start_cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            self.traces.append((start, time.perf_counter(), start_cpu, time.thread_time()))

    @staticmethod
    def _compile(model, fw_compiler, bw_compiler, partition_fn):
        """The reference's aot_module(model, ...) with the decompositions Inductor uses (the GPT's
        tied parameter traced under both its names: tools/functorch_min_cut.py's aot_module)."""
        return functorch_min_cut.aot_module(model, fw_compiler=fw_compiler, bw_compiler=bw_compiler,
                                            partition_fn=partition_fn,
                                            decompositions=functorch_min_cut.inductor_decompositions())

    def compile_once(self, name, record_saved):
        from torch._functorch.aot_autograd import make_boxed_func
        from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition
        model, inputs = MODELS[name][1]()
        model.train()
        rec = {}

        def partition(joint, joint_inputs, **kwargs):
            rec["partition_start"], rec["partition_start_cpu"] = time.perf_counter(), time.thread_time()
            rec["joint_nodes"] = len(joint.graph.nodes)
            rec["copy_s"] = rec["copy_cpu_s"] = 0.0
            if record_saved:
                # The min-cut partitioner edits the joint graph it is given (the default
                # partition of the edited graph saves other values), so the default
                # partition gets a copy taken here; the copy's time is taken out of the total.
                rec["joint"], rec["joint_inputs"], rec["partition_kwargs"] = copy.deepcopy(joint), joint_inputs, kwargs
                copied, copied_cpu = time.perf_counter(), time.thread_time()
                rec["copy_s"], rec["copy_cpu_s"] = copied - rec["partition_start"], copied_cpu - rec["partition_start_cpu"]
                rec["partition_start"], rec["partition_start_cpu"] = copied, copied_cpu
            fw, bw = min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
            rec["partition_end"], rec["partition_end_cpu"] = time.perf_counter(), time.thread_time()
            rec["saved_names"] = [n.name for n in bw.graph.nodes
                                  if n.op == "placeholder" and "tangents" not in n.name]
            return fw, bw

        def fw_compiler(gm, example_inputs):
            rec["compiled"], rec["compiled_cpu"] = time.perf_counter(), time.thread_time()
            if not record_saved:
                return make_boxed_func(gm)

            def run(*args):
                outs = gm(*args)
                rec["fw_args"], rec["fw_outs"] = list(args), list(outs)
                return outs
            return make_boxed_func(run)

        compiled = self._compile(model, fw_compiler, lambda gm, _: make_boxed_func(gm), partition)
        self.traces.clear()
        start, start_cpu = time.perf_counter(), time.thread_time()
        loss = compiled(**inputs)
        end = time.perf_counter()
        if len(self.traces) != self.expected_traces:
            raise RuntimeError("expected %s to trace %d time(s), saw %d"
                               % (REFERENCE, self.expected_traces, len(self.traces)))
        t1s, t1e, c1s, c1e = self.traces[0]
        phases = {"forward": t1s - start, "joint_trace": t1e - t1s,
                  "post_trace": rec["partition_start"] - rec["copy_s"] - t1e,
                  "partition": rec["partition_end"] - rec["partition_start"],
                  "total": rec["compiled"] - start - rec["copy_s"]}
        cpu = {"forward": c1s - start_cpu, "joint_trace": c1e - c1s,
               "post_trace": rec["partition_start_cpu"] - rec["copy_cpu_s"] - c1e,
               "partition": rec["partition_end_cpu"] - rec["partition_start_cpu"],
               "total": rec["compiled_cpu"] - start_cpu - rec["copy_cpu_s"]}
        result = {"phases": phases, "cpu_phases": cpu, "first_call_s": end - start,
                  "joint_nodes": rec["joint_nodes"],
                  "loss": loss.item()}
        if record_saved:
            names = rec["saved_names"]
            outs = rec["fw_outs"]
            _, mc = functorch_min_cut.saved_summary(names, outs[len(outs) - len(names):], rec["fw_args"])
            fw_d, bw_d = default_partition(rec["joint"], rec["joint_inputs"], **rec["partition_kwargs"])
            names_d = [n.name for n in bw_d.graph.nodes if n.op == "placeholder" and "tangents" not in n.name]
            # The joint is traced with fake tensors: the default partition's forward runs on the
            # real arguments the min-cut forward ran on (both take the joint's primals).
            primals = rec["fw_args"]
            n_in = sum(1 for n in fw_d.graph.nodes if n.op == "placeholder")
            if n_in != len(primals):
                raise RuntimeError("default_partition's forward takes %d inputs, the min-cut forward ran on %d"
                                   % (n_in, len(primals)))
            with torch.no_grad():
                outs_d = list(fw_d(*primals))
            _, df = functorch_min_cut.saved_summary(names_d, outs_d[len(outs_d) - len(names_d):], primals)
            result["saved_activation_bytes"] = {"min_cut": mc, "default": df}
            result["saved_values"] = {"min_cut": len(names), "default": len(names_d)}
        return result


def measure_functorch(name, reps, slow_seconds):
    timer = FunctorchTimer()
    if name != "mlp_warmup":
        MODELS.setdefault("mlp_warmup", ("", export.MODELS["mlp"][1]))
        timer.compile_once("mlp_warmup", record_saved=False)  # imports, first-call set-up: untimed
    runs, cpu_runs = [], []
    first = None
    for i in range(reps):
        r = timer.compile_once(name, record_saved=(i == 0))
        if i == 0:
            first = r
        runs.append(r["phases"])
        cpu_runs.append(r["cpu_phases"])
        gc.collect()
        if i == 0 and r["phases"]["total"] > slow_seconds:
            break
    return {"reference": REFERENCE, "reps": len(runs), "phases_s": median_phases(runs),
            "cpu_phases_s": median_phases(cpu_runs), "totals_s": [r["total"] for r in runs],
            "joint_nodes": first["joint_nodes"], "saved_activation_bytes": first["saved_activation_bytes"],
            "saved_values": first["saved_values"], "first_call_s": first["first_call_s"]}


def functorch_subprocess(name, reps, slow_seconds):
    cmd = [sys.executable, os.path.abspath(__file__), "--functorch-only=" + name,
           "--functorch-reps=%d" % reps, "--slow-seconds=%g" % slow_seconds]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s measurement of %s failed (exit %d): %s"
                           % (REFERENCE, name, p.returncode, p.stderr.strip()[-2000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


# --- driver -------------------------------------------------------------------------------------


def export_model(name, out_dir):
    model, inputs = MODELS[name][1]()
    grad = grad_spec(model)
    prefix = os.path.join(out_dir, name)
    start = time.perf_counter()
    text = export.export(model, inputs, prefix, metadata={"model": name}, write_inputs=False)
    seconds = time.perf_counter() - start
    ops = sum(1 for line in text.splitlines() if " = torch.ops." in line)
    params = sum(p.numel() for p in model.parameters())
    del model, inputs, text
    gc.collect()
    return prefix + ".fx", grad, {"export_s": seconds, "forward_ops": ops, "parameters": params}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aotgrad", help="the aotgrad command-line binary")
    p.add_argument("--dir", help="directory for the exported graphs")
    p.add_argument("--out", help="write the results (JSON) here (default: stdout)")
    p.add_argument("--models", default=",".join(m for m in MODELS),
                   help="comma-separated, of: " + ", ".join(MODELS))
    p.add_argument("--aotgrad-reps", type=int, default=9)
    p.add_argument("--functorch-reps", type=int, default=3)
    p.add_argument("--slow-seconds", type=float, default=40.0,
                   help="a model whose first compilation by the reference takes longer is measured once")
    p.add_argument("--functorch-only", metavar="MODEL", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.functorch_only:
        print(json.dumps(measure_functorch(args.functorch_only, args.functorch_reps, args.slow_seconds)))
        return 0
    if not args.aotgrad or not args.dir:
        p.error("--aotgrad and --dir are required")
    if not os.access(args.aotgrad, os.X_OK):
        p.error("--aotgrad: %s is not an executable" % args.aotgrad)
    if args.aotgrad_reps < 1 or args.functorch_reps < 1:
        p.error("repetitions must be at least 1")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        p.error("unknown model %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    os.makedirs(args.dir, exist_ok=True)
    results = {"torch": torch.__version__, "python": platform.python_version(), "reference": REFERENCE,
               "torch_threads": torch.get_num_threads(), "gpt_width": dict(GPT_WIDTH, batch=GPT_BATCH),
               "aotgrad_reps": args.aotgrad_reps, "functorch_reps": args.functorch_reps,
               "slow_seconds": args.slow_seconds, "load_start": os.getloadavg(), "models": []}
    for name in names:
        print("compile_compare: %s ..." % name, file=sys.stderr, flush=True)
        fx, grad, info = export_model(name, args.dir)
        row = {"model": name, "description": MODELS[name][0]}
        row.update(info)
        row["aotgrad"] = measure_aotgrad(args.aotgrad, fx, grad, args.aotgrad_reps)
        row["functorch"] = functorch_subprocess(name, args.functorch_reps, args.slow_seconds)
        row["ratio"] = row["functorch"]["phases_s"]["total"] / row["aotgrad"]["phases_s"]["total"]
        row["cpu_ratio"] = row["functorch"]["cpu_phases_s"]["total"] / row["aotgrad"]["cpu_phases_s"]["total"]
        print("compile_compare: %s: wall aotgrad %.3f s, %s %.2f s (%.0fx); CPU %.0fx"
              % (name, row["aotgrad"]["phases_s"]["total"], REFERENCE, row["functorch"]["phases_s"]["total"],
                 row["ratio"], row["cpu_ratio"]), file=sys.stderr, flush=True)
        results["models"].append(row)
    results["load_end"] = os.getloadavg()
    text = json.dumps(results, indent=1)
    if args.out:
        export._write_files({args.out: text.encode("utf-8")})
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
