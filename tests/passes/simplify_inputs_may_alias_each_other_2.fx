# Nor through a view of it.
# RUN: --passes=simplify

def forward(self, x: "f32[2, 3]", y: "f32[2, 3]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    t = torch.ops.aten.t.default(mul)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    clone = torch.ops.aten.clone.default(t)
    return (clone,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 1)
# CHECK-NEXT: t{{(: "[^"]*")?}} = torch.ops.aten.t.default(mul)
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(y, 1)
# CHECK-NEXT: clone{{(: "[^"]*")?}} = torch.ops.aten.clone.default(t)
# CHECK-NEXT: return (clone,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}
