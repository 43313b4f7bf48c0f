#!/usr/bin/env bash
# AOTGRAD_LOGS (aot_joint_graph, aot_graphs, partitioner, cache, recompiles, collectives, +all; unknown names exit 2),
# compile --dot (rendered with Graphviz's dot -Tsvg) and compile --timeline (well-formed SVG with
# two curves and their peaks); unwritable paths exit 1 and leave nothing behind.
# usage: logs_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

cat >"$tmp/lr.fx" <<'FX'
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
FX

# aot_joint_graph + aot_graphs: the three graphs in order, on stderr only.
AOTGRAD_LOGS=aot_joint_graph,aot_graphs "$bin" compile "$tmp/lr.fx" --grad=w,b >"$tmp/out" 2>"$tmp/err"
check [ $? -eq 0 ]
check has "$tmp/err" "TRACED GRAPH"
check has "$tmp/err" " ===== Joint graph 0 ====="
check has "$tmp/err" " ===== Forward graph 0 ====="
check has "$tmp/err" " ===== Backward graph 0 ====="
check hasnt "$tmp/err" "materialized backwards"
check hasnt "$tmp/out" "TRACED GRAPH"
order=$(grep -o '===== [A-Za-z]* graph 0' "$tmp/err" | paste -sd, -)
check [ "$order" = "===== Joint graph 0,===== Forward graph 0,===== Backward graph 0" ]

# partitioner: PyTorch's materialized-backwards line of §13.20 and the min-cut explanation.
AOTGRAD_LOGS=partitioner "$bin" compile "$tmp/lr.fx" --grad=w,b >/dev/null 2>"$tmp/err"
check [ $? -eq 0 ]
check has "$tmp/err" "materialized backwards: relu (detach, output)"
check has "$tmp/err" "detach_1 f32[4, 16][16, 1]cpu 256 bytes: min cut"
check has "$tmp/err" "addmm aten::addmm: not in recomputable allowlist"
check hasnt "$tmp/err" "TRACED GRAPH"
AOTGRAD_LOGS=partitioner "$bin" compile "$tmp/lr.fx" --grad=w,b --partition=default >/dev/null 2>"$tmp/err"
check has "$tmp/err" "default_partition saves every forward value the backward uses: 2 values: primals_1, relu"

# +all, with spaces; cache logs nothing while there is no cache; inference logs its forward graph.
AOTGRAD_LOGS=" +all " "$bin" compile "$tmp/lr.fx" --grad=w >/dev/null 2>"$tmp/err"
check [ $? -eq 0 ]
check has "$tmp/err" "===== Joint graph 0 ====="
check has "$tmp/err" "partitioner (graph 0)"
AOTGRAD_LOGS=cache "$bin" compile "$tmp/lr.fx" --grad=w >/dev/null 2>"$tmp/err"
check [ $? -eq 0 ]
check [ ! -s "$tmp/err" ]
AOTGRAD_LOGS=aot_graphs "$bin" compile "$tmp/lr.fx" >/dev/null 2>"$tmp/err"
check has "$tmp/err" " ===== Forward graph 0 ====="
check hasnt "$tmp/err" "Backward graph"

# An unknown name: exit 2 listing the valid names, for every command.
AOTGRAD_LOGS=aot_graphs,joint_graph "$bin" compile "$tmp/lr.fx" --grad=w >"$tmp/out" 2>"$tmp/err"
check [ $? -eq 2 ]
check has "$tmp/err" "unknown log name 'joint_graph'; valid names: aot_joint_graph, aot_graphs, partitioner, cache, recompiles, collectives, all"
check [ ! -s "$tmp/out" ]
AOTGRAD_LOGS=partitioners "$bin" check "$tmp/lr.fx" >/dev/null 2>&1
check [ $? -eq 2 ]

# --dot on a model: every role's colour appears, the legend, and Graphviz renders it.
params() { grep -m1 'def forward' "$data/models/$1.fx" | grep -o 'p_[a-z_0-9]*: "f[0-9]*\[' | cut -d: -f1 | grep -v 'running_\|num_batches' | paste -sd, -; }
"$bin" compile "$data/models/mlp.fx" --grad="$(params mlp)" --dot="$tmp/mlp.dot" --timeline="$tmp/mlp.svg" >/dev/null
check [ $? -eq 0 ]
for c in '#a6cee3' '#fdbf6f' '#b2df8a' '#ffff66' '#fb9a99'; do check has "$tmp/mlp.dot" "fillcolor=\"$c\""; done
check has "$tmp/mlp.dot" 'cluster_legend'
check has "$tmp/mlp.dot" 'tooltip="saved"'
dot -Tsvg "$tmp/mlp.dot" -o "$tmp/mlp.dot.svg" 2>"$tmp/dot.err"
check [ $? -eq 0 ]
check [ ! -s "$tmp/dot.err" ]
check has "$tmp/mlp.dot.svg" 'fill="#ffff66"'
check has "$tmp/mlp.dot.svg" 'fill="#fdbf6f"'
check has "$tmp/mlp.dot.svg" '>tangents_1</text>'
check has "$tmp/mlp.dot.svg" '>legend</text>'
# recomputed nodes: the GPT block's min cut recomputes pointwise ops.
"$bin" compile "$data/models/gpt_block.fx" --grad="$(params gpt_block)" --dot="$tmp/gpt.dot" >/dev/null
check [ $? -eq 0 ]
check has "$tmp/gpt.dot" 'tooltip="recomputed"'
dot -Tsvg "$tmp/gpt.dot" -o "$tmp/gpt.dot.svg"
check [ $? -eq 0 ]
check has "$tmp/gpt.dot.svg" 'fill="#cab2d6"'

# --timeline: well-formed SVG, two polylines, both peaks in the legend, the default's peak as its
# own timeline; min_cut's peak no more than the default's on the MLP.
check "$PY" - "$tmp/mlp.svg" <<'PYEOF'
import re, sys, xml.dom.minidom
text = open(sys.argv[1]).read()
doc = xml.dom.minidom.parseString(text)
lines = doc.getElementsByTagName("polyline")
assert len(lines) == 2, len(lines)
for l in lines:
    pts = l.getAttribute("points").split()
    assert len(pts) > 10, pts
legend = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.getAttribute("class") == "legend"]
assert len(legend) == 2 and legend[0].startswith("min_cut (chosen): peak") and legend[1].startswith("default_partition: peak"), legend
peaks = [int(re.search(r"\((\d+) bytes\)", s).group(1)) for s in legend]
assert 0 < peaks[0] <= peaks[1], peaks
PYEOF

# Errors: --dot/--timeline need a training compilation; unwritable paths exit 1, nothing written.
"$bin" compile "$tmp/lr.fx" --dot="$tmp/x.dot" >/dev/null 2>"$tmp/err"
check [ $? -eq 2 ]
check has "$tmp/err" "--dot draws the partition of a training compilation"
"$bin" compile "$tmp/lr.fx" --grad=w --dot="$tmp/missing/x.dot" >/dev/null 2>"$tmp/err"
check [ $? -eq 1 ]
check has "$tmp/err" "cannot write '$tmp/missing/x.dot'"
mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
  "$bin" compile "$tmp/lr.fx" --grad=w --timeline="$tmp/ro/t.svg" >/dev/null 2>"$tmp/err"
  check [ $? -eq 1 ]
  check [ -z "$(ls -A "$tmp/ro")" ]
fi
"$bin" compile "$tmp/lr.fx" --grad=w --timeline="$tmp/t.svg/" >/dev/null 2>"$tmp/err"
check [ $? -eq 1 ]
check [ -z "$(ls "$tmp" | grep '\.tmp\.')" ]
"$bin" compile --help >"$tmp/help"
check has "$tmp/help" "--dot"
check has "$tmp/help" "--timeline"
check has "$tmp/help" "AOTGRAD_LOGS"

finish
