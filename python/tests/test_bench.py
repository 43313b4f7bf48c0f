"""bench/python_partition.py on the Llama-style block: both partitioners on the same joint graph,
its BENCHMARKS.md section rewritten in place, and aotgrad saving no more than PyTorch."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "python_partition", os.path.join(ROOT, "bench", "python_partition.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_llama_block_both_ways(tmp_path):
    bench = load_bench()
    r = bench.measure("llama_block", reps=1)
    assert r["graphs"] == 1 and r["joint_nodes"] > 200, r
    assert r["aotgrad_s"] > 0 and r["pytorch_s"] > 0 and r["fx_build_s"] > 0, r
    assert 0 < r["aotgrad_saved"] <= r["pytorch_saved"], r
    md = tmp_path / "B.md"
    md.write_text("# b\n\n<!-- other: begin -->\nKEEP\n<!-- other: end -->\n")
    for _ in range(2):  # a second run replaces the section
        section = bench.table([r], "now", "CMD", 1)
        bench.benchmarks_md.put_section(str(md), "python_partition", section)
    text = md.read_text()
    assert text.count("<!-- python_partition: begin -->") == 1 and "KEEP" in text, text
    assert "| llama_block | 1 |" in text and "of which FX build" in text, text


def test_fresh_copy_has_its_own_nodes_and_the_same_values():
    # PyTorch's partitioner is timed on fresh copies of the joint graph (its passes edit the graph
    # they partition): a copy has the same code and fake values, and nodes of its own.
    import torch
    bench = load_bench()
    gm = torch.fx.symbolic_trace(lambda x, y: (x * y).relu() + 1)
    for n in gm.graph.nodes:
        n.meta["val"] = object()
    copy = bench.fresh_copy(gm)
    assert copy.code == gm.code
    pairs = list(zip(gm.graph.nodes, copy.graph.nodes))
    assert len(pairs) == len(gm.graph.nodes) == len(copy.graph.nodes)
    for a, b in pairs:
        assert a is not b and a.name == b.name and a.meta is not b.meta
        assert a.op == "output" or a.meta["val"] is b.meta["val"]


def test_llama_block_peaks_at_two_budgets():
    # Trains the block under Inductor with each partitioner at budgets 1 and 0.05: aotgrad's
    # measured peak must not rise as the budget falls, and the table says so.
    bench = load_bench()
    p = bench.step_peaks("llama_block", steps=1, budgets=(1.0, 0.05))
    rows = p["rows"]
    assert [r["budget"] for r in rows] == [1.0, 0.05], rows
    for r in rows:
        assert r["aotgrad_peak"] > 0 and r["pytorch_peak"] > 0, r
        assert r["aotgrad_step_s"] > 0 and r["pytorch_step_s"] > 0, r
    assert bench.monotone(rows, "aotgrad"), rows
    text = "\n".join(bench.peaks_table([p], 1))
    assert "| llama_block | 0.05 |" in text and "monotone in the budget: **yes**" in text, text
