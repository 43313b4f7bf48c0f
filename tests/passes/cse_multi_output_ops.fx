# CSE merges multi-output ops and their getitems.
# RUN: --passes=cse

def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    max_2 = torch.ops.aten.max.dim(x, 1)
    getitem_1 = max_2[0]
    getitem_2 = max_2[1]
    add = torch.ops.aten.add.Tensor(getitem, getitem_1)
    return (add, getitem_2)

# CHECK-LABEL: def forward(
# CHECK-NEXT: max_1{{(: "[^"]*")?}} = torch.ops.aten.max.dim(x, 1)
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = max_1[0]
# CHECK-NEXT: getitem_2{{(: "[^"]*")?}} = max_1[1]
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(getitem, getitem)
# CHECK-NEXT: return (add, getitem_2)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}2{{ }}
