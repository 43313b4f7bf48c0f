"""aotgrad.fx: FX graphs into aotgrad's IR and back, node by node (Note [FX graphs cross node by
node]). The graphs are PyTorch 2.11's own: joint graphs of its AOTAutograd, and make_fx traces."""
import operator

import pytest
import torch
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._functorch.aot_autograd import aot_function
from torch._functorch.partitioners import default_partition
from torch.fx.experimental.proxy_tensor import make_fx

import aotgrad
from aotgrad import fx as afx


def joint_of(fn, *args):
    """PyTorch's AOTAutograd's joint graph of `fn` (what a partition_fn receives)."""
    seen = {}

    def partition(joint, joint_inputs, **kwargs):
        seen["joint"] = joint
        seen["num_fwd_outputs"] = kwargs["num_fwd_outputs"]
        return default_partition(joint, joint_inputs, **kwargs)

    compiler = lambda gm, _: make_boxed_func(gm.forward)  # noqa: E731
    compiled = aot_function(fn, fw_compiler=compiler, bw_compiler=compiler, partition_fn=partition)
    out = compiled(*args)
    return seen["joint"], seen["num_fwd_outputs"], out


def mlp(x, w1, b1, w2):
    return (F.gelu(x @ w1 + b1) @ w2).tanh().sum()


def mlp_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 8), torch.randn(8, 16, requires_grad=True),
            torch.randn(16, requires_grad=True), torch.randn(16, 3, requires_grad=True))


def crosses_as_its_text_parses(gm):
    """aotgrad's graph of `gm` node by node, after checking that it is the graph aotgrad's parser
    makes of the code PyTorch prints."""
    g = afx.from_fx(gm)
    printed = gm.print_readable(print_output=False, include_stride=True, include_device=True)
    assert g.text().strip() == aotgrad._C.parse(printed).text().strip()
    return g


def test_joint_graph_crosses_as_its_printed_text_parses():
    joint, _, _ = joint_of(mlp, *mlp_inputs())
    g = crosses_as_its_text_parses(joint)
    text = g.text()
    assert "def forward(self, primals, tangents):" in text
    assert 'primals_2: "f32[8, 16][16, 1]cpu"' in text
    assert "torch.ops.aten.gelu.default" in text
    assert len(g) == len(joint.graph.nodes)


def test_round_trip_runs_as_the_joint_graph():
    joint, _, _ = joint_of(mlp, *mlp_inputs())
    back = afx.to_fx(afx.from_fx(joint), like=joint)
    placeholders = joint.graph.find_nodes(op="placeholder")
    ins = [torch.randn(n.meta["val"].shape) for n in placeholders]
    primals = [t for t, n in zip(ins, placeholders) if n.name.startswith("primals")]
    tangents = [t for t, n in zip(ins, placeholders) if n.name.startswith("tangents")]
    want = torch.utils._pytree.tree_leaves(joint(primals, tangents))
    got = back(*ins)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (a is None and b is None) or torch.equal(a, b)
    # Every node kept its name and its fake value.
    assert [n.name for n in back.graph.nodes][:-1] == [n.name for n in joint.graph.nodes][:-1]
    assert all("val" in n.meta for n in back.graph.nodes if n.op != "output")


def test_symbolic_sizes_cross_with_their_hints():
    def f(x, w):
        return (x @ w).relu() + x.sum(1, keepdim=True).expand(x.shape[0], w.shape[1] * 1)

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(6, 8), torch.randn(8, 5))
    g = crosses_as_its_text_parses(gm)
    text = g.text()
    assert "torch.ops.aten.sym_size.int" in text
    assert ': "Sym(s' in text
    back = afx.to_fx(g, like=gm)
    x, w = torch.randn(10, 7), torch.randn(7, 3)
    assert torch.equal(back(x, w), f(x, w))


def test_a_target_that_is_not_an_aten_op_is_named():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    x.meta["val"] = torch.empty(2)
    y = g.call_function(torch.sin, (x,))
    g.output((y,))
    with pytest.raises(afx.UnsupportedNode, match="node 'sin'.*is not an ATen op aotgrad takes"):
        afx.from_fx(torch.fx.GraphModule(torch.nn.Module(), g))


def test_a_wrong_fake_value_is_named_by_the_verifier():
    gm = make_fx(lambda x: x.sin())(torch.randn(3))
    sin = next(n for n in gm.graph.nodes if n.op == "call_function")
    sin.meta["val"] = torch.empty(4)
    with pytest.raises(aotgrad.AotgradError, match="sin.*recorded metadata f32\\[4\\]"):
        afx.from_fx(gm)


def test_an_unknown_op_is_named():
    b = aotgrad._C.GraphBuilder()
    b.placeholder("x", "f32[3][1]cpu")
    with pytest.raises(aotgrad.AotgradError, match="node 'sin' \\(aten::no_such_op.default\\)"):
        b.call("sin", "aten::no_such_op", "default", [("node", "x")], {}, None)


def test_getitem_and_operator_nodes_cross():
    def f(x):
        a, b = x.split(2)
        return a * b

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(4, 3))
    assert operator.getitem in {n.target for n in gm.graph.nodes}
    back = afx.to_fx(afx.from_fx(gm), like=gm)
    x = torch.randn(4, 3)
    assert torch.equal(back(x), f(x))


def test_a_builder_is_finished_once():
    b = aotgrad._C.GraphBuilder()
    b.placeholder("x", "f32[3][1]cpu")
    b.output(("node", "x"))
    assert "x" in b.finish().text()
    for use in (lambda: b.finish(), lambda: b.placeholder("y", "f32[3][1]cpu"),
                lambda: b.output(None)):
        with pytest.raises(aotgrad.AotgradError, match="graph is finished"):
            use()
    with pytest.raises(aotgrad.AotgradError, match="the graph has no output"):
        aotgrad._C.GraphBuilder().finish()


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
def test_every_kind_of_argument_crosses_both_ways(mode):
    # dtypes, a device, a layout and a memory format as keyword arguments, a view's storage
    # offset, concrete and symbolic sizes: into aotgrad's IR as the printed code parses, and back
    # into FX as the same code.
    def f(x):
        y = x.to(torch.float64).sum()
        z = torch.full([2, 3], 2.0, dtype=torch.float32, layout=torch.strided, device="cpu")
        w = x.clone(memory_format=torch.contiguous_format)
        v = x[1:, 1:]
        return y + z.sum() + (w * 2).sum() + v.sum(), v

    x = torch.randn(5, 4)
    gm = make_fx(f, tracing_mode=mode)(x)
    g = crosses_as_its_text_parses(gm)
    text = g.text()
    assert "dtype = torch.float64" in text and "memory_format = torch.contiguous_format" in text
    back = afx.to_fx(g, like=gm)
    def code(m):  # the printed code, below the class line (the module's name)
        return m.print_readable(print_output=False, include_stride=True,
                                include_device=True).split("\n", 1)[1]

    assert code(back) == code(gm)
    got, want = back(x), f(x)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert got[1].storage_offset() == 5
