# CSE compares constants exactly: 1 and 1.0 give different dtypes for an int tensor, 0.0 and
# -0.0 different results; argument order matters. Nothing is merged.
# RUN: --passes=cse

def forward(self, x: "i64[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    mul_1 = torch.ops.aten.mul.Tensor(x, 1.0)
    mul_2 = torch.ops.aten.mul.Tensor(y, 0.0)
    mul_3 = torch.ops.aten.mul.Tensor(y, -0.0)
    sub = torch.ops.aten.sub.Tensor(y, mul_2)
    sub_1 = torch.ops.aten.sub.Tensor(mul_2, y)
    return (mul, mul_1, mul_3, sub, sub_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 1)
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 1.0)
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(y, 0.0)
# CHECK-NEXT: mul_3{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(y, -0.0)
# CHECK-NEXT: sub{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(y, mul_2)
# CHECK-NEXT: sub_1{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(mul_2, y)
# CHECK-NEXT: return (mul, mul_1, mul_3, sub, sub_1)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
