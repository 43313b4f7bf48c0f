# DCE removes an unused cond with its getitem and keeps a used one with its subgraphs: the cond's
# uses are its arguments (a subgraph uses no node of the graph).
# RUN: --passes=dce

def forward(self, p: "b8[]", x: "f32[4]", y: "f32[4]"):
    true_graph_0 = self.true_graph_0
    false_graph_0 = self.false_graph_0
    cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x, y])
    getitem = cond[0]
    cond_1 = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [y, x])
    getitem_1 = cond_1[0]
    return (getitem,)

class true_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]", arg1_1: "f32[4]"):
        add = torch.ops.aten.add.Tensor(arg0_1, arg1_1)
        return (add,)

class false_graph_0(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]", arg1_1: "f32[4]"):
        sub = torch.ops.aten.sub.Tensor(arg0_1, arg1_1)
        return (sub,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: true_graph_0 = self.true_graph_0
# CHECK-NEXT: false_graph_0 = self.false_graph_0
# CHECK-NEXT: cond = torch.ops.higher_order.cond(p, true_graph_0, false_graph_0, [x, y])
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = cond[0]
# CHECK-NEXT: return (getitem,)
# CHECK: class true_graph_0(torch.nn.Module):
# CHECK: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(arg0_1, arg1_1)
# CHECK: class false_graph_0(torch.nn.Module):
# CHECK: sub{{(: "[^"]*")?}} = torch.ops.aten.sub.Tensor(arg0_1, arg1_1)
