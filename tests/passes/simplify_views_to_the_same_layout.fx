# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]"):
    view = torch.ops.aten.view.default(x, [4, 3])
    reshape = torch.ops.aten.reshape.default(view, [4, -1])
    _unsafe_view = torch.ops.aten._unsafe_view.default(reshape, [4, 3])
    expand = torch.ops.aten.expand.default(_unsafe_view, [4, 3])
    t = torch.ops.aten.t.default(expand)
    t_1 = torch.ops.aten.t.default(t)
    transpose = torch.ops.aten.transpose.int(t_1, 1, 1)
    view_1 = torch.ops.aten.view.default(transpose, [12])
    view_2 = torch.ops.aten.view.default(view_1, [4, 3])
    relu = torch.ops.aten.relu.default(view_2)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(x)
# CHECK-NEXT: view_1{{(: "[^"]*")?}} = torch.ops.aten.view.default(x, [12])
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}7{{ }}
