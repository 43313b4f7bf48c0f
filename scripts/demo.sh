#!/usr/bin/env bash
# Sets up, builds and runs aotgrad's demo: a character-level GPT written with libtorch's C++
# modules, trained on a text shipped in the repo eagerly and with aot_module + min-cut, compared in
# loss, step time and peak memory. Arguments go to the demo (e.g. --steps=100; --help lists them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" gpt_demo
build="${AOTGRAD_BUILD_DIR:-$root/build}"
"$build/examples/gpt_demo/gpt_demo" "$@"
