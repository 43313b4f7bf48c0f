#!/usr/bin/env bash
# The compile cache on the command line (--cache-dir=DIR): hits and misses in --stats=json, the
# same outputs and grads from a hit, a corrupted entry reported and rewritten, concurrent writers,
# an unusable directory, AOTGRAD_LOGS=cache, and no cache (nor any file in HOME) without the option.
# usage: cache_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
# cache_field FILE FIELD: the field of the "cache" object of a --stats=json line.
cache_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cache"][sys.argv[2]])' "$1" "$2"; }
entries() { find "$1" -name '*.entry' | wc -l; }
leftovers() { find "$1" -name '*.tmp' | wc -l; }

g="$data/models/mlp.fx"
c="$tmp/cache"

# run --train: a miss that saves the entry, then a hit with byte-identical outputs and grads.
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c" --stats=json \
  --outputs="$tmp/a.safetensors" >"$tmp/a.json"
check [ $? -eq 0 ]
check [ "$(cache_field "$tmp/a.json" misses)" = 1 ]
check [ "$(cache_field "$tmp/a.json" saved)" = 1 ]
check [ "$(cache_field "$tmp/a.json" hits)" = 0 ]
check [ "$(entries "$c")" = 1 ]
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c" --stats=json \
  --outputs="$tmp/b.safetensors" >"$tmp/b.json"
check [ $? -eq 0 ]
check [ "$(cache_field "$tmp/b.json" hits)" = 1 ]
check [ "$(cache_field "$tmp/b.json" misses)" = 0 ]
check cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors"
# Another partition is another entry.
"$bin" run "$g" --random-inputs --train --grad=all --partition=default --cache-dir="$c" \
  --stats=json >"$tmp/c.json"
check [ "$(cache_field "$tmp/c.json" misses)" = 1 ]
check [ "$(entries "$c")" = 2 ]

# compile --stats=json reads the entry run wrote (the same key); --dump compiles without reading.
"$bin" compile "$g" --grad=all --cache-dir="$c" --stats=json >"$tmp/d.json"
check [ $? -eq 0 ]
check [ "$(cache_field "$tmp/d.json" hits)" = 1 ]
check "$PY" - "$tmp/d.json" <<'P'
import json, sys
j = json.load(open(sys.argv[1]))
assert "joint_nodes" not in j and j["fw_nodes"] > 0 and j["bw_nodes"] > 0, j
assert "cache_load" in j["phases_us"], j["phases_us"]
P
# A hit logs the graphs it loaded, as a compilation does (AOTGRAD_LOGS=aot_graphs); no joint graph.
AOTGRAD_LOGS=aot_joint_graph,aot_graphs "$bin" compile "$g" --grad=all --cache-dir="$c" \
  --stats=json >"$tmp/hit.json" 2>"$tmp/hit.err"
check [ $? -eq 0 ]
check [ "$(cache_field "$tmp/hit.json" hits)" = 1 ]
check has "$tmp/hit.err" "===== Forward graph 0 (from the compile cache) ====="
check has "$tmp/hit.err" "===== Backward graph 0 (from the compile cache) ====="
check hasnt "$tmp/hit.err" "Joint graph"
"$bin" compile "$g" --grad=all --cache-dir="$c" --dump="$tmp/dump" --stats=json >"$tmp/e.json"
check [ "$(cache_field "$tmp/e.json" bypasses)" = 1 ]
check [ -s "$tmp/dump/joint.fx" ]

# Inference: compile prints the same functional graph from a hit.
"$bin" compile "$g" --cache-dir="$c" >"$tmp/fw1.fx"
check [ $? -eq 0 ]
"$bin" compile "$g" --cache-dir="$c" --stats=json >"$tmp/f.json"
check [ "$(cache_field "$tmp/f.json" hits)" = 1 ]
"$bin" compile "$g" --cache-dir="$c" >"$tmp/fw2.fx"
check cmp -s "$tmp/fw1.fx" "$tmp/fw2.fx"
"$bin" compile "$g" >"$tmp/fw0.fx"
check cmp -s "$tmp/fw0.fx" "$tmp/fw2.fx"

# A corrupted entry: one warning naming the file, the same results, the entry rewritten.
c2="$tmp/cache2"
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c2" >/dev/null
entry="$(find "$c2" -name '*.entry')"
head -c 300 "$entry" >"$tmp/cut" && cp "$tmp/cut" "$entry"
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c2" --stats=json \
  --outputs="$tmp/g.safetensors" >"$tmp/g.json" 2>"$tmp/g.err"
check [ $? -eq 0 ]
check has "$tmp/g.err" "$entry"
check has "$tmp/g.err" "truncated"
check [ "$(grep -c warning "$tmp/g.err")" = 1 ]
check [ "$(cache_field "$tmp/g.json" corrupt)" = 1 ]
check cmp -s "$tmp/a.safetensors" "$tmp/g.safetensors"
printf 'garbage\n' >"$entry"
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c2" >/dev/null 2>"$tmp/h.err"
check [ $? -eq 0 ]
check has "$tmp/h.err" "not a compile cache entry"
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c2" --stats=json >"$tmp/h.json" 2>"$tmp/h2.err"
check [ "$(cache_field "$tmp/h.json" hits)" = 1 ]
check [ ! -s "$tmp/h2.err" ]

# Concurrent writers of one key: every process succeeds, one whole entry, no temporary files.
c3="$tmp/cache3"
pids=()
for i in 1 2 3 4; do
  "$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c3" \
    --outputs="$tmp/p$i.safetensors" >/dev/null 2>"$tmp/p$i.err" &
  pids+=($!)
done
for p in "${pids[@]}"; do
  wait "$p"
  check [ $? -eq 0 ]
done
check [ "$(entries "$c3")" = 1 ]
check [ "$(leftovers "$c3")" = 0 ]
for i in 1 2 3 4; do
  check cmp -s "$tmp/a.safetensors" "$tmp/p$i.safetensors"
  check [ ! -s "$tmp/p$i.err" ]
done
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$c3" --stats=json >"$tmp/q.json"
check [ "$(cache_field "$tmp/q.json" hits)" = 1 ]

# An unusable directory (below a regular file): a warning, and the run works without the cache.
printf 'x' >"$tmp/file"
"$bin" run "$g" --random-inputs --train --grad=all --cache-dir="$tmp/file/cache" --stats=json \
  >"$tmp/r.json" 2>"$tmp/r.err"
check [ $? -eq 0 ]
check has "$tmp/r.err" "cannot be used"
check [ "$(cache_field "$tmp/r.json" bypasses)" = 1 ]

# AOTGRAD_LOGS=cache: the miss, the saved entry, the hit.
c4="$tmp/cache4"
AOTGRAD_LOGS=cache "$bin" run "$g" --random-inputs --cache-dir="$c4" >/dev/null 2>"$tmp/l1.err"
check has "$tmp/l1.err" "aotgrad cache: miss for key"
check has "$tmp/l1.err" "aotgrad cache: saved $c4/"
AOTGRAD_LOGS=cache "$bin" run "$g" --random-inputs --cache-dir="$c4" >/dev/null 2>"$tmp/l2.err"
check has "$tmp/l2.err" "aotgrad cache: hit for key"

# Without --cache-dir the command line uses no cache, whatever HOME says.
mkdir -p "$tmp/home"
env -u AOTGRAD_CACHE_DIR -u XDG_CACHE_HOME HOME="$tmp/home" "$bin" run "$g" --random-inputs --train \
  --grad=all --stats=json >"$tmp/s.json"
check [ $? -eq 0 ]
check [ "$(cache_field "$tmp/s.json" dir)" = None ]
check [ ! -e "$tmp/home/.cache" ]
# Bad usage.
"$bin" run "$g" --random-inputs --no-compile --cache-dir="$c" >/dev/null 2>&1
check [ $? -eq 2 ]
"$bin" compile "$g" --cache-dir= >/dev/null 2>&1
check [ $? -eq 2 ]

finish
