# Two outputs computed alike are two tensors to the caller: CSE merging them would make one.
# RUN: --passes=cse

def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    view = torch.ops.aten.view.default(x, [2, 2])
    view_1 = torch.ops.aten.view.default(x, [2, 2])
    exp_2 = torch.ops.aten.exp.default(x)
    t = torch.ops.aten.t.default(exp_2)
    return (exp, t, view, view_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(x, [2, 2])
# CHECK-NEXT: view_1{{(: "[^"]*")?}} = torch.ops.aten.view.default(x, [2, 2])
# CHECK-NEXT: exp_2{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(exp_2)
# CHECK-NEXT: return (exp, t, view, view_1)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
