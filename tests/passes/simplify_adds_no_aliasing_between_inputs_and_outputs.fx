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

# -----

# The same element of a tuple taken twice is one tensor: view(getitem) may not become it.
# RUN: --passes=simplify

def forward(self, x: "f32[3, 4]"):
    max_1 = torch.ops.aten.max.dim(x, 0, True)
    getitem = max_1[0]
    getitem_1 = max_1[0]
    view = torch.ops.aten.view.default(getitem, [1, 4])
    return (view, getitem_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: max_1 = torch.ops.aten.max.dim(x, 0, True)
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = max_1[0]
# CHECK-NEXT: getitem_1{{(: "[^"]*")?}} = max_1[0]
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(getitem, [1, 4])
# CHECK-NEXT: return (view, getitem_1)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}

# -----

# A view that is an output may become another view of the same storage.
# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
    view = torch.ops.aten.view.default(slice_1, [2, 3])
    return (view,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: slice_1{{(: "[^"]*")?}} = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
# CHECK-NEXT: return (slice_1,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
