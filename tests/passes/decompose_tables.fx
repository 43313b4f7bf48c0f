# decomp:core decomposes what is not a core ATen op (linear, CompositeImplicitAutograd) and
# keeps the core ops (silu, native_layer_norm).
# RUN: --passes=decomp:core

def forward(self, x: "f32[4, 8]", w: "f32[8, 8]", b: "f32[8]"):
    linear = torch.ops.aten.linear.default(x, w)
    silu = torch.ops.aten.silu.default(linear)
    native_layer_norm = torch.ops.aten.native_layer_norm.default(silu, [8], b, b, 1e-05)
    getitem = native_layer_norm[0]
    return (getitem,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(w)
# CHECK-NEXT: mm{{(: "[^"]*")?}} = torch.ops.aten.mm.default(x, t)
# CHECK-NEXT: silu{{(: "[^"]*")?}} = torch.ops.aten.silu.default(mm)
# CHECK-NEXT: native_layer_norm = torch.ops.aten.native_layer_norm.default(silu, [8], b, b, 1e-05)
# CHECK: {{^}}decomp:core{{ +[0-9]+ +[0-9]+ +}}1{{ }}

# -----

# decomp:full decomposes core ops too, as Inductor's table does: silu into sigmoid and mul,
# native_layer_norm into var_mean and pointwise ops.
# RUN: --passes=decomp:full,dce

def forward(self, x: "f32[4, 8]", w: "f32[8]", b: "f32[8]"):
    silu = torch.ops.aten.silu.default(x)
    native_layer_norm = torch.ops.aten.native_layer_norm.default(silu, [8], w, b, 1e-05)
    getitem = native_layer_norm[0]
    return (getitem,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: sigmoid{{(: "[^"]*")?}} = torch.ops.aten.sigmoid.default(x)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, sigmoid)
# CHECK-NEXT: var_mean = torch.ops.aten.var_mean.correction(mul, [1], correction = 0, keepdim = True)
# CHECK: rsqrt{{(: "[^"]*")?}} = torch.ops.aten.rsqrt.default(
# CHECK-NOT: native_layer_norm
# CHECK: return (add_1,)
# CHECK: {{^}}decomp:full{{ +[0-9]+ +[0-9]+ +}}2{{ }}

# -----

# `-op` keeps one op of a table as it is.
# RUN: --passes=decomp:full,-aten::native_layer_norm

def forward(self, x: "f32[4, 8]", w: "f32[8]", b: "f32[8]"):
    silu = torch.ops.aten.silu.default(x)
    native_layer_norm = torch.ops.aten.native_layer_norm.default(silu, [8], w, b, 1e-05)
    getitem = native_layer_norm[0]
    return (getitem,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: sigmoid{{(: "[^"]*")?}} = torch.ops.aten.sigmoid.default(x)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, sigmoid)
# CHECK-NEXT: native_layer_norm = torch.ops.aten.native_layer_norm.default(mul, [8], w, b, 1e-05)
# CHECK: {{^}}decomp:full,-aten::native_layer_norm{{ +[0-9]+ +[0-9]+ +}}1{{ }}
