# Two clones are equal until one is written: a value whose storage a call writes is not merged.
# RUN: --passes=cse

def forward(self, x: "f32[4]"):
    clone = torch.ops.aten.clone.default(x)
    clone_1 = torch.ops.aten.clone.default(x)
    view = torch.ops.aten.view.default(clone, [2, 2])
    add_ = torch.ops.aten.add_.Tensor(view, 1)
    add = torch.ops.aten.add.Tensor(clone, clone_1)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: clone{{(: "[^"]*")?}} = torch.ops.aten.clone.default(x)
# CHECK-NEXT: clone_1{{(: "[^"]*")?}} = torch.ops.aten.clone.default(x)
# CHECK-NEXT: view{{(: "[^"]*")?}} = torch.ops.aten.view.default(clone, [2, 2])
# CHECK-NEXT: add_{{(: "[^"]*")?}} = torch.ops.aten.add_.Tensor(view, 1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(clone, clone_1)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
