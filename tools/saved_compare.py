#!/usr/bin/env python3
"""aotgrad: saved activation bytes of aotgrad's min-cut against PyTorch's own AOTAutograd's, per model.

For each model (by default every model tools/model_sweep.py and tools/export.py can export:
torchvision, torchaudio and torch.nn models at batch 2, the GPTs, the MLPs, cnn_bn, and a
Linear-GELU-LayerNorm MLP defined here; any of them by name with --models),
in a worker process:

  - the model is built with a fixed seed, put in training mode and exported with tools/export.py
    (graph only);
  - PyTorch's own AOTAutograd (the venv's PyTorch 2.11: torch._functorch's aot_module,
    tools/functorch_min_cut.py's, with min_cut_rematerialization_partition, no-op compilers and
    its own decompositions, the graph at the level of aotgrad's core decompositions) runs one
    training step of the same model and weights; its saved activation bytes are the unique storage
    bytes of the saved tensors that are not parameters, buffers or inputs
    (tools/functorch_min_cut.py's saved_summary).

Then `aotgrad compile <model>.fx --grad=<parameters> --stats=json` gives aotgrad's
saved_activation_bytes (the same count) twice: with --recompute-pointwise-from-saved=off (PyTorch
2.x's materialized-backward, used-far-apart and long-fusible-chain bans: an activation whose output
a norm's or convolution's backward reads is saved beside its input) and with the default (on: a
cheap op the backward can compute in at most three calls from values it has anyway is recomputed,
as functorch 1.13's min-cut did). The ratios are aotgrad / PyTorch (the JSON keeps PyTorch's
figures under the key "functorch"); at most 1 means aotgrad keeps no more for the backward than
PyTorch's AOTAutograd does.

usage: (PYTHON: the venv's, .venv/bin/python)
  PYTHON tools/saved_compare.py --aotgrad=BIN --dir=DIR [--models=a,b,...]
      [--json=OUT.json] [--benchmarks=BENCHMARKS.md [--command=TEXT]]
  PYTHON tools/saved_compare.py list
The exported graphs stay in DIR. --benchmarks writes the table into BENCHMARKS.md between its
saved_compare markers.
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchmarks_md  # noqa: E402

SEED = 0
# Every model of model_sweep.py and tools/export.py but those make_fx cannot export (their
# data-dependent control flow; BENCHMARKS.md's real-model sweep) and the batch-16 copies of
# resnet18, mobilenet_v2 and efficientnet_b0 that the training-step benchmark uses.
NOT_DEFAULT = {"conformer_lengths", "hdemucs", "emformer", "tacotron2", "resnet18_b16",
               "mobilenet_v2_b16", "efficientnet_b0_b16"}


def _mlp_gelu_ln():
    """Two blocks of Linear-GELU-LayerNorm and a Linear head, MSE loss; batch 32, 64 -> 256 -> 256
    -> 64: each GELU's output is what its LayerNorm normalizes."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MlpGeluLayerNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.ln1 = nn.Linear(64, 256), nn.LayerNorm(256)
            self.fc2, self.ln2 = nn.Linear(256, 256), nn.LayerNorm(256)
            self.head = nn.Linear(256, 64)

        def forward(self, x, target):
            h = self.ln1(F.gelu(self.fc1(x)))
            h = self.ln2(F.gelu(self.fc2(h)))
            return F.mse_loss(self.head(h), target)

    return MlpGeluLayerNorm(), {"x": torch.randn(32, 64), "target": torch.randn(32, 64)}


LOCAL_MODELS = {
    "mlp_gelu_ln": ("Linear-GELU-LayerNorm x 2, Linear head, MSE; batch 32, width 64 -> 256 -> 64",
                    _mlp_gelu_ln),
}


def _builder(name):
    """(description, factory returning (model with loss, inputs)) of a model name."""
    if name in LOCAL_MODELS:
        return LOCAL_MODELS[name]
    import model_sweep
    if name in model_sweep.MODELS:
        _, _, description, build = model_sweep.MODELS[name]
        return description, build
    import export
    if name in export.MODELS:
        return export.MODELS[name]
    return None


def _all_names():
    import export
    import model_sweep
    names = list(LOCAL_MODELS) + list(model_sweep.MODELS)
    return names + [n for n in export.MODELS if n not in names]


# --- the worker: export and PyTorch's AOTAutograd ---------------------------------------------


def functorch_saved(model, inputs):
    """PyTorch's AOTAutograd's min-cut on one training step of `model(**inputs)`: (saved activation
    bytes, number of saved values)."""
    import torch
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    import functorch_min_cut
    rec = {}

    def fw_compiler(gm, _):
        def run(*args):
            outs = gm(*args)
            rec["args"], rec["outs"] = list(args), list(outs)
            return outs
        return make_boxed_func(run)

    def bw_compiler(gm, _):
        rec["names"] = [n.name for n in gm.graph.nodes
                        if n.op == "placeholder" and "tangents" not in n.name]
        return make_boxed_func(gm)

    functorch_min_cut.tensor_attributes_as_buffers(model)
    compiled = functorch_min_cut.aot_module(model, fw_compiler=fw_compiler, bw_compiler=bw_compiler,
                                            partition_fn=min_cut_rematerialization_partition)
    torch.manual_seed(0)
    compiled(**inputs).backward()
    names = rec["names"]
    outs = rec["outs"]
    _, activation_bytes = functorch_min_cut.saved_summary(names, outs[len(outs) - len(names):],
                                                          rec["args"])
    return activation_bytes, len(names)


def _reference():
    import functorch_min_cut
    return functorch_min_cut.REFERENCE


def worker(name, out_dir):
    """Exports `name` to <out_dir>/<name>.fx and measures PyTorch's AOTAutograd; prints one JSON
    line."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import export
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    model, inputs = _builder(name)[1]()
    model.train()
    record = {"model": name, "parameters": sum(p.numel() for p in model.parameters()),
              "grad": ",".join(export.placeholder_name(n) for n, p in model.named_parameters()
                               if p.requires_grad)}
    # PyTorch's copy is taken before the export runs the model: a weight-normalized model
    # (wav2vec2's positional convolution) then holds a computed weight, which deepcopy refuses.
    functorch_model = copy.deepcopy(model)
    try:
        text = export.export(model, inputs, os.path.join(out_dir, name), write_inputs=False,
                             metadata={"model": name, "seed": SEED})
        record["graph_ops"] = sum(1 for line in text.splitlines() if " = torch.ops." in line)
    except Exception as e:  # noqa: BLE001 -- reported as the model's result
        record["error"] = "export: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
        print(json.dumps(record))
        return
    try:
        record["functorch"], record["functorch_values"] = functorch_saved(functorch_model, inputs)
    except Exception as e:  # noqa: BLE001
        record["error"] = "%s: %s: %s" % (_reference(), type(e).__name__, str(e).splitlines()[0][:200])
    print(json.dumps(record))


# --- the driver ----------------------------------------------------------------------------------


def aotgrad_saved(binary, fx, grad, recompute_pointwise):
    """aotgrad compile's (saved_activation_bytes, number of saved values, recomputed ops)."""
    cmd = [binary, "compile", fx, "--grad=" + grad, "--stats=json",
           "--recompute-pointwise-from-saved=" + recompute_pointwise]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, AOTGRAD_CACHE_DIR="off"))
    if p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd[:3]), p.returncode,
                                                        p.stderr.strip()[-500:]))
    stats = json.loads(p.stdout.strip().splitlines()[-1])
    saved = stats.get("saved")
    return stats["saved_activation_bytes"], len(saved) if isinstance(saved, list) else saved


def measure(name, binary, out_dir, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "_worker", name, out_dir]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return {"model": name, "error": "worker: timeout after %d s" % timeout}
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        tail = p.stderr.strip().splitlines()
        return {"model": name, "error": "worker (exit %d): %s" % (p.returncode,
                                                                  tail[-1] if tail else "")}
    row = json.loads(lines[-1])
    if "error" in row:
        return row
    fx = os.path.join(out_dir, name + ".fx")
    try:
        row["aotgrad_off"], row["aotgrad_off_values"] = aotgrad_saved(binary, fx, row["grad"], "off")
        row["aotgrad_on"], row["aotgrad_on_values"] = aotgrad_saved(binary, fx, row["grad"], "on")
    except (RuntimeError, ValueError, KeyError) as e:
        row["error"] = "aotgrad: %s" % e
    return row


def _kib(b):
    return "%.1f" % (b / 1024.0)


def _reference_of(report):
    """The reference's name in a report: "PyTorch 2.11's AOTAutograd"."""
    return report.get("reference") or "PyTorch %s's AOTAutograd" % ".".join(
        report["torch"].split("+")[0].split(".")[:2])


def markdown(report, command=None):
    ref = _reference_of(report)
    L = ["## Saved activation bytes against %s (recompute_pointwise_from_saved)" % ref, ""]
    m = report["machine"]
    rows = [r for r in report["models"] if "error" not in r]
    above = [r for r in rows if r["aotgrad_on"] > r["functorch"]]
    L.append("Saved activation bytes (unique storage bytes of the values the forward keeps for the "
             "backward that are not parameters, buffers or inputs) of aotgrad's min-cut against "
             "%s's `min_cut_rematerialization_partition` (torch %s; `aot_module` with its own "
             "decompositions, no-op compilers) on the same model and weights, "
             "one training step, on every model `tools/model_sweep.py` and `tools/export.py` can "
             "export (`aotgrad compile --grad=<parameters> --stats=json`'s "
             "saved_activation_bytes; PyTorch's from the tensors its compiled forward returns). "
             "*off* is `--recompute-pointwise-from-saved=off`: PyTorch 2.x's materialized-backward, "
             "used-far-apart and long-fusible-chain bans, which save an activation (SiLU, GELU, a "
             "squeeze-excitation's mean, a residual sum) that a norm's or convolution's backward "
             "reads beside its input, which the backward reads too. *on* is the default "
             "(`MinCutOptions::recompute_pointwise_from_saved`): a cheap op (the recomputable "
             "allowlist's) that the backward can compute in at most three calls from values it has "
             "anyway is not banned, so the cut may recompute it, as functorch 1.13's min-cut (which "
             "had none of those bans) did. Ratios are aotgrad / PyTorch, all in one run: `%s` "
             "(%s, %s cores, load %s; %.0f s)."
             % (ref, report["torch"], command or "tools/saved_compare.py", m["date"], m["cores"],
                m["load"], report["total_s"]))
    L.append("")
    if above:
        L.append("aotgrad (on) saves more than PyTorch on %d of %d models: %s." % (
            len(above), len(rows), ", ".join("%s %.3f\u00d7" % (r["model"],
                                                               r["aotgrad_on"] / r["functorch"])
                                            for r in above)))
    else:
        L.append("aotgrad (on) saves at most PyTorch's bytes on all %d models." % len(rows))
    L.append("")
    L.append("| model | parameters | PyTorch KiB (values) | aotgrad off KiB (values) | off / "
             "PyTorch | aotgrad on KiB (values) | on / PyTorch |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in report["models"]:
        if "error" in r:
            L.append("| %s | - | %s | | | | |" % (r["model"], r["error"].replace("|", "\\|")))
            continue
        ft = r["functorch"]
        L.append("| %s | {:,} | %s (%d) | %s (%d) | %.3f | %s (%d) | **%.3f** |".format(
            r["parameters"]) % (
            r["model"], _kib(ft), r["functorch_values"], _kib(r["aotgrad_off"]),
            r["aotgrad_off_values"], r["aotgrad_off"] / ft, _kib(r["aotgrad_on"]),
            r["aotgrad_on_values"], r["aotgrad_on"] / ft))
    return "\n".join(L) + "\n"


def put_into_benchmarks(report, path, command):
    section = markdown(report, command).rstrip("\n")
    benchmarks_md.put_section(path, "saved_compare", section)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_worker"]:
        worker(argv[1], argv[2])
        return 0
    if argv[:1] == ["list"]:
        for n in _all_names():
            print("%-34s %s" % (n, _builder(n)[0]))
        return 0
    p = argparse.ArgumentParser(prog="saved_compare.py", description=__doc__.split("\n\n")[0],
                                epilog="usage:" + __doc__.split("usage:", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--aotgrad", required=True, help="the aotgrad executable")
    p.add_argument("--dir", required=True, help="directory for the exported graphs")
    p.add_argument("--models", default=None,
                   help="comma-separated model names (default: every model `list` lists but %s)"
                   % ", ".join(sorted(NOT_DEFAULT)))
    p.add_argument("--timeout", type=int, default=900, help="seconds per model's worker")
    p.add_argument("--json", default=None, help="write the report as JSON here")
    p.add_argument("--benchmarks", default=None, help="BENCHMARKS.md to write the table into")
    p.add_argument("--command", default=None, help="the command line the table names")
    args = p.parse_args(argv)
    binary = os.path.abspath(args.aotgrad)
    if not os.access(binary, os.X_OK):
        p.error("--aotgrad: %s is not an executable" % binary)
    if args.models is None:
        names = [n for n in _all_names() if n not in NOT_DEFAULT]
    else:
        names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if _builder(n) is None]
    if unknown:
        p.error("unknown model(s): %s (`saved_compare.py list` lists them)" % ", ".join(unknown))
    os.makedirs(args.dir, exist_ok=True)
    import functorch_min_cut
    import torch
    t0 = time.monotonic()
    machine = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
               "load": " ".join("%.2f" % x for x in os.getloadavg())}
    rows = []
    for n in names:
        r = measure(n, binary, args.dir, args.timeout)
        rows.append(r)
        if "error" in r:
            print("  %-20s %s" % (n, r["error"]), flush=True)
        else:
            print("  %-20s PyTorch %s KiB, aotgrad off %s KiB (%.2f), on %s KiB (%.2f)" % (
                n, _kib(r["functorch"]), _kib(r["aotgrad_off"]), r["aotgrad_off"] / r["functorch"],
                _kib(r["aotgrad_on"]), r["aotgrad_on"] / r["functorch"]), flush=True)
    report = {"torch": torch.__version__, "reference": functorch_min_cut.REFERENCE, "machine": machine,
              "total_s": round(time.monotonic() - t0, 1), "models": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    if args.benchmarks:
        put_into_benchmarks(report, args.benchmarks, args.command)
    sys.stdout.write(markdown(report, args.command))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
