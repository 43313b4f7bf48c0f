# RUN: --passes=constant_fold

def forward(self, x: "f32[4, 3]", y: "f32[12]"):
    sym_size_int = torch.ops.aten.sym_size.int(x, 0)
    view = torch.ops.aten.view.default(y, [sym_size_int, -1])
    sym_numel_default = torch.ops.aten.sym_numel.default(x)
    div = torch.ops.aten.div.Scalar(view, sym_numel_default)
    sym_size_int_1 = torch.ops.aten.sym_size.int(x, 1)
    return (div, sym_size_int_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(y, [4, -1])
# CHECK-NEXT: div{{(: "[^"]*")?}} = torch.ops.aten.div.Scalar(view, 12)
# CHECK-NEXT: sym_size_int_1{{(: "[^"]*")?}} = torch.ops.aten.sym_size.int(x, 1)
# CHECK-NEXT: return (div, sym_size_int_1)
# CHECK: {{^}}constant_fold{{ +[0-9]+ +[0-9]+ +}}2{{ }}
