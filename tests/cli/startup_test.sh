#!/usr/bin/env bash
# The command line loads libtorch only for what needs it: check, ops, opt and compile (and run's
# --help) never load it; run loads the command line's libtorch module (aotgrad_torch.so); without
# the module, run is an error naming it and the other commands still work.
# (Their speed is measured by bench/cli_startup.sh, not here.)
# usage: startup_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

# loads_torch CMD...: whether the dynamic loader loads libtorch for CMD (glibc's LD_DEBUG=libs).
loads_torch() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | grep -q 'libtorch_cpu\.so'; }

g="$data/models/mlp.fx"
check loads_torch "$bin" run "$g" --random-inputs
for cmd in "check $g" "ops" "opt $g --passes=cse,dce" "compile $g" "compile $g --grad=all --explain" \
  "run --help" "--help"; do
  # shellcheck disable=SC2086
  if loads_torch "$bin" $cmd; then fail "aotgrad $cmd loads libtorch"; else pass; fi
done
# The executable does not link it either.
if readelf -d "$bin" | grep -q 'libtorch\|libc10'; then fail "aotgrad links libtorch"; else pass; fi

# An executable without its module beside it (nor in ../lib/aotgrad): run says what is missing.
mkdir -p "$tmp/bin"
cp "$bin" "$tmp/bin/aotgrad"
"$tmp/bin/aotgrad" check "$g" >"$tmp/check.out"
check [ $? -eq 0 ]
check cmp -s "$tmp/check.out" <("$bin" check "$g")
"$tmp/bin/aotgrad" run "$g" --random-inputs >/dev/null 2>"$tmp/err"
check [ $? -eq 1 ]
check has "$tmp/err" "aotgrad run: error: this command runs graphs on libtorch"
check has "$tmp/err" "$tmp/bin/aotgrad_torch.so: not found"

finish
