# Not folded: a value other than 0/1, a broadcast that grows x, a dtype the result promotes to,
# zeros + x with alpha != 1, a factory some call writes, x + 0 on floats (-0.0 + 0 is +0.0),
# including a -0.0 that went through an integer dtype.
# RUN: --passes=constant_fold

def forward(self, x: "f32[4]", i: "i64[4]"):
    full = torch.ops.aten.full.default([4], 2.0)
    mul = torch.ops.aten.mul.Tensor(x, full)
    ones = torch.ops.aten.ones.default([3, 4])
    mul_1 = torch.ops.aten.mul.Tensor(mul, ones)
    ones_1 = torch.ops.aten.ones.default([4])
    mul_2 = torch.ops.aten.mul.Tensor(i, ones_1)
    ones_2 = torch.ops.aten.ones.default([4], dtype = torch.float64)
    mul_3 = torch.ops.aten.mul.Tensor(x, ones_2)
    zeros = torch.ops.aten.zeros.default([4])
    add = torch.ops.aten.add.Tensor(zeros, x, alpha = 2)
    ones_3 = torch.ops.aten.ones.default([4])
    add_ = torch.ops.aten.add_.Tensor(ones_3, 1)
    mul_4 = torch.ops.aten.mul.Tensor(x, ones_3)
    zeros_1 = torch.ops.aten.zeros.default([4])
    add_1 = torch.ops.aten.add.Tensor(x, zeros_1)
    full_1 = torch.ops.aten.full.default([4], -0.0, dtype = torch.int64)
    to_copy = torch.ops.aten._to_copy.default(full_1, dtype = torch.float32)
    add_2 = torch.ops.aten.add.Tensor(x, to_copy)
    return (mul_1, mul_2, mul_3, add, mul_4, add_1, add_2)

# CHECK-LABEL: def forward(
# CHECK-NEXT: full{{(: "[^"]*")?}} = torch.ops.aten.full.default([4], 2.0)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, full)
# CHECK-NEXT: ones{{(: "[^"]*")?}} = torch.ops.aten.ones.default([3, 4])
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(mul, ones)
# CHECK-NEXT: ones_1{{(: "[^"]*")?}} = torch.ops.aten.ones.default([4])
# CHECK-NEXT: mul_2{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(i, ones_1)
# CHECK-NEXT: ones_2{{(: "[^"]*")?}} = torch.ops.aten.ones.default([4], dtype = torch.float64)
# CHECK-NEXT: mul_3{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, ones_2)
# CHECK-NEXT: zeros{{(: "[^"]*")?}} = torch.ops.aten.zeros.default([4])
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(zeros, x, alpha = 2)
# CHECK-NEXT: ones_3{{(: "[^"]*")?}} = torch.ops.aten.ones.default([4])
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(ones_3, 1)
# CHECK-NEXT: mul_4{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, ones_3)
# CHECK-NEXT: zeros_1{{(: "[^"]*")?}} = torch.ops.aten.zeros.default([4])
# CHECK-NEXT: add_1{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, zeros_1)
# CHECK-NEXT: full_1{{(: "[^"]*")?}} = torch.ops.aten.full.default([4], -0.0, dtype = torch.int64)
# CHECK-NEXT: to_copy{{(: "[^"]*")?}} = torch.ops.aten._to_copy.default(full_1, dtype = torch.float32)
# CHECK-NEXT: add_2{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, to_copy)
# CHECK-NEXT: return (mul_1, mul_2, mul_3, add, mul_4, add_1, add_2)
# CHECK: {{^}}constant_fold{{ +[0-9]+ +[0-9]+ +}}0{{ }}
