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
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
CCACHE_BASEDIR="$tmp" ninja -C "$tmp/consumer" >/dev/null
out="$("$tmp/consumer/consumer")"
grep -q 'torch.ops.aten.relu.default(x)' <<<"$out"
grep -q 'aot_module matches eager' <<<"$out"
"$tmp/prefix/bin/aotgrad" ops | grep -q '^aten::relu'
echo "1 passed, 0 failed"
