#!/usr/bin/env python3
"""Saved activation bytes of PyTorch's own min-cut partitioner on the example models.

Runs functorch's aot_module (Debian's python3-torch 1.13) with
min_cut_rematerialization_partition, or default_partition with --partition=default, on the models
of tools/export.py, one training step, and prints one JSON object per model: the saved values
(name, dtype, shape, bytes, whether it shares storage with an input) and saved_activation_bytes,
the unique storage bytes of the saved values that are not parameters, buffers or inputs -- the
figure `aotgrad compile --stats=json` reports as saved_activation_bytes.

usage: /usr/bin/python3 tools/functorch_min_cut.py [--partition=min_cut|default] [MODEL ...]
(needs python3-networkx for min_cut)"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402  the example models

from functorch.compile import (aot_function, aot_module, default_partition,  # noqa: E402
                                min_cut_rematerialization_partition)


def _aot_module(mod, **kwargs):
    """functorch's aot_module(mod, **kwargs), with a tied parameter (the GPT's LM head and token
    embedding) traced under each of its names, as PyTorch 1.13's aot_module does. PyTorch 2.x's
    passes both names to functional_call, which refuses two values for tied names unless told
    tie_weights=False, so on 2.x this is aot_module's own code with that argument."""
    if torch.__version__.startswith("1.13"):  # goes with 1.13 (issue 41, step d)
        return aot_module(mod, **kwargs)
    params = dict(mod.named_parameters(remove_duplicate=False))
    buffers = dict(mod.named_buffers(remove_duplicate=False))

    def call(params, buffers, *args, **kw):
        return export.functional_call(mod, {**params, **buffers}, args, kw, tie_weights=False)

    compiled = aot_function(call, num_params_buffers=len(params) + len(buffers), **kwargs)
    return lambda *args, **kw: compiled(params, buffers, *args, **kw)


def measure(name, partition_fn):
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
        return run

    def bw_compiler(gm, example_inputs):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        record["saved_names"] = [n.name for n in placeholders if "tangents" not in n.name]
        return gm

    compiled = _aot_module(model, fw_compiler=fw_compiler, bw_compiler=bw_compiler, partition_fn=partition_fn)
    loss = compiled(**inputs)
    loss.backward()

    names = record["saved_names"]
    saved = record["fw_outs"][len(record["fw_outs"]) - len(names):]
    listing, activation_bytes = saved_summary(names, saved, record["args"])
    return {"model": name, "torch": torch.__version__, "saved": listing,
            "saved_bytes": sum(s.get("bytes", 0) for s in listing),
            "saved_activation_bytes": activation_bytes}


def saved_summary(names, saved, inputs):
    """The saved values `saved` (named `names`) of a forward run on `inputs` as a listing (name,
    dtype, shape, bytes, whether it shares storage with an input), and their activation bytes: the
    unique storage bytes of the saved tensors that share no storage with an input."""
    input_storages = {a.storage().data_ptr() for a in inputs if isinstance(a, torch.Tensor)}
    seen = set()
    activation_bytes = 0
    listing = []
    for n, t in zip(names, saved):
        if not isinstance(t, torch.Tensor):
            listing.append({"name": n, "kind": type(t).__name__})
            continue
        ptr = t.storage().data_ptr()
        is_input = ptr in input_storages
        listing.append({"name": n, "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                        "bytes": t.numel() * t.element_size(), "is_input": is_input})
        if not is_input and ptr not in seen:
            seen.add(ptr)
            activation_bytes += t.storage().nbytes()
    return listing, activation_bytes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="models of tools/export.py (default: all)")
    p.add_argument("--partition", choices=["min_cut", "default"], default="min_cut")
    args = p.parse_args(argv)
    fn = min_cut_rematerialization_partition if args.partition == "min_cut" else default_partition
    for m in args.models:
        if m not in export.MODELS:
            p.error("unknown model %r (known: %s)" % (m, ", ".join(export.MODELS)))
    for m in args.models or list(export.MODELS):
        print(json.dumps(measure(m, fn)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
