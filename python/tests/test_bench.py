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
    assert r["aotgrad_s"] > 0 and r["pytorch_s"] > 0, r
    assert 0 < r["aotgrad_saved"] <= r["pytorch_saved"], r
    md = tmp_path / "B.md"
    md.write_text("# b\n\n<!-- other: begin -->\nKEEP\n<!-- other: end -->\n")
    for _ in range(2):  # a second run replaces the section
        section = bench.table([r], "now", "CMD", 1)
        bench.benchmarks_md.put_section(str(md), "python_partition", section)
    text = md.read_text()
    assert text.count("<!-- python_partition: begin -->") == 1 and "KEEP" in text, text
    assert "| llama_block | 1 |" in text, text
