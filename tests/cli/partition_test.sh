#!/usr/bin/env bash
# The min-cut partition's saved activation bytes on the example models, against aotgrad's default
# partition and against PyTorch's own AOTAutograd (the venv's PyTorch 2.11, tools/functorch_min_cut.py:
# aot_module with min_cut_rematerialization_partition and its own decompositions, the graph at
# the level of aotgrad's core decompositions): unique storage bytes of saved values that are not
# parameters, buffers or inputs, all parameters requiring grad. PyTorch's figure with Inductor's
# decomposition table (which decomposes batch norm, so its min-cut can recompute its pieces) is
# printed beside it, not checked. Also checks that the partition time is reported.
# usage: partition_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

# The models' parameters: placeholders named p_*, less BatchNorm's buffers.
params() { grep -m1 'def forward' "$data/models/$1.fx" | grep -o 'p_[a-z_0-9]*: "f[0-9]*\[' | cut -d: -f1 | grep -v 'running_\|num_batches' | paste -sd, -; }
bytes() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['saved_activation_bytes'])" "$1"; }

"$PY" "$root/tools/functorch_min_cut.py" mlp gpt_block cnn_bn >"$tmp/functorch.jsonl" 2>"$tmp/functorch.err"
check [ $? -eq 0 ] || tail -5 "$tmp/functorch.err"
"$PY" "$root/tools/functorch_min_cut.py" --decompositions=inductor mlp gpt_block cnn_bn \
  >"$tmp/inductor.jsonl" 2>"$tmp/inductor.err"
check [ $? -eq 0 ] || tail -5 "$tmp/inductor.err"
ref_bytes() { "$PY" -c "import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j['model'] == sys.argv[2]: print(j['saved_activation_bytes'])" "$1" "$2"; }
reference=$("$PY" -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['reference'])" "$tmp/functorch.jsonl")
check [ -n "$reference" ]
for m in mlp gpt_block cnn_bn; do
  "$bin" compile "$data/models/$m.fx" --grad="$(params $m)" --stats=json >"$tmp/$m.min_cut.json"
  check [ $? -eq 0 ]
  "$bin" compile "$data/models/$m.fx" --grad="$(params $m)" --partition=default --stats=json >"$tmp/$m.default.json"
  check [ $? -eq 0 ]
  mc=$(bytes "$tmp/$m.min_cut.json")
  df=$(bytes "$tmp/$m.default.json")
  ft=$(ref_bytes "$tmp/functorch.jsonl" "$m")
  echo "$m: saved activation bytes: aotgrad min_cut $mc, aotgrad default $df, $reference min_cut $ft" \
    "(with Inductor's decompositions $(ref_bytes "$tmp/inductor.jsonl" "$m"))"
  check [ -n "$mc" ] && check [ -n "$ft" ]
  check [ "$mc" -le "$df" ]
  check [ "$mc" -le "$ft" ]
  check "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['partition'] == 'min_cut' and j['phases_us']['partition'] > 0, j" "$tmp/$m.min_cut.json"
  # Priced by summed bytes (PyTorch's budget), the saved bytes never grow as the budget falls, and
  # budget 0 saves only inputs.
  prev=$mc
  for b in 0.75 0.5 0.25 0; do
    for solver in greedy dp ilp; do
      "$bin" compile "$data/models/$m.fx" --grad="$(params $m)" --memory-budget=$b --solver=$solver \
        --budget-pricing=sum --explain --stats=json >"$tmp/$m.$b.$solver.json"
      check [ $? -eq 0 ]
    done
    got=$(bytes "$tmp/$m.$b.dp.json")
    echo "$m: memory budget $b: saved activation bytes $got (greedy $(bytes "$tmp/$m.$b.greedy.json"), ilp $(bytes "$tmp/$m.$b.ilp.json"))"
    check [ "$got" -le "$prev" ]
    prev=$got
  done
  check [ "$prev" -eq 0 ]
  check "$PY" -c "import json,sys; e=json.load(open(sys.argv[1]))['explain']; assert e['memory_budget']['stage'] == 'inputs' and all(s['is_input'] for s in e['saved']), e" "$tmp/$m.0.dp.json"
  # Priced by peak (the default), the predicted training-step peak never rises as the budget falls.
  prev=""
  for b in 1 0.75 0.5 0.25 0; do
    "$bin" compile "$data/models/$m.fx" --grad="$(params $m)" --memory-budget=$b --stats=json \
      >"$tmp/$m.$b.peak.json"
    check [ $? -eq 0 ]
    got=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['predicted_peak']['bytes'])" "$tmp/$m.$b.peak.json")
    echo "$m: memory budget $b priced by peak: predicted peak $got bytes"
    [ -n "$prev" ] && check [ "$got" -le "$prev" ]
    prev=$got
  done
done

finish
