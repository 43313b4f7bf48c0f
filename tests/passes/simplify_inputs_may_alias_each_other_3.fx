# A write before the value is computed changes nothing.
# RUN: --passes=simplify

def forward(self, x: "f32[4]", y: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    mul = torch.ops.aten.mul.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(mul, y)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(y, 1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, y)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
