# Re-inplacing as a rewrite (torch.fx.passes.reinplace's rule): a call whose argument 0 dies at it
# becomes the in-place variant, under its own name. mul reads an input (never written); exp's
# argument is read again by sum (not dead); add and relu write into mul's buffer and add's.
# RUN: --passes=reinplace

def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(mul, y)
    relu = torch.ops.aten.relu.default(add)
    exp = torch.ops.aten.exp.default(relu)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (exp, sum_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 2)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(mul, y)
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu_.default(add)
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(relu)
# CHECK-NEXT: sum_1{{(: "[^"]*")?}} = torch.ops.aten.sum.default(relu)
# CHECK-NEXT: return (exp, sum_1)
# CHECK: {{^}}reinplace{{ +[0-9]+ +[0-9]+ +}}2{{ }}
