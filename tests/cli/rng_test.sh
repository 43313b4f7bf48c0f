#!/usr/bin/env bash
# A random op the backward recomputes (here for activation memory budget 0) replays the forward's
# generator state: `aotgrad compile --explain` lists the saved state, the dumped forward and
# backward call run_and_save_rng_state / run_with_rng_state and parse back, and `run --train` runs.
# usage: rng_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

cat >"$tmp/dropout.fx" <<'EOF'
def forward(self, x: "f32[16, 32]", w: "f32[32, 32]"):
    mm = torch.ops.aten.mm.default(x, w)
    native_dropout = torch.ops.aten.native_dropout.default(mm, 0.5, True)
    getitem = native_dropout[0]
    cos = torch.ops.aten.cos.default(getitem)
    sum_1 = torch.ops.aten.sum.default(cos)
    return (sum_1,)
EOF

# Budget 0: only the inputs are saved, the dropout is recomputed, its state saved.
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --budget-pricing=sum --explain >"$tmp/explain.txt"
check [ $? -eq 0 ]
check has "$tmp/explain.txt" "u8[5056][1]cpu 5056 bytes: rng state for recomputed native_dropout"
check has "$tmp/explain.txt" "  native_dropout aten::native_dropout"
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --budget-pricing=sum --dump="$tmp/dump" >/dev/null
check [ $? -eq 0 ]
check has "$tmp/dump/fw.fx" "torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, mm, 0.5, True)"
check has "$tmp/dump/bw.fx" "rng_state_output_0: \"u8[5056][1]cpu\""
check has "$tmp/dump/bw.fx" "torch.ops.higher_order.run_with_rng_state(rng_state_output_0, torch.ops.aten.native_dropout.default, mm, 0.5, True)"
for f in fw bw; do
  "$bin" check "$tmp/dump/$f.fx" >"$tmp/$f.check.fx"
  check [ $? -eq 0 ]
  check cmp -s "$tmp/dump/$f.fx" "$tmp/$f.check.fx"
done
# The default budget saves the dropout's results: no state.
"$bin" compile "$tmp/dropout.fx" --grad=w --explain >"$tmp/explain1.txt"
check [ $? -eq 0 ]
check hasnt "$tmp/explain1.txt" "rng state"
check has "$tmp/explain1.txt" "native_dropout aten::native_dropout: random op"
# The saved state appears in the JSON statistics too, and training runs.
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --budget-pricing=sum --explain --stats=json >"$tmp/stats.json"
check [ $? -eq 0 ]
check has "$tmp/stats.json" '"why":"rng state for recomputed native_dropout"'
"$bin" run "$tmp/dropout.fx" --random-inputs --train --grad=w --memory-budget=0 --budget-pricing=sum \
  --outputs="$tmp/out.safetensors" >/dev/null
check [ $? -eq 0 ]

# --seed seeds the graph's random ops too: the mask below depends on the seed alone.
cat >"$tmp/mask.fx" <<'EOF'
def forward(self, x: "f32[64]"):
    ones_like = torch.ops.aten.ones_like.default(x)
    native_dropout = torch.ops.aten.native_dropout.default(ones_like, 0.5, True)
    getitem = native_dropout[0]
    return (getitem,)
EOF
for run in 7a 7b 8; do
  "$bin" run "$tmp/mask.fx" --random-inputs --seed="${run%[ab]}" \
    --outputs="$tmp/seed_$run.safetensors" >/dev/null
  check [ $? -eq 0 ]
done
differ() { ! cmp -s "$1" "$2"; }
check cmp -s "$tmp/seed_7a.safetensors" "$tmp/seed_7b.safetensors"
check differ "$tmp/seed_7a.safetensors" "$tmp/seed_8.safetensors"

finish
