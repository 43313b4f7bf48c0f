# Inductor's rules (fx_passes/README.md): no output becomes an input or another output.
# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]"):
    view = torch.ops.aten.view.default(x, [4, 3])
    mul = torch.ops.aten.mul.Tensor(x, 1)
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    t = torch.ops.aten.t.default(exp)
    t_1 = torch.ops.aten.t.default(t)
    div = torch.ops.aten.div.Tensor(x, 1)
    unsqueeze = torch.ops.aten.unsqueeze.default(div, 0)
    return (view, mul, exp, clone, t_1, unsqueeze)

# CHECK-LABEL: def forward(
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(x, [4, 3])
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 1)
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: clone{{(: "[^"]*")?}} = torch.ops.aten.clone.default(exp)
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(exp)
# CHECK-NEXT: t_1{{(: "[^"]*")?}} = torch.ops.aten.t.default(t)
# CHECK-NEXT: div{{(: "[^"]*")?}} = torch.ops.aten.div.Tensor(x, 1)
# CHECK-NEXT: unsqueeze{{(: "[^"]*")?}} = torch.ops.aten.unsqueeze.default(div, 0)
# CHECK-NEXT: return (view, mul, exp, clone, t_1, unsqueeze)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}
