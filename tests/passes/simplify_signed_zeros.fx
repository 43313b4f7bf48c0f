# -0.0 + 0 is +0.0: on floating tensors x + 0, 0 + x, x - (-0.0), x - 0 with a negative alpha
# and x - 0.0 with the int alpha 0 (ATen adds -alpha * other, and the int -0 is +0.0) are not x
# (1 / x tells). Integers have one zero.
# RUN: --passes=simplify

def forward(self, x: "f32[4]", i: "i64[4]"):
    add = torch.ops.aten.add.Tensor(x, 0)
    add_1 = torch.ops.aten.add.Tensor(0.0, x)
    sub = torch.ops.aten.sub.Tensor(x, -0.0)
    sub_1 = torch.ops.aten.sub.Tensor(x, 0, alpha = -1)
    add_2 = torch.ops.aten.add.Tensor(x, -0.0, alpha = -2)
    sub_2 = torch.ops.aten.sub.Tensor(x, 0.0, alpha = 0)
    add_3 = torch.ops.aten.add.Tensor(i, 0)
    add_4 = torch.ops.aten.add.Tensor(0, i)
    cat = torch.ops.aten.cat.default([add, add_1, sub, sub_1, add_2, sub_2])
    cat_1 = torch.ops.aten.cat.default([add_3, add_4])
    return (cat, cat_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, 0)
# CHECK-NEXT: add_1{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(0.0, x)
# CHECK-NEXT: sub{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(x, -0.0)
# CHECK-NEXT: sub_1{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(x, 0, alpha = -1)
# CHECK-NEXT: add_2{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, -0.0, alpha = -2)
# CHECK-NEXT: sub_2{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(x, 0.0, alpha = 0)
# CHECK-NEXT: cat{{(: "[^"]*")?}} = torch.ops.aten.cat.default([add, add_1, sub, sub_1, add_2, sub_2])
# CHECK-NEXT: cat_1{{(: "[^"]*")?}} = torch.ops.aten.cat.default([i, i])
# CHECK-NEXT: return (cat, cat_1)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}2{{ }}
