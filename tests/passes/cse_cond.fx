# CSE merges two conds of the same subgraphs and operands (cond is pure, Note [cond]) and their
# getitems; a cond of other subgraphs stays. The subgraphs print after the forward.
# RUN: --passes=cse

def forward(self, p: "b8[]", x: "f32[4]"):
    true_graph_0 = self.true_graph_0
    false_graph_0 = self.false_graph_0
    cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x])
    getitem = cond[0]
    cond_1 = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x])
    getitem_1 = cond_1[0]
    true_graph_1 = self.true_graph_1
    cond_2 = torch.ops.higher_order.cond(p, true_graph_1, false_graph_0, [x])
    getitem_2 = cond_2[0]
    add = torch.ops.aten.add.Tensor(getitem, getitem_1)
    add_1 = torch.ops.aten.add.Tensor(add, getitem_2)
    return (add_1,)

class true_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        sin = torch.ops.aten.sin.default(arg0_1)
        return (sin,)

class true_graph_1(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        exp = torch.ops.aten.exp.default(arg0_1)
        return (exp,)

class false_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        cos = torch.ops.aten.cos.default(arg0_1)
        return (cos,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: true_graph_0 = self.true_graph_0
# CHECK-NEXT: false_graph_0 = self.false_graph_0
# CHECK-NEXT: cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x])
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = cond[0]
# CHECK-NEXT: true_graph_1 = self.true_graph_1
# CHECK-NEXT: cond_2 = torch.ops.higher_order.cond(p, true_graph_1, false_graph_0, [x])
# CHECK-NEXT: getitem_2{{(: "[^"]*")?}} = cond_2[0]
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(getitem, getitem)
# CHECK-NEXT: add_1{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(add, getitem_2)
# CHECK-NEXT: return (add_1,)
# CHECK: class true_graph_0(torch.nn.Module):
# CHECK: sin{{(: "[^"]*")?}} = torch.ops.aten.sin.default(arg0_1)
# CHECK: class false_graph_0(torch.nn.Module):
# CHECK: cos{{(: "[^"]*")?}} = torch.ops.aten.cos.default(arg0_1)
# CHECK: class true_graph_1(torch.nn.Module):
# CHECK: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(arg0_1)
