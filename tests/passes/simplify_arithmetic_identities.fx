# RUN: --passes=simplify

def forward(self, x: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    mul_1 = torch.ops.aten.mul.Scalar(mul, 1.0)
    div = torch.ops.aten.div.Tensor(mul_1, 1)
    div_1 = torch.ops.aten.div.Scalar(div, 1.0)
    add = torch.ops.aten.add.Tensor(div_1, -0.0, alpha = 5)
    add_1 = torch.ops.aten.add.Scalar(add, -0.0)
    sub = torch.ops.aten.sub.Tensor(add_1, 0)
    sub_1 = torch.ops.aten.sub.Scalar(sub, 0)
    mul_2 = torch.ops.aten.mul.Tensor(sub_1, True)
    relu = torch.ops.aten.relu.default(mul_2)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}9{{ }}
