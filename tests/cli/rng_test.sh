#!/usr/bin/env bash
# A random op the backward recomputes (here for activation memory budget 0) replays the forward's
# generator state: `aotgrad compile --explain` lists the saved state, the dumped forward and
# backward call run_and_save_rng_state / run_with_rng_state and parse back, and `run --train` runs.
# usage: rng_test.sh AOTGRAD_BINARY TEST_DATA_DIR
set -u
bin="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { if "$@"; then passes=$((passes + 1)); else fail "$*"; fi; }
has() { grep -qF -- "$1" "$2" || { echo "missing in $2: $1"; cat "$2"; return 1; }; }
lacks() { ! grep -qF -- "$1" "$2" || { echo "unexpected in $2: $1"; cat "$2"; return 1; }; }

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
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --explain >"$tmp/explain.txt"
check [ $? -eq 0 ]
check has "u8[5056][1]cpu 5056 bytes: rng state for recomputed native_dropout" "$tmp/explain.txt"
check has "  native_dropout aten::native_dropout" "$tmp/explain.txt"
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --dump="$tmp/dump" >/dev/null
check [ $? -eq 0 ]
check has "torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, mm, 0.5, True)" "$tmp/dump/fw.fx"
check has "rng_state_output_0: \"u8[5056][1]cpu\"" "$tmp/dump/bw.fx"
check has "torch.ops.higher_order.run_with_rng_state(rng_state_output_0, torch.ops.aten.native_dropout.default, mm, 0.5, True)" "$tmp/dump/bw.fx"
for f in fw bw; do
  "$bin" check "$tmp/dump/$f.fx" >"$tmp/$f.check.fx"
  check [ $? -eq 0 ]
  check cmp -s "$tmp/dump/$f.fx" "$tmp/$f.check.fx"
done
# The default budget saves the dropout's results: no state.
"$bin" compile "$tmp/dropout.fx" --grad=w --explain >"$tmp/explain1.txt"
check [ $? -eq 0 ]
check lacks "rng state" "$tmp/explain1.txt"
check has "native_dropout aten::native_dropout: random op" "$tmp/explain1.txt"
# The saved state appears in the JSON statistics too, and training runs.
"$bin" compile "$tmp/dropout.fx" --grad=w --memory-budget=0 --explain --stats=json >"$tmp/stats.json"
check [ $? -eq 0 ]
check has '"why":"rng state for recomputed native_dropout"' "$tmp/stats.json"
"$bin" run "$tmp/dropout.fx" --random-inputs --train --grad=w --memory-budget=0 \
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

echo "rng_test: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
