#!/usr/bin/env bash
# Data-parallel training with aot_module across processes on 127.0.0.1 (Gloo) under `aotgrad
# launch`, with 2 and 3 ranks: data_parallel_worker trains an MLP, a CNN with BatchNorm and a GPT
# block for 4 SGD steps on each rank's slice of a batch and checks every parameter against one
# process trained eagerly on the whole batch (to fp32 rounding; the CNN's BatchNorm normalizes
# each rank's slice, as DDP does, and its running statistics are not compared). The backward graph
# it prints (AOTGRAD_LOGS=aot_graphs) all-reduces the gradient buckets, which
# AOTGRAD_LOGS=collectives lists, and round-trips through the text form. Ranks that compile
# different graphs fail at compile time, each naming the graphs that differ, the ranks and the first
# line that differs; a rank killed mid-step makes the other fail at once naming it.
# usage: data_parallel_test.sh AOTGRAD_BINARY TEST_DATA_DIR WORKER
source "$(dirname "$0")/../cli/lib.sh" "$@"
worker="$3"
export AOTGRAD_DIST_TIMEOUT=30 AOTGRAD_CACHE_DIR=off
# Each rank's standard error in its own file.
each_rank='exec "$0" "$@" 2>"$TMPDIR_DP/err$RANK"'
export TMPDIR_DP="$tmp"

for n in 2 3; do
  start=$(date +%s)
  AOTGRAD_LOGS=aot_graphs,collectives expect_exit 0 "data parallel training on $n ranks" \
    "$bin" launch --nproc "$n" --timeout 120 -- sh -c "$each_rank" "$worker" --steps=4
  cat "$tmp/out"
  [ -s "$tmp/err" ] && cat "$tmp/err"
  check [ $(($(date +%s) - start)) -lt 110 ]
  for r in $(seq 0 $((n - 1))); do
    for m in mlp cnn gpt; do check grep -q "^rank $r $m: 4 steps, .* max |param - reference| = " "$tmp/out"; done
    # Rank r's backward graphs: one per model, each with its buckets' collectives.
    check [ "$(grep -c '===== Backward graph' "$tmp/err$r")" -eq 3 ]
    check has "$tmp/err$r" "torch.ops._c10d_functional.all_reduce_.default(div_"
    check has "$tmp/err$r" ", 'sum', '0')"
    check has "$tmp/err$r" "torch.ops._c10d_functional.wait_tensor.default(all_reduce_"
    check has "$tmp/err$r" "torch.ops.aten.split_with_sizes.default(wait_tensor"
    check has "$tmp/err$r" "collectives (graph "
    check has "$tmp/err$r" "all_reduce 'sum' of the grads divided by $n on group '0' issued after"
    check has "$tmp/err$r" "collectives: issued all_reduce_ on process group '0' (rank $r of $n)"
    check has "$tmp/err$r" "collectives: waited all_reduce_ on process group '0' (rank $r of $n)"
  done
  # broadcast_buffers: after an eval call every rank holds rank 0's running statistics.
  check grep -q "^rank 0 cnn: buffers after an eval call " "$tmp/out"
  check [ "$(grep -E '^rank [0-9]+ cnn: buffers after an eval call ' "$tmp/out" | sed 's/^rank [0-9]* //' | sort -u | wc -l)" -eq 1 ]
done

# The MLP's buckets (first bucket 4 KiB, then 16 KiB), in the order the backward computes the
# gradients: fc3's and fc2's (the 16 KiB fc2.weight crosses the first cap and closes the bucket, as
# in DDP), then fc1's.
check has "$tmp/err0" "bucket 0: 4 grads (p_fc3_bias, p_fc3_weight, p_fc2_bias, p_fc2_weight), 18720 bytes (18.3 KiB) f32"
check has "$tmp/err0" "bucket 1: 2 grads (p_fc1_bias, p_fc1_weight), 4352 bytes (4.2 KiB) f32"

# The last printed backward graph (the GPT block's) parses and prints back the same.
awk '/===== Backward graph/ {keep = 1; text = ""; next}
     keep && /^(class |    )/ {text = text $0 "\n"; next}
     keep {keep = 0; last = text}
     END {if (keep) last = text; printf "%s", last}' "$tmp/err0" >"$tmp/bw.fx"
check has "$tmp/bw.fx" "torch.ops._c10d_functional.all_reduce_.default("
"$bin" check "$tmp/bw.fx" >"$tmp/bw2.fx" 2>"$tmp/check_err"
check [ $? -eq 0 ]
check cmp -s "$tmp/bw.fx" "$tmp/bw2.fx"

# Rank 1's MLP has tanh where rank 0's has relu: both fail at their first compilation, naming the
# graphs that differ and which rank has which.
start=$(date +%s)
expect_exit 1 "ranks compiling different graphs" "$bin" launch --nproc 2 --timeout 180 --grace 20 \
  -- sh -c "$each_rank" "$worker" --models=mlp --tanh-on-rank=1
check [ $(($(date +%s) - start)) -lt 50 ]
for r in 0 1; do
  check has "$tmp/err$r" "the ranks of process group '0' compiled different graphs (rank $r of 2 reports)"
  check has "$tmp/err$r" "the forward graph differs: rank 0 has sha256"
  check grep -q "the backward graph differs: rank 0 has sha256 [0-9a-f]*; rank 1 has sha256" "$tmp/err$r"
  # ... and the first line where they differ.
  check grep -q "first difference, line [0-9]*: rank 0 has \`relu: .* = torch.ops.aten.relu.default(addmm);.*\`; rank 1 has \`tanh: .* = torch.ops.aten.tanh.default(addmm)" "$tmp/err$r"
  check hasnt "$tmp/err$r" "the bucket plan differs"
  check hasnt "$tmp/out" "rank $r mlp: 4 steps"
done

# A process group nobody registered: every rank fails at its first compilation, naming it; so does
# sharding, when the module is made.
for mode in replicated sharded; do
  expect_exit 1 "an unknown group, $mode" "$bin" launch --nproc 2 --timeout 180 --grace 20 \
    -- sh -c "$each_rank" "$worker" --models=mlp --mode=$mode --group=tp
  for r in 0 1; do
    check has "$tmp/err$r" "unknown process group 'tp' (registered: '0'; the world group is '0'"
  done
done

# A rank killed between a step's forward and backward (SIGKILL): the other fails in the backward's
# bucket all-reduce at once, naming the rank that exited and its pid; the launcher names it and
# the signal, and exits with 128 + 9.
start=$(date +%s)
expect_exit 137 "a rank killed mid-step" "$bin" launch --nproc 2 --timeout 180 --grace 20 \
  -- sh -c "$each_rank" "$worker" --models=mlp --die-rank=1 --die-at-step=2
check [ $(($(date +%s) - start)) -lt 40 ]
check grep -q "aotgrad launch: rank 1 (pid [0-9]*) was killed by signal 9" "$tmp/err"
check grep -q "all_reduce_ on process group '0' (rank 0 of 2) failed: .*(rank 1 (pid [0-9]*) has exited: the job cannot go on without it)" "$tmp/err0"
check has "$tmp/err" "aotgrad launch: rank 0 exited with code 1"
check hasnt "$tmp/out" "rank 0 mlp: 4 steps"
finish
