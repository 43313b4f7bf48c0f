# Dead code elimination removes unused chains.
# RUN: --passes=dce

def forward(self, x: "f32[4]", y: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    neg = torch.ops.aten.neg.default(relu)
    add = torch.ops.aten.add.Tensor(x, x)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, x)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}2{{ }}
