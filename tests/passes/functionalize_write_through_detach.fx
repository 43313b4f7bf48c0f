# A write through a detach (Note [Writes through detach]): y's new value is the write's values
# with y's own history (values_with_history: detach(values) - z, z = detach(y) - y where finite);
# d, read after the write, is that value with the write's history, and so is its view taken
# before the write.
# RUN: --passes=functionalize

def forward(self, x: "f32[2, 3][3, 1]cpu", w: "f32[3][1]cpu"):
    y: "f32[2, 3][3, 1]cpu" = torch.ops.aten.sin.default(x)
    d: "f32[2, 3][3, 1]cpu" = torch.ops.aten.detach.default(y)
    s: "f32[3][1]cpu" = torch.ops.aten.select.int(d, 0, 1)
    m: "f32[2, 3][3, 1]cpu" = torch.ops.aten.mul_.Tensor(d, w)
    z: "f32[2, 3][3, 1]cpu" = torch.ops.aten.cos.default(y)
    return (z, s)

# CHECK-LABEL: def forward(
# CHECK: sin{{(: "[^"]*")?}} = torch.ops.aten.sin.default(x)
# CHECK-NEXT: detach{{(: "[^"]*")?}} = torch.ops.aten.detach.default(sin)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(detach, w)
# CHECK-NEXT: detach_1{{(: "[^"]*")?}} = torch.ops.aten.detach.default(sin)
# CHECK-NEXT: sub{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(detach_1, sin)
# CHECK-NEXT: eq{{(: "[^"]*")?}} = torch.ops.aten.eq.Scalar(sub, 0)
# CHECK-NEXT: zeros_like{{(: "[^"]*")?}} = torch.ops.aten.zeros_like.default(sub)
# CHECK-NEXT: where{{(: "[^"]*")?}} = torch.ops.aten.where.self(eq, sub, zeros_like)
# CHECK-NEXT: detach_2{{(: "[^"]*")?}} = torch.ops.aten.detach.default(mul)
# CHECK-NEXT: sub_1{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(detach_2, where)
# CHECK-NEXT: cos{{(: "[^"]*")?}} = torch.ops.aten.cos.default(sub_1)
# CHECK-NEXT: detach_3{{(: "[^"]*")?}} = torch.ops.aten.detach.default(sub_1)
# CHECK-NEXT: detach_4{{(: "[^"]*")?}} = torch.ops.aten.detach.default(mul)
# CHECK-NEXT: sub_2{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(detach_4, mul)
# CHECK-NEXT: eq_1{{(: "[^"]*")?}} = torch.ops.aten.eq.Scalar(sub_2, 0)
# CHECK-NEXT: zeros_like_1{{(: "[^"]*")?}} = torch.ops.aten.zeros_like.default(sub_2)
# CHECK-NEXT: where_1{{(: "[^"]*")?}} = torch.ops.aten.where.self(eq_1, sub_2, zeros_like_1)
# CHECK-NEXT: detach_5{{(: "[^"]*")?}} = torch.ops.aten.detach.default(detach_3)
# CHECK-NEXT: sub_3{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(detach_5, where_1)
# CHECK-NEXT: select_1{{(: "[^"]*")?}} = torch.ops.aten.select.int(sub_3, 0, 1)
# CHECK-NEXT: return (cos, select_1)
