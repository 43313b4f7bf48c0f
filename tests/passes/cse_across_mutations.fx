# A write starts a new CSE region: the same expression after it reads a different value.
# RUN: --passes=cse

def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, y)
    mul_1 = torch.ops.aten.mul.Tensor(x, y)
    add_ = torch.ops.aten.add_.Tensor(x, 1)
    mul_2 = torch.ops.aten.mul.Tensor(x, y)
    cat = torch.ops.aten.cat.default([mul, mul_1, mul_2])
    return (cat,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, y)
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(x, 1)
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, y)
# CHECK-NEXT: cat{{(: "[^"]*")?}} = torch.ops.aten.cat.default([mul, mul, mul_2])
# CHECK-NEXT: return (cat,)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}1{{ }}
