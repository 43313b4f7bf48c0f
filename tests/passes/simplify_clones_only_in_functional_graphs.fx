# RUN: --passes=simplify

def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    clone_1 = torch.ops.aten.clone.default(x)
    add = torch.ops.aten.add.Tensor(clone, clone_1)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(exp, x)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}2{{ }}

# -----

# With a mutation in the graph, a clone may be what keeps a value from a later write.
# RUN: --passes=simplify

def forward(self, x: "f32[4]", y: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    clone = torch.ops.aten.clone.default(exp)
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    add = torch.ops.aten.add.Tensor(clone, y)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: clone{{(: "[^"]*")?}} = torch.ops.aten.clone.default(exp)
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(y, 1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(clone, y)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}0{{ }}
