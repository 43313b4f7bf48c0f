"""torch.compile(model, backend=aotgrad's): aotgrad's whole pipeline on Dynamo's graph, run on
aotgrad's runtime inside autograd; losses, parameters and buffers equal to eager's."""
import copy
import warnings

import pytest
import torch
import torch.nn as nn

from aotgrad.dynamo import aotgrad as aotgrad_backend
from helpers import check_fallback, train
from test_partition import Block


def check(make_model, batches, opt="sgd", dynamic=None, **options):
    torch.manual_seed(0)
    model = make_model()
    twin = copy.deepcopy(model)
    compiled_fns = []

    def backend(gm, example_inputs):
        fn = aotgrad_backend(gm, example_inputs, **options)
        compiled_fns.append(fn)
        return fn

    torch._dynamo.reset()
    compiled = torch.compile(twin, backend=backend, dynamic=dynamic)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eager, ours = train(model, compiled, batches, opt)
    fell_back = [str(w.message) for w in caught if "aotgrad:" in str(w.message)]
    assert not fell_back, fell_back
    assert compiled_fns and all(hasattr(f, "aotgrad_compiled") for f in compiled_fns)
    assert ours == pytest.approx(eager, rel=1e-5, abs=1e-6), (eager, ours)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), name
    for (name, b), c in zip(model.named_buffers(), twin.buffers()):
        assert torch.allclose(b.double(), c.double(), rtol=1e-5, atol=1e-6), name
    return compiled_fns


def test_mlp():
    torch.manual_seed(1)
    batches = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(3)]
    fns = check(lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)), batches)
    assert fns[0].aotgrad_compiled.training
    assert "torch.ops.aten.gelu.default" in fns[0].aotgrad_graph.text()


def test_gpt_block_with_adam_and_a_memory_budget():
    torch.manual_seed(2)
    batches = [(torch.randn(2, 8, 32), torch.randn(2, 8, 32)) for _ in range(3)]
    check(Block, batches, opt="adam", memory_budget=0.5)


def test_batch_norm_writes_its_running_statistics():
    torch.manual_seed(3)
    batches = [(torch.randn(4, 3, 8, 8), torch.randn(4, 8, 8, 8)) for _ in range(3)]
    check(lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
          batches)


def test_dynamic_batch_sizes_compile_once():
    torch.manual_seed(4)
    batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
    fns = check(lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)), batches,
                dynamic=True)
    assert len(fns) == 1
    signature = fns[0].aotgrad_graph.text().split("def forward")[1].split("\n")[0]
    assert '"f32[s' in signature, signature


def test_inference_under_no_grad():
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aotgrad_backend)
    x = torch.randn(8, 16)
    with torch.no_grad():
        assert torch.allclose(compiled(x), model(x))


def test_a_graph_aotgrad_cannot_take_falls_back_with_a_warning():
    check_fallback(aotgrad_backend, "aotgrad: PyTorch's AOTAutograd")
