"""aotgrad.min_cut_partition as PyTorch 2.11's partitioner: under torch.compile with the
aot_autograd backend, losses and gradients equal eager's over optimizer steps."""
import copy
import functools
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

import aotgrad
from helpers import check_fallback, train


def boxed(gm, _):
    return make_boxed_func(gm.forward)


def backend(**options):
    """aot_autograd with aotgrad's partitioner and no-op compilers; records the graphs."""
    graphs = []

    def partition(joint, joint_inputs, **kw):
        fw, bw = aotgrad.min_cut_partition(joint, joint_inputs, **kw, **options)
        graphs.append((joint, fw, bw))
        return fw, bw

    return aot_autograd(fw_compiler=boxed, bw_compiler=boxed, partition_fn=partition), graphs


class Block(nn.Module):
    """A GPT block: LayerNorm, causal attention, a GELU MLP, residuals."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def check_equal_training(make_model, batches, opt="sgd", dynamic=None, **options):
    torch.manual_seed(0)
    model = make_model()
    twin = copy.deepcopy(model)
    be, graphs = backend(**options)
    torch._dynamo.reset()
    compiled = torch.compile(twin, backend=be, dynamic=dynamic)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eager, ours = train(model, compiled, batches, opt)
    assert graphs, "aotgrad's partitioner was not called"
    fell_back = [str(w.message) for w in caught if "aotgrad:" in str(w.message)]
    assert not fell_back, fell_back
    assert ours == pytest.approx(eager, rel=1e-5, abs=1e-6), (eager, ours)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), name
    for (name, b), c in zip(model.named_buffers(), twin.buffers()):  # BatchNorm's statistics
        assert torch.allclose(b.double(), c.double(), rtol=1e-5, atol=1e-6), name
    return graphs


def test_mlp_trains_as_eager():
    torch.manual_seed(1)
    batches = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(3)]
    graphs = check_equal_training(
        lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)), batches)
    joint, fw, bw = graphs[0]
    # The forward returns what the backward takes, in the runtime's layout.
    fw_out = fw.graph.output_node().args[0]
    bw_in = [n.name for n in bw.graph.find_nodes(op="placeholder")]
    assert [n.name for n in fw_out[1:]] == [n for n in bw_in if not n.startswith("tangents")]
    assert all("val" in n.meta for n in fw.graph.nodes if n.op != "output")


def test_gpt_block_trains_as_eager_with_adam():
    torch.manual_seed(2)
    batches = [(torch.randn(2, 8, 32), torch.randn(2, 8, 32)) for _ in range(3)]
    check_equal_training(Block, batches, opt="adam")


@pytest.mark.parametrize("budget", [0.5, 0.0, "auto"])
def test_memory_budgets_train_as_eager(budget):
    torch.manual_seed(3)
    batches = [(torch.randn(2, 8, 32), torch.randn(2, 8, 32)) for _ in range(3)]
    graphs = check_equal_training(Block, batches, memory_budget=budget)
    _, fw, _ = graphs[0]
    saved = len(fw.graph.output_node().args[0]) - 1
    assert saved > 0


@pytest.mark.parametrize("schedule,solver", [("none", "greedy"), ("memory", "ilp")])
def test_schedules_and_solvers_train_as_eager(schedule, solver):
    torch.manual_seed(3)
    batches = [(torch.randn(2, 8, 32), torch.randn(2, 8, 32)) for _ in range(3)]
    check_equal_training(Block, batches, memory_budget=0.3, schedule=schedule, solver=solver)
    text = aotgrad.explanations[-1].text
    assert ("schedule: forward peak" in text) == (schedule == "memory"), text


@pytest.mark.parametrize("option,value,words", [
    ("solver", "simplex", 'solver is "dp", "greedy" or "ilp"'),
    ("schedule", "fast", 'schedule is "memory" or "none"')])
def test_a_bad_solver_or_schedule_is_an_error(option, value, words):
    be, _ = backend(**{option: value})
    torch._dynamo.reset()
    f = torch.compile(nn.Linear(4, 4), backend=be)
    with pytest.raises(Exception, match=words):
        f(torch.randn(2, 4)).sum().backward()


def test_batch_norm_trains_as_eager():
    torch.manual_seed(4)
    batches = [(torch.randn(4, 3, 8, 8), torch.randn(4, 8, 8, 8)) for _ in range(3)]
    check_equal_training(
        lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
        batches)


def test_a_bad_memory_budget_is_an_error():
    be, _ = backend(memory_budget=2.0)
    torch._dynamo.reset()
    f = torch.compile(nn.Linear(4, 4), backend=be)
    with pytest.raises(Exception, match="memory_budget is a number in \\[0, 1\\]"):
        f(torch.randn(2, 4)).sum().backward()


def test_dynamic_batch_sizes_compile_once():
    torch.manual_seed(5)
    batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
    graphs = check_equal_training(
        lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)), batches,
        dynamic=True)
    assert len(graphs) == 1
    joint, fw, bw = graphs[0]
    assert any(isinstance(n.meta["val"], torch.SymInt)
               for n in joint.graph.find_nodes(op="placeholder"))


class ScaledBySize(nn.Module):
    """`h * h.shape[0]`: under dynamic shapes, mul.Tensor with a SymInt where a Tensor goes."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        return self.b(h * h.shape[0] / 8.0 + h.shape[1])


def test_a_symint_where_a_tensor_goes_crosses():
    # Note [A SymInt where a Tensor goes]: once taken by the fallback, now partitioned by aotgrad
    # (check_equal_training fails on a fallback warning), one compilation over three batch sizes.
    torch.manual_seed(5)
    batches = [(torch.randn(b, 16), torch.randn(b, 4)) for b in (8, 5, 11)]
    graphs = check_equal_training(ScaledBySize, batches, dynamic=True)
    assert len(graphs) == 1
    joint, _, _ = graphs[0]
    assert any(n.target is torch.ops.aten.mul.Tensor and
               any(isinstance(a, torch.fx.Node) and isinstance(a.meta["val"], torch.SymInt)
                   for a in n.args) for n in joint.graph.nodes), joint.code


def test_a_graph_aotgrad_cannot_take_falls_back_with_a_warning():
    be, graphs = backend()
    check_fallback(be, "aotgrad: PyTorch's min_cut_rematerialization_partition")


def saved_names(fw, num_fwd_outputs=1):
    return [n.name for n in fw.graph.output_node().args[0][num_fwd_outputs:]]


class Checkpointed(nn.Module):
    """Two linears around a sin, under torch.utils.checkpoint with a selective policy."""

    def __init__(self, policy):
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 32)
        self.policy = policy

    def body(self, x):
        return self.b(torch.sin(self.a(x))).cos()

    def forward(self, x):
        if self.policy is None:
            return self.body(x)
        from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
        return checkpoint(self.body, x, use_reentrant=False, context_fn=functools.partial(
            create_selective_checkpoint_contexts, self.policy))


def test_selective_checkpoint_policies_are_honoured():
    from torch.utils.checkpoint import CheckpointPolicy

    def save_sin(ctx, op, *args, **kwargs):
        return (CheckpointPolicy.MUST_SAVE if op is torch.ops.aten.sin.default
                else CheckpointPolicy.PREFER_RECOMPUTE)

    torch.manual_seed(6)
    batches = [(torch.randn(4, 16), torch.randn(4, 32)) for _ in range(3)]
    # Without a policy the min-cut saves the first linear's output and recomputes its sin; the
    # policy makes it save the sin.
    _, fw, _ = check_equal_training(lambda: Checkpointed(None), batches)[0]
    assert "sin" not in saved_names(fw), saved_names(fw)
    joint, fw, _ = check_equal_training(lambda: Checkpointed(save_sin), batches)[0]
    assert str(next(n for n in joint.graph.nodes if n.name == "sin").meta["recompute"]) == \
        "CheckpointPolicy.MUST_SAVE"
    assert "sin" in saved_names(fw), saved_names(fw)


def test_dropout_draws_as_pytorchs_partitioner():
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    def run(partition_fn):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.5), nn.GELU(), nn.Linear(32, 4))
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot_autograd(
            fw_compiler=boxed, bw_compiler=boxed, partition_fn=partition_fn))
        torch.manual_seed(7)
        out = compiled(torch.randn(8, 16))
        out.sum().backward()
        return [out.detach()] + [p.grad for p in model.parameters()]

    ours, theirs = run(aotgrad.min_cut_partition), run(min_cut_rematerialization_partition)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def test_resnet18_trains_as_eager():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(8)
    batches = [(torch.randn(2, 3, 32, 32), torch.randn(2, 10)) for _ in range(3)]
    check_equal_training(lambda: torchvision.models.resnet18(num_classes=10), batches)
