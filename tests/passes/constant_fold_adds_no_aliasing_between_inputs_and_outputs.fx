# The folded value would be the caller's input itself, or alias it or another output, where eager
# returns a new tensor.
# RUN: --passes=constant_fold

def forward(self, x: "f32[4]"):
    ones = torch.ops.aten.ones.default([4])
    mul = torch.ops.aten.mul.Tensor(x, ones)
    exp = torch.ops.aten.exp.default(x)
    mul_1 = torch.ops.aten.mul.Tensor(exp, ones)
    mul_2 = torch.ops.aten.mul.Tensor(x, ones)
    view = torch.ops.aten.view.default(mul_2, [2, 2])
    return (mul, exp, mul_1, view)

# CHECK-LABEL: def forward(
# CHECK-NEXT: ones{{(: "[^"]*")?}} = torch.ops.aten.ones.default([4])
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, ones)
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(exp, ones)
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, ones)
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(mul_2, [2, 2])
# CHECK-NEXT: return (mul, exp, mul_1, view)
# CHECK: {{^}}constant_fold{{ +[0-9]+ +[0-9]+ +}}0{{ }}
