#!/usr/bin/env bash
# `cmake --install` gives a package that find_package(aotgrad) finds and a consumer links.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
set -eu
build="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/aotgrad"
test -f "$tmp/prefix/include/aotgrad/ir/graph.h"
# The exported targets name their dependencies (torch, PkgConfig::CBC), never a library by the
# absolute path it had on the building machine, and carry C++20 as a compile feature.
targets="$(find "$tmp/prefix" -name aotgradTargets.cmake)"
if grep -nE '"?/[^";]*\.(so|a)([";.]|$)' "$targets"; then
  echo "FAIL: absolute library paths in $targets"
  exit 1
fi
grep -q 'INTERFACE_COMPILE_FEATURES "cxx_std_20"' "$targets"
grep -qE 'INTERFACE_LINK_LIBRARIES "aotgrad::aotgrad_driver;torch[;"]' "$targets"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
CCACHE_BASEDIR="$tmp" ninja -C "$tmp/consumer" >/dev/null
out="$("$tmp/consumer/consumer")"
grep -q 'torch.ops.aten.relu.default(x)' <<<"$out"
grep -q 'aot_module matches eager' <<<"$out"
"$tmp/prefix/bin/aotgrad" ops | grep -q '^aten::relu'
# The installed command line finds its libtorch module (lib/aotgrad/aotgrad_torch.so) for run.
printf 'def forward(self, x: "f32[3]"):\n    relu = torch.ops.aten.relu.default(x)\n    return (relu,)\n' \
  >"$tmp/g.fx"
"$tmp/prefix/bin/aotgrad" run "$tmp/g.fx" --random-inputs --stats=json | grep -q '"compiled":true'
echo "1 passed, 0 failed"
