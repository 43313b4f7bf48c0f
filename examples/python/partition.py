"""aotgrad's partitioner from Python, the two ways (README "From Python").

1. torch.compile(model, backend=aotgrad.inductor(memory_budget=...)): Inductor compiles, aotgrad
   partitions.
2. aot_autograd(fw_compiler=..., bw_compiler=..., partition_fn=aotgrad.min_cut_partition).

Trains a small MLP 3 SGD steps eagerly and both ways and prints the losses and what the
partitioner saved.  usage: .venv/bin/python examples/python/partition.py (scripts/setup.sh
installs the package; or PYTHONPATH=build/python for the build tree's copy)
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

import aotgrad


def losses(model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1)
    out = []
    for _ in range(steps):
        x, y = torch.randn(64, 128), torch.randn(64, 10)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        out.append(round(loss.item(), 6))
    return out


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(),
                          nn.Linear(256, 10))
    print("eager                       ", losses(copy.deepcopy(model)))

    saved = []

    def partition(joint, inputs, **kw):
        fw, bw = aotgrad.min_cut_partition(joint, inputs, **kw)
        outs = fw.graph.output_node().args[0][kw["num_fwd_outputs"]:]
        saved.append(", ".join(n.name for n in outs))
        return fw, bw

    boxed = lambda gm, _: make_boxed_func(gm.forward)  # noqa: E731
    be = aot_autograd(fw_compiler=boxed, bw_compiler=boxed, partition_fn=partition)
    print("aot_autograd + aotgrad      ", losses(torch.compile(copy.deepcopy(model), backend=be)))
    print("  saved for the backward:", saved[0])

    torch._dynamo.reset()
    print("inductor + aotgrad, budget 0.5",
          losses(torch.compile(copy.deepcopy(model), backend=aotgrad.inductor(memory_budget=0.5))))


if __name__ == "__main__":
    main()
