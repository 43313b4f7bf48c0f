# detach(detach(x)) is detach(x); detach(x) itself stays (it cuts the gradient), and so does a
# detach in the middle of a chain whose ends have the same layout.
# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]"):
    detach = torch.ops.aten.detach.default(x)
    detach_1 = torch.ops.aten.detach.default(detach)
    detach_2 = torch.ops.aten.detach.default(detach_1)
    t = torch.ops.aten.t.default(x)
    detach_3 = torch.ops.aten.detach.default(t)
    t_1 = torch.ops.aten.t.default(detach_3)
    add = torch.ops.aten.add.Tensor(detach_2, t_1)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: detach{{(: "[^"]*")?}} = torch.ops.aten.detach.default(x)
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(x)
# CHECK-NEXT: detach_3{{(: "[^"]*")?}} = torch.ops.aten.detach.default(t)
# CHECK-NEXT: t_1{{(: "[^"]*")?}} = torch.ops.aten.t.default(detach_3)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(detach, t_1)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}2{{ }}
