#!/usr/bin/env bash
# The measured cost model (issue 18, item 1): `aotgrad calibrate` measures this machine's kernels
# into a cost profile; `compile --cost-model=measured` prices the memory budget's plans in seconds
# from it, `--memory-budget=auto` takes the lowest predicted peak within `--max-slowdown`; a
# missing or corrupt profile and misplaced options are errors that say what to do.
# usage: calibrate_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

profile="$tmp/sub/profile.json"
expect_exit 0 "calibrate" "$bin" calibrate --output="$profile" --repetitions=1
check has "$tmp/out" "cost profile: $profile"
check has "$tmp/out" "GFLOP/s at the largest point"
check "$PY" -c "
import json, math, sys
p = json.load(open(sys.argv[1]))
assert p['format'] == 'aotgrad cost profile' and p['version'] == 2, p
# Points of growing work, each a measured time. (That the times never fall is what the calibration
# makes them, and how fast a kernel is here is a benchmark's figure, so neither is asserted.)
def measured(name, pts, count=None):
    assert len(pts) >= 5 if count is None else len(pts) == count, (name, pts)
    assert all(a[0] < b[0] for a, b in zip(pts, pts[1:])), (name, pts)
    assert all(t > 0 and math.isfinite(t) for _, t in pts), (name, pts)
for curve in ('matmul', 'convolution', 'memory'):
    measured(curve, p[curve])
# The kernels their bytes do not price, six sizes each.
ops = p['ops']
for op in ('aten::_native_batch_norm_legit_functional', 'aten::native_batch_norm',
           'aten::max_pool2d_with_indices', 'aten::avg_pool2d', 'aten::native_layer_norm',
           'aten::_softmax', 'aten::_log_softmax', 'aten::gelu', 'aten::silu', 'aten::sigmoid',
           'aten::tanh'):
    measured(op, ops[op], 6)
" "$profile"
check has "$tmp/out" "aten::max_pool2d_with_indices: "
# No temporary file is left beside it.
check [ "$(ls -A "$tmp/sub")" = "profile.json" ]

m="$data/models/gpt_block_wide.fx"
grad="$(grep -m1 'def forward' "$m" | grep -o 'p_[a-z_0-9]*: "f[0-9]*\[' | cut -d: -f1 | paste -sd, -)"
expect_exit 0 "measured budget" "$bin" compile "$m" --grad="$grad" --memory-budget=0.5 \
  --cost-model=measured --cost-profile="$profile" --stats=json --explain
check "$PY" -c "
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j['cost_model'] == 'measured', j['cost_model']
plans = j['explain']['memory_budget']['plans']
chosen = [p for p in plans if p['chosen']]
assert len(chosen) == 1 and chosen[0]['peak_ratio'] <= 0.5, chosen
# Priced in seconds from the profile (how many is this machine's figure, not asserted).
assert all(0 < q['step_cost'] and math.isfinite(q['step_cost']) for q in plans), plans
" "$tmp/out"
# The default profile location: AOTGRAD_COST_PROFILE.
expect_exit 0 "profile from the environment" env AOTGRAD_COST_PROFILE="$profile" "$bin" compile "$m" \
  --grad="$grad" --memory-budget=auto --cost-model=measured --explain
check has "$tmp/out" "memory budget: auto, max slowdown 0.1"
expect_exit 0 "auto" "$bin" compile "$m" --grad="$grad" --memory-budget=auto --max-slowdown=0.1 \
  --stats=json
check "$PY" -c "
import json, sys
j = json.load(open(sys.argv[1]))
assert j['memory_budget'] == 'auto' and j['max_slowdown'] == 0.1 and j['cost_model'] == 'flops', j
" "$tmp/out"

# Errors.
expect_exit 1 "missing profile" "$bin" compile "$m" --grad="$grad" --memory-budget=0.5 \
  --cost-model=measured --cost-profile="$tmp/none.json"
check has "$tmp/err" "$tmp/none.json"
check has "$tmp/err" "aotgrad calibrate"
head -c 40 "$profile" >"$tmp/cut.json"
expect_exit 1 "corrupt profile" "$bin" compile "$m" --grad="$grad" --memory-budget=0.5 \
  --cost-model=measured --cost-profile="$tmp/cut.json"
check has "$tmp/err" "cost profile '$tmp/cut.json': not JSON"
expect_exit 2 "unknown cost model" "$bin" compile "$m" --cost-model=cycles
check has "$tmp/err" "unknown cost model 'cycles' (known: flops, measured)"
expect_exit 2 "profile without measured" "$bin" compile "$m" --cost-profile="$profile"
check has "$tmp/err" "--cost-profile applies to --cost-model=measured"
expect_exit 2 "slowdown without auto" "$bin" compile "$m" --max-slowdown=0.1
check has "$tmp/err" "--max-slowdown applies to --memory-budget=auto"
expect_exit 2 "bad slowdown" "$bin" compile "$m" --memory-budget=auto --max-slowdown=-1
check has "$tmp/err" "--max-slowdown takes a fraction of at least 0"
expect_exit 2 "bad repetitions" "$bin" calibrate --output="$tmp/x.json" --repetitions=0
check [ ! -e "$tmp/x.json" ]

finish
