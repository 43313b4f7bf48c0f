#!/usr/bin/env bash
# Coverage-guided fuzzing of the inputs users hand in (tests/fuzz): builds the libFuzzer targets
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer (AOTGRAD_FUZZ=ON, no libtorch) and
# runs each for a bounded time on a copy of its seed corpus (tests/fuzz/corpus/<target>; the run's
# new inputs stay in the copy). Exits non-zero on any crash, hang (-timeout), leak, sanitizer
# report or out-of-memory; the reproducer and the log stay in a temporary directory it names.
#
#   scripts/fuzz.sh [--seconds=N] [--jobs=N] [TARGET...]
#
# --seconds: time per target (default 30); --jobs: build jobs (default AOTGRAD_JOBS, else 2);
# TARGET: graph_text_fuzz, safetensors_fuzz, cache_entry_fuzz, options_fuzz (default: all).
# The build directory is AOTGRAD_FUZZ_BUILD_DIR, else build-fuzz/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${AOTGRAD_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds=30
jobs="${AOTGRAD_JOBS:-2}"
targets=()
for a in "$@"; do
  case "$a" in
    --seconds=*) seconds="${a#--seconds=}" ;;
    --jobs=*) jobs="${a#--jobs=}" ;;
    -h | --help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "fuzz.sh: unknown option '$a'" >&2
      exit 2
      ;;
    *) targets+=("$a") ;;
  esac
done
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: --seconds takes a positive integer, got '$seconds'" >&2
  exit 2
fi
all=(graph_text_fuzz safetensors_fuzz cache_entry_fuzz options_fuzz)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [[ ! " ${all[*]} " == *" $t "* ]]; then
    echo "fuzz.sh: unknown target '$t' (known: ${all[*]})" >&2
    exit 2
  fi
done

# The compiler is chosen when the build directory is first configured (naming another one later
# would make CMake drop its cache, AOTGRAD_FUZZ included).
compiler=()
if [ ! -f "$build/CMakeCache.txt" ]; then
  cxx="${AOTGRAD_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}"
  if [ -z "$cxx" ]; then
    echo "fuzz.sh: clang++ not found (Debian: apt-get install clang libclang-rt-dev)" >&2
    exit 2
  fi
  compiler=(-DCMAKE_CXX_COMPILER="$cxx")
fi
cmake -S "$root" -B "$build" -G Ninja "${compiler[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAOTGRAD_FUZZ=ON >/dev/null
ninja -C "$build" -j"$jobs" "${targets[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/aotgrad-fuzz.XXXXXX")"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
failed=()
for t in "${targets[@]}"; do
  name="${t%_fuzz}"
  corpus="$work/corpus/$name"
  mkdir -p "$corpus" "$work/artifacts"
  if [ -d "$root/tests/fuzz/corpus/$name" ]; then cp "$root/tests/fuzz/corpus/$name"/* "$corpus/"; fi
  # safetensors seeds are binary: written here rather than kept in the repo.
  if [ "$name" = safetensors ]; then python3 "$root/tests/fuzz/safetensors_seeds.py" "$corpus"; fi
  dict=()
  [ -f "$root/tests/fuzz/$name.dict" ] && dict=("-dict=$root/tests/fuzz/$name.dict")
  start=$SECONDS
  if (cd "$work" && "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=5 \
    -rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$name-" "${dict[@]}" "$corpus") >"$work/$name.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
    echo "fuzz.sh: $t: ok, ${runs:-?} runs in $((SECONDS - start)) s"
  else
    failed+=("$t")
    echo "fuzz.sh: $t: FAILED -- log $work/$name.log, reproducer in $work/artifacts/" >&2
    tail -n 40 "$work/$name.log" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}; everything is in $work" >&2
  echo "fuzz.sh: rerun one input: $build/tests/fuzz/TARGET FILE" >&2
  exit 1
fi
rm -rf "$work"
