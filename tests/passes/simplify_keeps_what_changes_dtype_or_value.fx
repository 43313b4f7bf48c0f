# The users would see another dtype (x * 1.0 on an int tensor is a float tensor), or the value
# differs (x * 2, x + 1, 1 - x, div with a rounding mode on an int tensor).
# RUN: --passes=simplify

def forward(self, i: "i64[4]", x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(i, 1.0)
    div = torch.ops.aten.div.Tensor(i, 1)
    mul_1 = torch.ops.aten.mul.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, 1)
    rsub = torch.ops.aten.rsub.Scalar(x, 0)
    div_1 = torch.ops.aten.div.Tensor_mode(x, 1, rounding_mode = 'floor')
    cat = torch.ops.aten.cat.default([mul, div, mul_1, add, rsub, div_1])
    return (cat,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(i, 1.0)
# CHECK-NEXT: div{{(: "[^"]*")?}} = torch.ops.aten.div.Tensor(i, 1)
# CHECK-NEXT: mul_1{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 2)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, 1)
# CHECK-NEXT: rsub{{(: "[^"]*")?}} = torch.ops.aten.rsub.Scalar(x, 0)
# CHECK-NEXT: div_1{{(: "[^"]*")?}} = torch.ops.aten.div.Tensor_mode(x, 1, rounding_mode = 'floor')
# CHECK-NEXT: cat{{(: "[^"]*")?}} = torch.ops.aten.cat.default([mul, div, mul_1, add, rsub, div_1])
# CHECK-NEXT: return (cat,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}

# -----

# An int tensor times the int 1 is the same int tensor.
# RUN: --passes=simplify

def forward(self, i: "i64[4]"):
    mul = torch.ops.aten.mul.Tensor(i, 1)
    neg = torch.ops.aten.neg.default(mul)
    return (neg,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: neg{{(: "[^"]*")?}} = torch.ops.aten.neg.default(i)
# CHECK-NEXT: return (neg,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
