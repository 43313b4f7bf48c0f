# Functionalization functionalizes each branch on its own (PyTorch's cond functionalization): a
# write to a branch's intermediate becomes its functional variant; the other branch, without
# mutations, is the same graph.
# RUN: --passes=functionalize

def forward(self, p: "b8[]", x: "f32[4]"):
    true_graph_0 = self.true_graph_0
    false_graph_0 = self.false_graph_0
    cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x])
    getitem = cond[0]
    return (getitem,)

class true_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        clone = torch.ops.aten.clone.default(arg0_1)
        add_ = torch.ops.aten.add_.Tensor(clone, 1)
        mul = torch.ops.aten.mul.Tensor(clone, 2)
        return (mul,)

class false_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        neg = torch.ops.aten.neg.default(arg0_1)
        return (neg,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: true_graph_0 = self.true_graph_0
# CHECK-NEXT: false_graph_0 = self.false_graph_0
# CHECK-NEXT: cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x])
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = cond[0]
# CHECK-NEXT: return (getitem,)
# CHECK: class true_graph_0(torch.nn.Module):
# CHECK-NEXT: def forward(
# CHECK-NEXT: clone{{(: "[^"]*")?}} = torch.ops.aten.clone.default(arg0_1)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(clone, 1)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(add, 2)
# CHECK-NEXT: return (mul,)
# CHECK: class false_graph_0(torch.nn.Module):
# CHECK-NEXT: def forward(
# CHECK-NEXT: neg{{(: "[^"]*")?}} = torch.ops.aten.neg.default(arg0_1)
# CHECK-NEXT: return (neg,)
