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
