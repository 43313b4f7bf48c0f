# Views that change the layout stay: a real transpose, an expand that broadcasts, a reshape.
# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]", y: "f32[1, 3]"):
    t = torch.ops.aten.t.default(x)
    expand = torch.ops.aten.expand.default(y, [4, 3])
    view = torch.ops.aten.view.default(x, [3, 4])
    add = torch.ops.aten.add.Tensor(t, view)
    add_1 = torch.ops.aten.add.Tensor(x, expand)
    return (add, add_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(x)
# CHECK-NEXT: expand{{(: "[^"]*")?}} = torch.ops.aten.expand.default(y, [4, 3])
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(x, [3, 4])
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(t, view)
# CHECK-NEXT: add_1{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, expand)
# CHECK-NEXT: return (add, add_1)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}
