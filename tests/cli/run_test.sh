#!/usr/bin/env bash
# `aotgrad run`: random and file inputs, outputs file contents, mutated inputs, stats, errors.
# usage: run_test.sh AOTGRAD_BINARY TEST_DATA_DIR
source "$(dirname "$0")/lib.sh" "$@"
py() { "$PY" -c "$@"; }
# Names in a safetensors file's header, sorted, comma-separated.
names() { py "import json,struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); print(','.join(sorted(k for k in h if k!='__metadata__')))" "$1"; }

g="$root/examples/linear_relu_joint.fx"
"$bin" run "$g" --random-inputs --seed 7 --outputs "$tmp/a.safetensors" --stats=json >"$tmp/stats.json" 2>"$tmp/err"
check [ $? -eq 0 ]
check [ "$(names "$tmp/a.safetensors")" = "out_0,out_2,out_3" ]  # out_1 is None
check py "import json; j=json.load(open('$tmp/stats.json')); assert j['peak_bytes'] > 0 and j['fw_us'] > 0"

# Same seed, same results; the outputs file can feed inputs back by name.
"$bin" run "$g" --random-inputs --seed 7 --outputs "$tmp/b.safetensors"
check cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors"

# A graph that mutates its input writes the input back under its own name.
cat >"$tmp/sgd.fx" <<'G'
def forward(self, p: "f32[4]", g: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(p, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
G
"$bin" run "$tmp/sgd.fx" --random-inputs --outputs "$tmp/sgd.safetensors"
check [ "$(names "$tmp/sgd.safetensors")" = "out_0,p" ]
# Feed the mutated p back as an input (matched by name; g random).
"$bin" run "$tmp/sgd.fx" --inputs "$tmp/sgd.safetensors" --random-inputs --outputs "$tmp/sgd2.safetensors"
check [ $? -eq 0 ]

# Bad input: exit 1 with the file or placeholder named.
printf 'garbage' >"$tmp/bad.safetensors"
"$bin" run "$g" --inputs "$tmp/bad.safetensors" 2>"$tmp/err" >/dev/null
check [ $? -eq 1 ]
check grep -q "bad.safetensors" "$tmp/err"
"$bin" run "$tmp/sgd.fx" --inputs "$tmp/a.safetensors" 2>"$tmp/err" >/dev/null
check [ $? -eq 1 ]
check grep -q "placeholder 'p'" "$tmp/err"
"$bin" run "$g" 2>/dev/null >/dev/null
check [ $? -eq 2 ]
"$bin" run "$g" --random-inputs --stats=xml 2>/dev/null >/dev/null
check [ $? -eq 2 ]
# No half-written output when the run fails.
"$bin" run "$tmp/sgd.fx" --inputs "$tmp/a.safetensors" --outputs "$tmp/never.safetensors" 2>/dev/null
check [ ! -e "$tmp/never.safetensors" ]

# Compiled (default) and as-written runs agree, mutations included; compile dumps fw.fx.
"$bin" run "$tmp/sgd.fx" --random-inputs --seed 3 --no-compile --outputs "$tmp/nc.safetensors"
"$bin" run "$tmp/sgd.fx" --random-inputs --seed 3 --outputs "$tmp/c.safetensors"
check cmp -s "$tmp/nc.safetensors" "$tmp/c.safetensors"
"$bin" run "$tmp/sgd.fx" --random-inputs --seed 3 --keep-inference-input-mutations --outputs "$tmp/k.safetensors"
check cmp -s "$tmp/nc.safetensors" "$tmp/k.safetensors"
"$bin" compile "$tmp/sgd.fx" --grad=none --dump "$tmp/dump" --stats=json >"$tmp/cstats.json"
check [ $? -eq 0 ]
check grep -q "torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1)" "$tmp/dump/fw.fx"
check py "import json; j=json.load(open('$tmp/cstats.json')); assert j['kind']=='inference' and j['meta']['inputs'][0]['mutates_data'] and 'functionalize' in j['phases_us']"
"$bin" compile "$tmp/sgd.fx" --keep-inference-input-mutations >"$tmp/kept.fx"
check grep -q "= torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None" "$tmp/kept.fx"
"$bin" compile "$tmp/sgd.fx" --grad=nosuch 2>/dev/null
check [ $? -eq 2 ]

finish
