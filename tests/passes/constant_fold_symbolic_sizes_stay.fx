# RUN: --passes=constant_fold

def forward(self, x: "f32[s0, 3]", y: "f32[3*s0]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    view = torch.ops.aten.view.default(y, [sym_size_int, 3])
    return (view,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: sym_size_int{{(: "[^"]*")?}} = torch.ops.aten.sym_size.int(x, 0)
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(y, [sym_size_int, 3])
# CHECK-NEXT: return (view,)
# CHECK: {{^}}constant_fold{{ +[0-9]+ +[0-9]+ +}}0{{ }}
