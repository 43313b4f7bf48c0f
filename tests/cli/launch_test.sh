#!/usr/bin/env bash
# `aotgrad launch`'s allocator (Note [The ranks' allocator], src/cli/launch_command.cc): by
# default each rank runs with tcmalloc preloaded, as PyTorch's CPU launcher does; --enable-jemalloc
# preloads jemalloc with run_cpu's MALLOC_CONF; --use-default-allocator and an allocator the caller
# preloaded already are left alone; two choices at once are a usage error. scripts/setup.sh
# installs both libraries (Debian's libtcmalloc-minimal4 and libjemalloc2).
# usage: launch_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"

# Each rank reports its LD_PRELOAD and MALLOC_CONF, and whether its own process mapped the library
# (grep reads its own /proc/self/maps).
report='echo "preload=${LD_PRELOAD:-} conf=${MALLOC_CONF:-}"; grep -o "lib[a-z_]*malloc[a-z_]*" /proc/self/maps | sort -u'

expect_exit 0 "default allocator" env -u LD_PRELOAD -u MALLOC_CONF "$bin" launch --nproc 2 --timeout 30 -- sh -c "$report"
check has "$tmp/out" "libtcmalloc"
check test "$(grep -c '^preload=.*libtcmalloc' "$tmp/out")" -eq 2
check hasnt "$tmp/out" "jemalloc"

expect_exit 0 "--enable-jemalloc" env -u LD_PRELOAD -u MALLOC_CONF "$bin" launch --nproc 1 --timeout 30 --enable-jemalloc -- sh -c "$report"
check has "$tmp/out" "conf=oversize_threshold:1,background_thread:true,metadata_thp:auto"
check has "$tmp/out" "libjemalloc"
check hasnt "$tmp/out" "tcmalloc"

# A MALLOC_CONF of the caller's own is kept.
expect_exit 0 "--enable-jemalloc with MALLOC_CONF" env -u LD_PRELOAD MALLOC_CONF=narenas:2 "$bin" launch --nproc 1 --timeout 30 --enable-jemalloc -- sh -c "$report"
check has "$tmp/out" "conf=narenas:2"

expect_exit 0 "--use-default-allocator" env -u LD_PRELOAD "$bin" launch --nproc 1 --timeout 30 --use-default-allocator -- sh -c "$report"
check has "$tmp/out" "preload= conf="
check hasnt "$tmp/out" "malloc"

# The caller's preloaded allocator stays, and nothing is added to it.
jemalloc="$(env -u LD_PRELOAD "$bin" launch --nproc 1 --timeout 30 --enable-jemalloc -- sh -c 'echo "$LD_PRELOAD"')"
expect_exit 0 "a preloaded allocator" env LD_PRELOAD="$jemalloc" "$bin" launch --nproc 1 --timeout 30 -- sh -c "$report"
check has "$tmp/out" "preload=$jemalloc conf="
check hasnt "$tmp/out" "tcmalloc"

expect_exit 2 "two allocators" "$bin" launch --nproc 1 --enable-tcmalloc --enable-jemalloc -- true
check has "$tmp/err" "give at most one of --enable-tcmalloc, --enable-jemalloc, --use-default-allocator"

finish
