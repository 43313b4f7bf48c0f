# x * ones, ones * x, x / ones, x + (-0.0), (-0.0) + x, x - zeros: the factories of 0 and 1 in
# all their spellings, broadcast where the result keeps x's shape.
# RUN: --passes=constant_fold

def forward(self, x: "f32[2, 4]"):
    ones = torch.ops.aten.ones.default([4], device = device(type='cpu'), pin_memory = False)
    mul = torch.ops.aten.mul.Tensor(x, ones)
    ones_like = torch.ops.aten.ones_like.default(x)
    mul_1 = torch.ops.aten.mul.Tensor(ones_like, mul)
    full = torch.ops.aten.full.default([], 1.0, dtype = torch.float32)
    div = torch.ops.aten.div.Tensor(mul_1, full)
    full_1 = torch.ops.aten.full.default([2, 1], -0.0)
    add = torch.ops.aten.add.Tensor(div, full_1, alpha = 3)
    full_like = torch.ops.aten.full_like.default(x, -0.0)
    add_1 = torch.ops.aten.add.Tensor(full_like, add)
    scalar_tensor = torch.ops.aten.scalar_tensor.default(0.0)
    expand = torch.ops.aten.expand.default(scalar_tensor, [2, 4])
    sub = torch.ops.aten.sub.Tensor(add_1, expand, alpha = 2)
    relu = torch.ops.aten.relu.default(sub)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: ones{{(: "[^"]*")?}} = torch.ops.aten.ones.default([4], device = device(type='cpu'), pin_memory = False)
# CHECK-NEXT: ones_like{{(: "[^"]*")?}} = torch.ops.aten.ones_like.default(x)
# CHECK-NEXT: full{{(: "[^"]*")?}} = torch.ops.aten.full.default([], 1.0, dtype = torch.float32)
# CHECK-NEXT: full_1{{(: "[^"]*")?}} = torch.ops.aten.full.default([2, 1], -0.0)
# CHECK-NEXT: full_like{{(: "[^"]*")?}} = torch.ops.aten.full_like.default(x, -0.0)
# CHECK-NEXT: scalar_tensor{{(: "[^"]*")?}} = torch.ops.aten.scalar_tensor.default(0.0)
# CHECK-NEXT: expand{{(: "[^"]*")?}} = torch.ops.aten.expand.default(scalar_tensor, [2, 4])
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}constant_fold{{ +[0-9]+ +[0-9]+ +}}6{{ }}
