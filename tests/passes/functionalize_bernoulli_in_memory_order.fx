# bernoulli_ fills its tensor in memory order, bernoulli.p draws into a contiguous result: a
# bernoulli_ of a transposed tensor (the noise of libtorch's CPU dropout of x.t()) is drawn on the
# permute whose logical order is the memory order and permuted back, so the mask is eager's. A
# contiguous one is bernoulli.p itself.
# RUN: --passes=functionalize

def forward(self, x: "f64[4, 3][3, 1]cpu"):
    t: "f64[3, 4][1, 3]cpu" = torch.ops.aten.t.default(x)
    empty_like: "f64[3, 4][1, 3]cpu" = torch.ops.aten.empty_like.default(t)
    bernoulli_: "f64[3, 4][1, 3]cpu" = torch.ops.aten.bernoulli_.float(empty_like, 0.5)
    empty_like_1: "f64[4, 3][3, 1]cpu" = torch.ops.aten.empty_like.default(x)
    bernoulli__1: "f64[4, 3][3, 1]cpu" = torch.ops.aten.bernoulli_.float(empty_like_1, 0.25)
    return (bernoulli_, bernoulli__1)

# CHECK-LABEL: def forward(
# CHECK: empty_like{{(: "[^"]*")?}} = torch.ops.aten.empty_like.default(t)
# CHECK-NEXT: permute{{(: "[^"]*")?}} = torch.ops.aten.permute.default(empty_like, [1, 0])
# CHECK-NEXT: bernoulli{{(: "[^"]*")?}} = torch.ops.aten.bernoulli.p(permute, 0.5)
# CHECK-NEXT: permute_1{{(: "f64\[3, 4\]\[1, 3\]cpu")?}} = torch.ops.aten.permute.default(bernoulli, [1, 0])
# CHECK: empty_like_1{{(: "[^"]*")?}} = torch.ops.aten.empty_like.default(x)
# CHECK-NEXT: bernoulli_1{{(: "[^"]*")?}} = torch.ops.aten.bernoulli.p(empty_like_1, 0.25)
# CHECK-NEXT: return (permute_1, bernoulli_1)
