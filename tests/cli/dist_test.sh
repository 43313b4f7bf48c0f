#!/usr/bin/env bash
# Functional collectives on Gloo across processes on 127.0.0.1 under `aotgrad launch`: all_reduce
# (sum, avg), all_gather_into_tensor, reduce_scatter_tensor (sum, max, avg) and broadcast with 2 and 3 ranks
# against values computed by hand from each rank's inputs; run --train --data-parallel with
# --split-batch against the whole batch's gradient; a rank that ends early, a wrong world
# size, an unreachable master and a bad group name each fail with an error naming the problem
# within the timeout. Every launch is bounded (--timeout) and every rendezvous too
# (AOTGRAD_DIST_TIMEOUT).
# usage: dist_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
export AOTGRAD_DIST_TIMEOUT=20
py() { "$PY" -c "$@"; }

# A safetensors writer and reader of f32 tensors (the format is 8 bytes of header length, a JSON
# header, then the data), and the hand-computed expectations.
cat >"$tmp/st.py" <<'PY'
import json, struct, sys

def write(path, tensors):  # name -> (shape, flat list of floats)
    header, data = {}, b""
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)

def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        assert t["dtype"] == "F32", t
        out[name] = (t["shape"], list(struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])))
    return out

def x_of(r):  # each rank's x: f32[4]
    return [float(10 * r + i) for i in range(4)]

def y_of(r, n):  # each rank's y: f32[2n, 3]
    return [float(100 * r + i) for i in range(2 * n * 3)]
PY

# The graph for N ranks: every collective on the world group '0', each waited.
graph() {
  local n=$1
  cat <<G
def forward(self, x: "f32[4]", y: "f32[$((2 * n)), 3]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    all_reduce_1 = torch.ops._c10d_functional.all_reduce.default(x, 'avg', '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_reduce_1)
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(x, $n, '0')
    wait_tensor_2 = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    reduce_scatter_tensor = torch.ops._c10d_functional.reduce_scatter_tensor.default(y, 'sum', $n, '0')
    wait_tensor_3 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor)
    broadcast = torch.ops._c10d_functional.broadcast.default(x, $((n - 1)), '0')
    wait_tensor_4 = torch.ops._c10d_functional.wait_tensor.default(broadcast)
    reduce_scatter_tensor_1 = torch.ops._c10d_functional.reduce_scatter_tensor.default(y, 'max', $n, '0')
    wait_tensor_5 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor_1)
    reduce_scatter_tensor_2 = torch.ops._c10d_functional.reduce_scatter_tensor.default(y, 'avg', $n, '0')
    wait_tensor_6 = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor_2)
    mul = torch.ops.aten.mul.Tensor(wait_tensor, 2)
    return (mul, wait_tensor_1, wait_tensor_2, wait_tensor_3, wait_tensor_4, wait_tensor_5, wait_tensor_6)
G
}

# Each rank runs `aotgrad run` on its own inputs and writes its own outputs ($RANK).
rank_cmd='exec "$0" run "$1" --inputs "$2/in$RANK.safetensors" --outputs "$2/out$RANK.safetensors"'

for n in 2 3; do
  graph $n >"$tmp/g$n.fx"
  # The text form round-trips with the collectives in it.
  "$bin" check "$tmp/g$n.fx" >/dev/null 2>"$tmp/err"
  check [ $? -eq 0 ]
  "$bin" compile "$tmp/g$n.fx" --grad=none >"$tmp/c$n.fx" 2>"$tmp/err"
  check has "$tmp/c$n.fx" "torch.ops._c10d_functional.reduce_scatter_tensor.default(arg1_1, 'sum', $n, '0')"
  "$bin" compile "$tmp/c$n.fx" --grad=none >"$tmp/c${n}b.fx" 2>"$tmp/err"
  check cmp -s "$tmp/c$n.fx" "$tmp/c${n}b.fx"

  rm -f "$tmp"/in*.safetensors "$tmp"/out*.safetensors
  py "
import sys; sys.path.insert(0, '$tmp'); import st
for r in range($n):
    st.write('$tmp/in%d.safetensors' % r, {'x': ([4], st.x_of(r)), 'y': ([2 * $n, 3], st.y_of(r, $n))})
"
  start=$(date +%s)
  expect_exit 0 "launch --nproc $n" "$bin" launch --nproc "$n" --timeout 60 -- \
    sh -c "$rank_cmd" "$bin" "$tmp/g$n.fx" "$tmp"
  [ -s "$tmp/err" ] && cat "$tmp/err"
  check [ $(($(date +%s) - start)) -lt 60 ]
  check py "
import sys; sys.path.insert(0, '$tmp'); import st
n = $n
xs = [st.x_of(r) for r in range(n)]
ys = [st.y_of(r, n) for r in range(n)]
total = [sum(x[i] for x in xs) for i in range(4)]
for r in range(n):
    out = st.read('$tmp/out%d.safetensors' % r)
    def close(name, shape, want):
        got_shape, got = out[name]
        assert got_shape == shape, (r, name, got_shape, shape)
        assert all(abs(a - b) <= 1e-5 * max(1, abs(b)) for a, b in zip(got, want)), (r, name, got, want)
    close('out_0', [4], [2 * t for t in total])                       # all_reduce sum, times 2
    close('out_1', [4], [t / n for t in total])                       # all_reduce avg
    close('out_2', [4 * n], [v for x in xs for v in x])               # all_gather: rank order
    chunk = 2 * 3                                                     # rank r's rows 2r, 2r+1
    close('out_3', [2, 3], [sum(y[r * chunk + i] for y in ys) for i in range(chunk)])
    close('out_4', [4], xs[n - 1])                                    # broadcast from rank n-1
    close('out_5', [2, 3], [max(y[r * chunk + i] for y in ys) for i in range(chunk)])
    close('out_6', [2, 3], [sum(y[r * chunk + i] for y in ys) / n for i in range(chunk)])
"
done

# Training: the backward of all_reduce is all_reduce of the grad. loss_r = sum(S * S) with
# S = all_reduce(x_r * x_r) on every rank, so with ones as tangents (the job's loss is the sum of
# the ranks' losses) grad_x_r = all_reduce(2 S) * 2 x_r = 4 N S x_r.
cat >"$tmp/train.fx" <<'G'
def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, x)
    all_reduce = torch.ops._c10d_functional.all_reduce.default(mul, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    mul_1 = torch.ops.aten.mul.Tensor(wait_tensor, wait_tensor)
    sum_1 = torch.ops.aten.sum.default(mul_1)
    return (sum_1,)
G
"$bin" compile "$tmp/train.fx" --grad=x --dump "$tmp/train_dump" >/dev/null 2>"$tmp/err"
check [ $? -eq 0 ]
check has "$tmp/train_dump/bw.fx" "torch.ops._c10d_functional.all_reduce.default("
check has "$tmp/train_dump/bw.fx" "torch.ops._c10d_functional.wait_tensor.default("
check hasnt "$tmp/train_dump/bw.fx" "torch.ops._c10d_functional.all_reduce.default(mul"
"$bin" compile "$tmp/train.fx" --grad=x --explain >"$tmp/explain" 2>&1
check has "$tmp/explain" ": collective"
expect_exit 0 "run --train under launch" "$bin" launch --nproc 2 --timeout 60 -- sh -c \
  'exec "$0" run "$1" --train --grad=x --inputs "$2/in$RANK.safetensors" --outputs "$2/train$RANK.safetensors"' \
  "$bin" "$tmp/train.fx" "$tmp"
check py "
import sys; sys.path.insert(0, '$tmp'); import st
n = 2
xs = [st.x_of(r) for r in range(n)]
S = [sum(x[i] * x[i] for x in xs) for i in range(4)]
for r in range(n):
    out = st.read('$tmp/train%d.safetensors' % r)
    loss = sum(v * v for v in S)
    assert abs(out['out_0'][1][0] - loss) <= 1e-5 * loss, (r, out['out_0'], loss)
    # d(sum_r' loss_r')/dx_r = all_reduce(2 S) * 2 x_r
    want = [2 * n * S[i] * 2 * xs[r][i] for i in range(4)]
    got = out['grad_x'][1]
    assert all(abs(a - b) <= 1e-5 * max(1, abs(b)) for a, b in zip(got, want)), (r, got, want)
"

# Data-parallel --train: each rank takes its half of the batch (--split-batch) and the backward
# graph averages w's gradient over the ranks, so every rank gets the gradient of the whole batch's
# mean loss, d/dw mean((x w - y)^2) = 2 x^T (x w - y) / numel.
cat >"$tmp/lsq.fx" <<'G'
def forward(self, w: "f32[3, 2]", x: "f32[2, 3]", y: "f32[2, 2]"):
    mm = torch.ops.aten.mm.default(x, w)
    sub = torch.ops.aten.sub.Tensor(mm, y)
    mul = torch.ops.aten.mul.Tensor(sub, sub)
    mean = torch.ops.aten.mean.default(mul)
    return (mean,)
G
py "
import sys; sys.path.insert(0, '$tmp'); import st
w = [0.5, -1.0, 2.0, 0.25, -0.75, 1.5]
x = [float(i % 5) - 2 for i in range(12)]
y = [float(i) / 4 for i in range(8)]
st.write('$tmp/lsq.safetensors', {'w': ([3, 2], w), 'x': ([4, 3], x), 'y': ([4, 2], y)})
"
AOTGRAD_LOGS=collectives expect_exit 0 "run --train --data-parallel" "$bin" launch --nproc 2 \
  --timeout 60 -- sh -c 'exec "$0" run "$1" --train --grad=w --data-parallel --split-batch=x,y \
  --inputs "$2/lsq.safetensors" --outputs "$2/lsq$RANK.safetensors"' "$bin" "$tmp/lsq.fx" "$tmp"
check has "$tmp/err" "bucket 0: 1 grad (w), 24 bytes f32, all_reduce 'sum' of the grads divided by 2 on group '0'"
check has "$tmp/err" "collectives: issued all_reduce_ on process group '0' (rank 1 of 2): Float[6], 24 bytes"
check py "
import sys; sys.path.insert(0, '$tmp'); import st
w = st.read('$tmp/lsq.safetensors')['w'][1]
x = st.read('$tmp/lsq.safetensors')['x'][1]
y = st.read('$tmp/lsq.safetensors')['y'][1]
r = [sum(x[i * 3 + k] * w[k * 2 + j] for k in range(3)) - y[i * 2 + j] for i in range(4) for j in range(2)]
want = [2 * sum(x[i * 3 + k] * r[i * 2 + j] for i in range(4)) / 8 for k in range(3) for j in range(2)]
for rank in range(2):
    got = st.read('$tmp/lsq%d.safetensors' % rank)['grad_w'][1]
    assert all(abs(a - b) <= 1e-5 * max(1, abs(b)) for a, b in zip(got, want)), (rank, got, want)
"
expect_exit 1 "--split-batch of an odd batch" "$bin" launch --nproc 3 --timeout 60 -- sh -c \
  'exec "$0" run "$1" --train --grad=w --data-parallel --split-batch=x --inputs "$2/lsq.safetensors"' \
  "$bin" "$tmp/lsq.fx" "$tmp"
check has "$tmp/err" "--split-batch: input 'x' cannot be split in 3 equal slices along dim 0 (it has 4)"

cat >"$tmp/one.fx" <<'G'
def forward(self, x: "f32[4]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    return (wait_tensor,)
G

# A rank that ends without joining: the other fails, naming the rendezvous and the world size,
# within the timeout; the launcher names the rank and its exit code.
early='if [ "$RANK" = 1 ]; then exit 3; fi; '"$rank_cmd"
start=$(date +%s)
AOTGRAD_DIST_TIMEOUT=4 expect_exit 3 "a rank exits before joining" "$bin" launch --nproc 2 \
  --timeout 60 --grace 30 -- sh -c "$early" "$bin" "$tmp/one.fx" "$tmp"
check [ $(($(date +%s) - start)) -lt 40 ]
check has "$tmp/err" "aotgrad launch: rank 1 (pid"
check has "$tmp/err" "exited with code 3"
# libtorch's TCPStore waits for every rank in the store ("could not meet the other ranks").
check has "$tmp/err" "process group '0': rank 0 of 2 (from torchrun's environment) could not "
check has "$tmp/err" "master 127.0.0.1:"
check has "$tmp/err" "did all 2 ranks start?"
check has "$tmp/err" "aotgrad launch: rank 0 exited with code 1"

# A rank that ends after the first collective: the other's next collective fails, naming it.
cat >"$tmp/two.fx" <<'G'
def forward(self, x: "f32[4]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    all_reduce_1 = torch.ops._c10d_functional.all_reduce.default(wait_tensor, 'sum', '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_reduce_1)
    return (wait_tensor_1,)
G
mid='g="$1/two.fx"; [ "$RANK" = 1 ] && g="$1/one.fx"; exec "$0" run "$g" --inputs "$1/in$RANK.safetensors"'
start=$(date +%s)
AOTGRAD_DIST_TIMEOUT=6 expect_exit 1 "a rank exits mid-run" "$bin" launch --nproc 2 --timeout 60 \
  --grace 30 -- sh -c "$mid" "$bin" "$tmp"
check [ $(($(date +%s) - start)) -lt 40 ]
check has "$tmp/err" "all_reduce on process group '0' (rank 0 of 2) failed"
check has "$tmp/err" "aotgrad launch: rank 0 (pid"

# WORLD_SIZE larger than the ranks started: the rendezvous times out with the world size named.
start=$(date +%s)
AOTGRAD_DIST_TIMEOUT=3 expect_exit 1 "wrong world size" "$bin" launch --nproc 2 --timeout 60 \
  --grace 30 -- sh -c 'WORLD_SIZE=3 '"$rank_cmd" "$bin" "$tmp/one.fx" "$tmp"
check [ $(($(date +%s) - start)) -lt 40 ]
check has "$tmp/err" "of 3 (from torchrun's environment)"
check has "$tmp/err" "WORLD_SIZE must be the number of ranks"

# An unreachable master (nobody serves the port): a clear error within the timeout.
port=$(py "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
start=$(date +%s)
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port AOTGRAD_DIST_TIMEOUT=3 \
  expect_exit 1 "unreachable master" timeout 60 "$bin" run "$tmp/one.fx" --inputs "$tmp/in1.safetensors"
check [ $(($(date +%s) - start)) -lt 40 ]
check has "$tmp/err" "rank 1 of 2 (from torchrun's environment) could not meet the other ranks at master 127.0.0.1:$port"
check has "$tmp/err" "is the master reachable and rank 0 running?"

# No launcher: the world group cannot exist.
expect_exit 1 "no launcher" env -u RANK -u WORLD_SIZE "$bin" run "$tmp/one.fx" --inputs "$tmp/in0.safetensors"
check has "$tmp/err" "this process was not started by a launcher"

# A collective whose group_size is not its group's: an error naming both.
sed "s/all_reduce.default(x, 'sum', '0')/all_gather_into_tensor.default(x, 3, '0')/" "$tmp/one.fx" >"$tmp/three.fx"
expect_exit 1 "group_size of another world" "$bin" launch --nproc 2 --timeout 60 --grace 20 -- \
  sh -c 'exec "$0" run "$1" --inputs "$2/in$RANK.safetensors"' "$bin" "$tmp/three.fx" "$tmp"
check has "$tmp/err" "all_gather_into_tensor: group_size 3 is not the size of process group '0' (2 ranks)"
# Malformed world sizes.
for ws in 0 two; do
  RANK=0 WORLD_SIZE=$ws MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
    expect_exit 1 "WORLD_SIZE=$ws" "$bin" run "$tmp/one.fx" --inputs "$tmp/in0.safetensors"
  check has "$tmp/err" "WORLD_SIZE='$ws' is not an integer in [1, 1048576]"
done

# A group nobody registered; malformed variables.
sed "s/'sum', '0'/'sum', 'tp'/" "$tmp/one.fx" >"$tmp/tp.fx"
RANK=0 WORLD_SIZE=1 expect_exit 1 "unknown group" "$bin" run "$tmp/tp.fx" --inputs "$tmp/in0.safetensors"
check has "$tmp/err" "unknown process group 'tp' (registered: none"
RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
  expect_exit 1 "rank out of range" "$bin" run "$tmp/one.fx" --inputs "$tmp/in0.safetensors"
check has "$tmp/err" "RANK='2' is not an integer in [0, 1]"

# A world of one needs no master: all_reduce is the identity.
RANK=0 WORLD_SIZE=1 expect_exit 0 "a world of one" "$bin" run "$tmp/one.fx" \
  --inputs "$tmp/in0.safetensors" --outputs "$tmp/single.safetensors"
check py "
import sys; sys.path.insert(0, '$tmp'); import st
assert st.read('$tmp/single.safetensors')['out_0'] == ([4], st.x_of(0))"

# `aotgrad ops` lists them under their tag.
expect_exit 0 "ops --tag=collective" "$bin" ops --tag=collective
check [ "$(wc -l <"$tmp/out")" -eq 6 ]
check has "$tmp/out" "_c10d_functional::reduce_scatter_tensor"
check has "$tmp/out" "_c10d_functional::all_reduce_"

# The launcher: a usage error, a program that cannot start, and its own timeout.
expect_exit 2 "launch without --nproc" "$bin" launch -- true
expect_exit 127 "launch of a missing program" "$bin" launch --nproc 2 --timeout 30 -- "$tmp/nonexistent"
check has "$tmp/err" "cannot run"
start=$(date +%s)
expect_exit 124 "launch timeout" "$bin" launch --nproc 2 --timeout 1 -- sleep 30
check [ $(($(date +%s) - start)) -lt 15 ]
check has "$tmp/err" "timed out after 1 s"
finish
