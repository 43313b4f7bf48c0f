# Nor multi-output calls one of whose results is written: merged, the write would reach both.
# RUN: --passes=cse

def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    max_2 = torch.ops.aten.max.dim(x, 1)
    getitem_1 = max_2[0]
    add_ = torch.ops.aten.add_.Tensor(getitem_1, 1)
    neg = torch.ops.aten.neg.default(getitem)
    return (neg, getitem_1)

# CHECK-LABEL: def forward(
# CHECK-NEXT: max_1{{(: "[^"]*")?}} = torch.ops.aten.max.dim(x, 1)
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = max_1[0]
# CHECK-NEXT: max_2{{(: "[^"]*")?}} = torch.ops.aten.max.dim(x, 1)
# CHECK-NEXT: getitem_1{{(: "[^"]*")?}} = max_2[0]
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(getitem_1, 1)
# CHECK-NEXT: neg{{(: "[^"]*")?}} = torch.ops.aten.neg.default(getitem)
# CHECK-NEXT: return (neg, getitem_1)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
