#!/usr/bin/env python3
"""Saved activation bytes of PyTorch's own AOTAutograd min-cut partitioner on the example models,
and the reference AOTAutograd the benchmarks and sweeps compare aotgrad with.

The reference is PyTorch's own AOTAutograd in the Python whose torch matches the build's libtorch
(the project's venv: PyTorch 2.11): torch._functorch.aot_autograd's aot_function on the module's
functional call (aot_module, a tied parameter traced under each of its names), no-op compilers, no
Dynamo. On the models of tools/export.py, one training step, with
min_cut_rematerialization_partition (default_partition with --partition=default) and aot_module's
own decompositions (none: the ATen graph as traced, the level of aotgrad's core decompositions), or
Inductor's table with --decompositions=inductor
(torch._inductor.decomposition.select_decomp_table(), what torch.compile hands AOTAutograd, which
bench/compile_compare.py's compile-time table uses), this prints one JSON object per model: the
saved values (name, dtype, shape, bytes, whether it shares storage with an input) and
saved_activation_bytes, the unique storage bytes of the saved values that are not parameters,
buffers or inputs -- the figure `aotgrad compile --stats=json` reports as saved_activation_bytes.

usage: PYTHON tools/functorch_min_cut.py [--partition=min_cut|default]
           [--decompositions=none|inductor] [MODEL ...]
(PYTHON: the venv's, .venv/bin/python; the min-cut partitioner needs its networkx)"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402  the example models

from torch._functorch.aot_autograd import aot_function, make_boxed_func  # noqa: E402
from torch._functorch.partitioners import (default_partition,  # noqa: E402
                                           min_cut_rematerialization_partition)

# The reference's name in the reports: "PyTorch 2.11's AOTAutograd" on torch 2.11.x.
REFERENCE = "PyTorch %s's AOTAutograd" % ".".join(torch.__version__.split("+")[0].split(".")[:2])


def inductor_decompositions():
    """Inductor's decomposition table, the one torch.compile hands AOTAutograd."""
    from torch._inductor.decomposition import select_decomp_table
    return select_decomp_table()


def tensor_attributes_as_buffers(model):
    """A tensor a module holds as a plain attribute (the conformer's fixed lengths) becomes a
    non-persistent buffer: the reference traces the module's functional call with fake parameters
    and buffers, and refuses a real tensor it closes over (Dynamo, in front of it in
    torch.compile, lifts such constants into graph inputs the same way)."""
    import torch
    for mod in model.modules():
        for k, v in list(vars(mod).items()):
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                delattr(mod, k)
                mod.register_buffer(k, v, persistent=False)


def aot_module(mod, **kwargs):
    """PyTorch's aot_module(mod, **kwargs) with a tied parameter (the GPT's LM head and token
    embedding) traced under each of its names: aot_module passes both names to functional_call,
    which refuses two values for tied names unless told tie_weights=False, so this is aot_module's
    own code with that argument (aot_function dedups the repeated argument)."""
    params = dict(mod.named_parameters(remove_duplicate=False))
    buffers = dict(mod.named_buffers(remove_duplicate=False))

    def call(params, buffers, *args, **kw):
        return export.functional_call(mod, {**params, **buffers}, args, kw, tie_weights=False)

    compiled = aot_function(call, num_params_buffers=len(params) + len(buffers), **kwargs)
    return lambda *args, **kw: compiled(params, buffers, *args, **kw)


def measure(name, partition_fn, decompositions=None):
    torch.manual_seed(0)
    model, inputs = export.MODELS[name][1]()
    model.train()
    record = {}

    def fw_compiler(gm, example_inputs):
        def run(*args):
            outs = gm(*args)
            record["args"] = list(args)
            record["fw_outs"] = list(outs)
            return outs
        record["fw_graph"] = gm
        return make_boxed_func(run)

    def bw_compiler(gm, example_inputs):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        record["saved_names"] = [n.name for n in placeholders if "tangents" not in n.name]
        return make_boxed_func(gm)

    compiled = aot_module(model, fw_compiler=fw_compiler, bw_compiler=bw_compiler, partition_fn=partition_fn,
                          decompositions=decompositions)
    loss = compiled(**inputs)
    loss.backward()

    names = record["saved_names"]
    saved = record["fw_outs"][len(record["fw_outs"]) - len(names):]
    listing, activation_bytes = saved_summary(names, saved, record["args"])
    return {"model": name, "torch": torch.__version__, "reference": REFERENCE, "saved": listing,
            "saved_bytes": sum(s.get("bytes", 0) for s in listing),
            "saved_activation_bytes": activation_bytes}


def saved_summary(names, saved, inputs):
    """The saved values `saved` (named `names`) of a forward run on `inputs` as a listing (name,
    dtype, shape, bytes, whether it shares storage with an input), and their activation bytes: the
    unique storage bytes of the saved tensors that share no storage with an input."""
    input_storages = {a.untyped_storage().data_ptr() for a in inputs if isinstance(a, torch.Tensor)}
    seen = set()
    activation_bytes = 0
    listing = []
    for n, t in zip(names, saved):
        if not isinstance(t, torch.Tensor):
            listing.append({"name": n, "kind": type(t).__name__})
            continue
        ptr = t.untyped_storage().data_ptr()
        is_input = ptr in input_storages
        listing.append({"name": n, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                        "bytes": t.numel() * t.element_size(), "is_input": is_input})
        if not is_input and ptr not in seen:
            seen.add(ptr)
            activation_bytes += t.untyped_storage().nbytes()
    return listing, activation_bytes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="models of tools/export.py (default: all)")
    p.add_argument("--partition", choices=["min_cut", "default"], default="min_cut")
    p.add_argument("--decompositions", choices=["none", "inductor"], default="none",
                   help="aot_module's own (none) or Inductor's decomposition table")
    args = p.parse_args(argv)
    fn = min_cut_rematerialization_partition if args.partition == "min_cut" else default_partition
    decomps = inductor_decompositions() if args.decompositions == "inductor" else None
    for m in args.models:
        if m not in export.MODELS:
            p.error("unknown model %r (known: %s)" % (m, ", ".join(export.MODELS)))
    for m in args.models or list(export.MODELS):
        print(json.dumps(measure(m, fn, decomps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
