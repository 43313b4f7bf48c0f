"""aotgrad's decisions from Python: aotgrad.explanations and aotgrad.explain(...), the DOT and
timeline pictures, and AOTGRAD_LOGS."""
import torch
import torch.nn as nn

import aotgrad
from test_partition import backend, saved_names
from test_fx import joint_of, mlp, mlp_inputs


def test_every_partition_is_explained():
    torch.manual_seed(0)
    be, graphs = backend(memory_budget=0.5)
    torch._dynamo.reset()
    aotgrad.explanations.clear()
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    torch.compile(model, backend=be)(torch.randn(8, 16)).sum().backward()
    (e,) = aotgrad.explanations
    _, fw, _ = graphs[0]
    assert e.saved == saved_names(fw)
    assert e.text.startswith("saved: %d values" % len(e.saved)), e.text
    assert "memory budget: 0.5" in e.text, e.text
    for name in e.saved:
        assert "  %s " % name in e.text, (name, e.text)


def test_explain_a_joint_graph_and_draw_it():
    joint, num_fwd_outputs, _ = joint_of(mlp, *mlp_inputs())
    e = aotgrad.explain(joint, num_fwd_outputs=num_fwd_outputs)
    assert isinstance(e, aotgrad.Explanation) and e.saved
    dot = e.dot()
    assert dot.startswith("digraph") and "gelu" in dot and "saved" in dot, dot[:400]
    svg = e.timeline_svg("aotgrad min-cut")
    assert svg.lstrip().startswith("<svg") and "aotgrad min-cut" in svg and "default" in svg


def test_logs_say_what_was_saved(capfd):
    joint, num_fwd_outputs, _ = joint_of(mlp, *mlp_inputs())
    aotgrad._C.set_logs("partitioner,aot_graphs")
    try:
        e = aotgrad.explain(joint, num_fwd_outputs=num_fwd_outputs)
    finally:
        aotgrad._C.set_logs("")
    err = capfd.readouterr().err
    assert "aotgrad partitioner" in err and e.text.splitlines()[0] in err, err
    assert "Forward graph" in err and "Backward graph" in err, err
