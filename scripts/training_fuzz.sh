#!/usr/bin/env bash
# The differential fuzzer of the training path (tests/fuzz/training_fuzz.cc, tests/fuzz/README.md):
# builds `training_fuzz` (scripts/build.sh, into $AOTGRAD_BUILD_DIR, else build/), runs seeds
# 0 .. N-1 split into J contiguous ranges, one process each, and prints each range's summary and
# the totals. Exits non-zero when any process found a mismatch not put down to a known issue, or
# crashed; each mismatch's program (and with --shrink its minimal form) is in that range's log.
#
#   scripts/training_fuzz.sh [--seeds=N] [--jobs=J] [--first=S] [--shrink] [--strict] [--no-build]
#
# --seeds: how many seeds (default 100000); --jobs: processes (default 2); --first: the first
# seed (default 0); --shrink, --strict: passed to training_fuzz; --no-build: run the binary
# already built. The logs stay in a temporary directory it names.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds=100000
jobs=2
first=0
extra=()
build_it=1
for a in "$@"; do
  case "$a" in
    --seeds=*) seeds="${a#--seeds=}" ;;
    --jobs=*) jobs="${a#--jobs=}" ;;
    --first=*) first="${a#--first=}" ;;
    --shrink | --strict) extra+=("$a") ;;
    --no-build) build_it=0 ;;
    -h | --help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "training_fuzz.sh: unknown argument '$a'" >&2
      exit 2
      ;;
  esac
done
. "$root/scripts/build_dir.sh"
if [[ $build_it -eq 1 ]]; then
  AOTGRAD_JOBS="${AOTGRAD_JOBS:-2}" "$root/scripts/build.sh" training_fuzz >/dev/null
fi
bin="$build/tests/training_fuzz"
logs="$(mktemp -d -t aotgrad-training-fuzz.XXXXXX)"
export AOTGRAD_CACHE_DIR=off
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "training_fuzz.sh: seeds $first..$((first + seeds - 1)) in $jobs processes, commit $commit, logs in $logs"
start=$(date +%s)
pids=()
for ((j = 0; j < jobs; ++j)); do
  a=$((first + seeds * j / jobs))
  b=$((first + seeds * (j + 1) / jobs))
  "$bin" --seeds="$a:$b" "${extra[@]}" >"$logs/range_$j.log" 2>&1 &
  pids+=($!)
done
status=0
for ((j = 0; j < jobs; ++j)); do
  if ! wait "${pids[$j]}"; then status=1; fi
  tail -n 1 "$logs/range_$j.log" | sed "s/^/range $j: /"
done
# Totals over the ranges' summary lines.
cat "$logs"/range_*.log | grep '^training_fuzz: cases' | awk -v secs=$(($(date +%s) - start)) '
  function add(key, text,   n, i, j, m, name, parts, kv) {
    n = split(text, parts, ", ")
    for (i = 1; i <= n; ++i) {
      m = split(parts[i], kv, " ")
      if (m < 2) continue
      name = kv[1]; for (j = 2; j < m; ++j) name = name " " kv[j]
      by[key, name] += kv[m]; names[key, name] = 1
    }
  }
  {
    match($0, /cases [0-9]+/); cases += substr($0, RSTART + 6, RLENGTH - 6)
    match($0, /eager raises [0-9]+/); invalid += substr($0, RSTART + 13, RLENGTH - 13)
    match($0, /runs [0-9]+/); runs += substr($0, RSTART + 5, RLENGTH - 5)
    match($0, /matched [0-9]+/); matched += substr($0, RSTART + 8, RLENGTH - 8)
    match($0, /bitwise [0-9]+/); bitwise += substr($0, RSTART + 8, RLENGTH - 8)
    match($0, /raised [0-9]+ \[[^]]*\]/); r = substr($0, RSTART, RLENGTH)
    split(r, rp, " "); raised += rp[2]; sub(/^raised [0-9]+ \[/, "", r); sub(/\]$/, "", r); add("r", r)
    match($0, /known issues [0-9]+ \[[^]]*\]/); k = substr($0, RSTART, RLENGTH)
    split(k, kp, " "); known += kp[3]; sub(/^known issues [0-9]+ \[/, "", k); sub(/\]$/, "", k); add("k", k)
    match($0, /mismatches [0-9]+/); mismatches += substr($0, RSTART + 11, RLENGTH - 11)
  }
  END {
    rs = ""; ks = ""
    for (x in names) { split(x, xy, SUBSEP); s = xy[2] " " by[x]
      if (xy[1] == "r") rs = rs (rs == "" ? "" : ", ") s; else ks = ks (ks == "" ? "" : ", ") s }
    printf "total: cases %d (eager raises %d), runs %d: matched %d (bitwise %d), raised %d [%s], known issues %d [%s], mismatches %d, %d s\n",
      cases, invalid, runs, matched, bitwise, raised, rs, known, ks, mismatches, secs
  }'
if [[ $status -ne 0 ]]; then
  echo "training_fuzz.sh: FAILED (a mismatch or a crash); see $logs" >&2
  grep -h '^MISMATCH' "$logs"/range_*.log | head -20 >&2 || true
fi
exit $status
