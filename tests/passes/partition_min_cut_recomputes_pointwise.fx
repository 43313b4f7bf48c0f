# The min-cut partition (§13.5): the backward recomputes a cheap pointwise chain from the input
# rather than saving its intermediates; the forward returns its outputs, then the saved values.
# RUN: --passes=joint,partition

def forward(self, x: "f32[64]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(sin)
    return (cos,)

# CHECK-LABEL: # forward
# CHECK-NEXT: class GraphModule
# CHECK-NEXT: def forward(self, primals_1{{[^)]*}}):
# CHECK-NEXT: sin{{(: "[^"]*")?}} = torch.ops.aten.sin.default(primals_1)
# CHECK-NEXT: cos{{(: "[^"]*")?}} = torch.ops.aten.cos.default(sin)
# CHECK-NEXT: return (cos, primals_1)
# CHECK-LABEL: # backward
# CHECK-NEXT: class GraphModule
# CHECK-NEXT: def forward(self, primals_1{{[^,]*}}, tangents_1{{[^)]*}}):
# CHECK-NEXT: sin{{(: "[^"]*")?}} = torch.ops.aten.sin.default(primals_1)
# CHECK: return [mul_1]

# -----

# PyTorch's default_partition saves what the backward uses (sin) and recomputes nothing.
# RUN: --passes=joint,partition:default

def forward(self, x: "f32[64]"):
    sin = torch.ops.aten.sin.default(x)
    cos = torch.ops.aten.cos.default(sin)
    return (cos,)

# CHECK-LABEL: # forward
# CHECK: return (cos, primals_1, sin)
# CHECK-LABEL: # backward
# CHECK-NOT: torch.ops.aten.sin.default(primals_1)
# CHECK: return [mul_1]
