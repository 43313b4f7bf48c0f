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


def test_a_symint_where_a_tensor_goes_compiles_once():
    from test_partition import ScaledBySize
    torch.manual_seed(4)
    batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
    fns = check(ScaledBySize, batches, dynamic=True)
    assert len(fns) == 1
    assert "_as_tensor" in fns[0].aotgrad_graph.text()


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


def compiled_with_options(model, options):
    torch._dynamo.reset()
    return torch.compile(model, backend=aotgrad_backend, options=options)


@pytest.mark.parametrize("partition_fn", ["min_cut_rematerialization_partition",
                                          "default_partition"])
def test_aot_config_options_through_torch_compile(partition_fn):
    # torch.compile(..., options=) hands the backend one `options` dict: AOTConfig's fields by
    # name and aotgrad's own options, here all at once; training stays eager's.
    from torch._functorch import partitioners
    torch.manual_seed(6)
    batches = [(torch.randn(2, 8, 32), torch.randn(2, 8, 32)) for _ in range(3)]
    model = Block()
    twin = copy.deepcopy(model)
    table = {torch.ops.aten.gelu.default: None, torch.ops.aten.mm.default: None}
    options = {"partition_fn": getattr(partitioners, partition_fn), "decompositions": table,
               "num_params_buffers": 8, "keep_inference_input_mutations": True,
               "dynamic_shapes": False, "enable_log": False, "aot_id": 3, "is_export": False}
    if partition_fn.startswith("min_cut"):
        options["memory_budget"] = 0.5  # an option of aotgrad's, beside AOTConfig's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eager, ours = train(model, compiled_with_options(twin, options), batches)
    messages = [str(w.message) for w in caught if "aotgrad:" in str(w.message)]
    # aten::mm has no decomposition in aotgrad: named once, left as it is; no fallback.
    assert len(messages) == 1 and "aten::mm" in messages[0] and "aten::gelu" not in messages[0], \
        messages
    assert ours == pytest.approx(eager, rel=1e-5, abs=1e-6), (eager, ours)


@pytest.mark.parametrize("options,words", [
    ({"fw_compiler": lambda gm, _: gm}, "aotgrad's runtime runs the graphs"),
    ({"is_export": True}, "is_export=True: aotgrad's backend takes it only as False"),
    ({"partition_fn": lambda *a, **k: None}, "aotgrad partitions with its min-cut"),
    ({"memory_budget": 2}, "aotgrad's options: .*memory-budget")])
def test_a_bad_option_raises_and_does_not_fall_back(options, words):
    compiled = compiled_with_options(nn.Linear(4, 4), options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception, match=words):
            compiled(torch.randn(2, 4)).sum().backward()
    assert not [w for w in caught if "aotgrad:" in str(w.message)]
