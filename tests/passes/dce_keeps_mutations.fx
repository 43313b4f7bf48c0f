# An in-place op writes its argument: DCE keeps it unused, and what it reads with it.
# RUN: --passes=dce

def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(y, 2)
    add_ = torch.ops.aten.add_.Tensor(x, mul)
    exp = torch.ops.aten.exp.default(y)
    return (y,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(y, 2)
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(x, mul)
# CHECK-NEXT: return (y,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}1{{ }}
