# Inputs may be one tensor at run time: x * 1 read after a write to y is not x.
# RUN: --passes=simplify

def forward(self, x: "f32[4]", y: "f32[4]"):
    mul = torch.ops.aten.mul.Tensor(x, 1)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    add = torch.ops.aten.add.Tensor(mul, y)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(x, 1)
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(y, 1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(mul, y)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}

# -----

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

# -----

# A write before the value is computed changes nothing.
# RUN: --passes=simplify

def forward(self, x: "f32[4]", y: "f32[4]"):
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    mul = torch.ops.aten.mul.Tensor(x, 1)
    add = torch.ops.aten.add.Tensor(mul, y)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(y, 1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, y)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
