"""aotgrad under Inductor: `torch.compile(model, backend=aotgrad.inductor(...))` compiles with
Inductor and partitions with aotgrad (Inductor's custom_partitioner_fn)."""
import copy
import functools
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

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


@pytest.mark.parametrize("scaled", [False, True])
def test_dynamic_batch_sizes_under_inductor_partition_once(scaled):
    # scaled: the model multiplies by its batch size (Note [A SymInt where a Tensor goes]).
    from test_partition import ScaledBySize
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = ScaledBySize() if scaled else nn.Sequential(nn.Linear(16, 32), nn.GELU(),
                                                        nn.Linear(32, 4))
    twin = copy.deepcopy(model)
    aotgrad.explanations.clear()
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        compiled = torch.compile(twin, backend=aotgrad.inductor(), dynamic=True)
        torch.manual_seed(1)
        batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = train(model, compiled, batches)
    assert not [w for w in caught if "aotgrad:" in str(w.message)]
    # One joint graph with a symbolic batch, partitioned once by aotgrad for every size.
    assert len(aotgrad.explanations) == 1
    assert '"f32[s' in aotgrad.explanations[0].joint.text()
    assert losses[1] == pytest.approx(losses[0], rel=1e-4), losses


class Attention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2)
                   for y in self.qkv(x).chunk(3, dim=-1))
        from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                            create_selective_checkpoint_contexts)

        def recompute_attention(ctx, op, *args, **kwargs):
            return (CheckpointPolicy.MUST_RECOMPUTE
                    if "scaled_dot_product" in str(op) else CheckpointPolicy.PREFER_SAVE)

        y = checkpoint(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                       q, k, v, use_reentrant=False, context_fn=functools.partial(
                           create_selective_checkpoint_contexts, recompute_attention))
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def test_a_recomputed_random_op_replays_its_generator_under_inductor():
    # Inductor's attention on the CPU is a random op (its dropout_p): under a checkpoint policy
    # that recomputes it, aotgrad recomputes it in the backward replaying the generator state the forward saved
    # (run_and_save_rng_state / run_with_rng_state, PyTorch's own higher-order ops), and the
    # backward's saved state is renamed (rng_state_output_0): its fake value comes from the
    # forward by position. Gradients are eager's.
    def step(m, compiled):
        torch.manual_seed(7)
        compiled(torch.randn(2, 8, 16)).pow(2).sum().backward()
        return [p.grad for p in m.parameters()]

    torch.manual_seed(0)
    model = Attention()
    twin = copy.deepcopy(model)
    seen = []
    real = partition.min_cut_partition

    def recorded(*args, **kwargs):
        fw, bw = real(*args, **kwargs)
        seen.append(str(fw.graph) + str(bw.graph))
        return fw, bw

    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False), \
            pytest.MonkeyPatch.context() as mp:
        mp.setattr(partition, "min_cut_partition", recorded)
        ours = step(twin, torch.compile(twin, backend=aotgrad.inductor()))
    eager = step(model, model)
    assert seen and "run_with_rng_state" in seen[0] and "rng_state_output" in seen[0], seen
    for a, b in zip(ours, eager):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
