# The joint graph (§13.3): primals then tangents, the forward, then each input's gradient from its
# derivative rule; an input that does not require grad gets None.
# RUN: --passes=joint:x

def forward(self, x: "f32[4]", w: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, w)
    sin = torch.ops.aten.sin.default(mul)
    return (sin,)

# CHECK-LABEL: def forward(self, primals, tangents):
# CHECK: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(primals_1, primals_2)
# CHECK-NEXT: sin{{(: "[^"]*")?}} = torch.ops.aten.sin.default(mul)
# CHECK-NEXT: cos{{(: "[^"]*")?}} = torch.ops.aten.cos.default(mul)
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(tangents_1, cos)
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(mul_1, primals_2)
# CHECK-NEXT: return pytree.tree_unflatten([sin, mul_2, None], self._out_spec)

# -----

# Every floating-point input requires grad with a plain `joint`; the passes after it run on the
# joint graph (cse merges nothing here, dce removes nothing).
# RUN: --passes=joint,cse,dce

def forward(self, x: "f32[4]", w: "f32[4]", i: "i64[4]"):
    mul = torch.ops.aten.mul.Tensor(x, w)
    return (mul, i)

# CHECK-LABEL: def forward(self, primals, tangents):
# CHECK: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(primals_1, primals_2)
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(tangents_1, primals_1)
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(tangents_1, primals_2)
# CHECK-NEXT: return pytree.tree_unflatten([mul, primals_3, mul_2, mul_1, None], self._out_spec)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}0{{ }}
