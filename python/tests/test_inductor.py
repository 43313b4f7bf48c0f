"""aotgrad under Inductor: `torch.compile(model, backend=aotgrad.inductor(...))` compiles with
Inductor and partitions with aotgrad (Inductor's custom_partitioner_fn)."""
import copy

import pytest
import torch
import torch.nn as nn

import aotgrad
from aotgrad import partition
from helpers import train


def test_mlp_trains_as_eager_under_inductor(monkeypatch):
    calls = []
    real = partition.min_cut_partition

    def counted(*args, **kwargs):
        calls.append(kwargs.get("memory_budget"))
        return real(*args, **kwargs)

    monkeypatch.setattr(partition, "min_cut_partition", counted)
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    twin = copy.deepcopy(model)
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        compiled = torch.compile(twin, backend=aotgrad.inductor(memory_budget=0.5))
        torch.manual_seed(1)
        batches = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(3)]
        losses = train(model, compiled, batches)
    assert calls == [0.5], calls
    assert losses[1] == pytest.approx(losses[0], rel=1e-4), losses
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p, q, rtol=1e-4, atol=1e-5)


def test_the_partitioner_uuid_follows_the_options():
    a = partition._InductorPartitioner(memory_budget=0.5)
    b = partition._InductorPartitioner(memory_budget=0.2)
    assert a.uuid() != b.uuid()
    assert a.uuid() == partition._InductorPartitioner(memory_budget=0.5).uuid()


def test_dynamic_batch_sizes_under_inductor_partition_once():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    twin = copy.deepcopy(model)
    aotgrad.explanations.clear()
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        compiled = torch.compile(twin, backend=aotgrad.inductor(), dynamic=True)
        torch.manual_seed(1)
        batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
        losses = train(model, compiled, batches)
    # One joint graph with a symbolic batch, partitioned once by aotgrad for every size.
    assert len(aotgrad.explanations) == 1
    assert '"f32[s' in aotgrad.explanations[0].joint.text()
    assert losses[1] == pytest.approx(losses[0], rel=1e-4), losses
