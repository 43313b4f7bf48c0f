#!/usr/bin/env bash
# `aotgrad check` and `aotgrad ops`: output, fixed point, error format and exit codes.
# usage: check_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

# A real graph prints, and its printed form is a fixed point.
expect_exit 0 "check example" "$bin" check "$root/examples/linear_relu_joint.fx"
cp "$tmp/out" "$tmp/once.fx"
expect_exit 0 "check printed" "$bin" check "$tmp/once.fx"
cmp -s "$tmp/out" "$tmp/once.fx" && pass || fail "print(parse(print(g))) differs from print(g)"
grep -q 'torch.ops.aten.threshold_backward.default(tangents_1, detach_1, 0)' "$tmp/once.fx" && pass ||
  fail "canonical text lost threshold_backward"

# Standard input.
"$bin" check - <"$root/examples/linear_relu_joint.fx" >"$tmp/stdin.out" 2>&1 && cmp -s "$tmp/stdin.out" "$tmp/once.fx" &&
  pass || fail "check - (stdin) differs from check FILE"

# Bad input: one line FILE:LINE:COL: error: ..., exit 1.
printf 'def forward(self, x: "f32[4]"):\n    y = torch.ops.aten.nosuchop.default(x)\n    return (y,)\n' >"$tmp/unknown.fx"
expect_exit 1 "unknown op" "$bin" check "$tmp/unknown.fx"
grep -qE "^$tmp/unknown.fx:2:[0-9]+: error: .*nosuchop" "$tmp/err" && pass || fail "unknown op message: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && pass || fail "error is not one line: $(cat "$tmp/err")"

printf 'def forward(self, x: "f32[4]"):\n    y = torch.ops.aten.relu.default(z)\n    return (y,)\n' >"$tmp/undef.fx"
expect_exit 1 "use before definition" "$bin" check "$tmp/undef.fx"
grep -qE "^$tmp/undef.fx:2:[0-9]+: error: " "$tmp/err" && pass || fail "undefined name message: $(cat "$tmp/err")"

head -c 200 "$root/examples/linear_relu_joint.fx" >"$tmp/truncated.fx"
expect_exit 1 "truncated file" "$bin" check "$tmp/truncated.fx"
grep -qE "^$tmp/truncated.fx:[0-9]+:[0-9]+: error: " "$tmp/err" && pass || fail "truncated message: $(cat "$tmp/err")"

head -c 4096 /dev/urandom >"$tmp/garbage.fx"
expect_exit 1 "binary garbage" "$bin" check "$tmp/garbage.fx"

expect_exit 1 "missing file" "$bin" check "$tmp/does_not_exist.fx"
grep -q "does_not_exist.fx" "$tmp/err" && pass || fail "missing file message does not name the file"

# Usage errors exit 2; --help exits 0 everywhere.
expect_exit 2 "no command" "$bin"
expect_exit 2 "unknown command" "$bin" frobnicate
expect_exit 2 "check without file" "$bin" check
expect_exit 2 "unknown option" "$bin" check --bogus "$tmp/once.fx"
for c in "" check ops; do
  expect_exit 0 "help $c" "$bin" $c --help
  grep -q "usage" "$tmp/out" && pass || fail "'$c --help' prints no usage"
done
# A flag as long as the help column puts its help on the next line, never against the flag.
expect_exit 0 "help compile" "$bin" compile --help
grep -qx -- "  --recompute-pointwise-from-saved=on|off" "$tmp/out" && pass ||
  fail "compile --help runs a long flag into its help"
grep -qE -- '^  --cse=on\|off +PyTorch' "$tmp/out" && pass || fail "compile --help lost a short flag's column"

# ops: one overload per line with tags.
expect_exit 0 "ops" "$bin" ops
grep -qE '^aten::add\.Tensor[[:space:]].*pointwise' "$tmp/out" && pass || fail "ops lacks aten::add.Tensor with its tags"
expect_exit 0 "ops --tag" "$bin" ops --tag=inplace
grep -q 'aten::add_.Tensor' "$tmp/out" && ! grep -q 'aten::add.Tensor' "$tmp/out" && pass || fail "ops --tag=inplace filter"

finish
