class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "b8[][]cpu", arg1_1: "f32[4][1]cpu", arg2_1: "f32[4][1]cpu"):
        true_graph_0 = self.true_graph_0
        false_graph_0 = self.false_graph_0
        cond = torch.ops.higher_order.cond(arg0_1, true_graph_0, false_graph_0, [arg1_1, arg2_1]);  arg0_1 = true_graph_0 = false_graph_0 = arg1_1 = arg2_1 = None
        getitem: "f32[4][1]cpu" = cond[0];  cond = None
        return (getitem,)

    class true_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "f32[4][1]cpu", arg1_1: "f32[4][1]cpu"):
            sin: "f32[4][1]cpu" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None
            add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(sin, arg1_1);  sin = arg1_1 = None
            return (add,)

    class false_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "f32[4][1]cpu", arg1_1: "f32[4][1]cpu"):
            cos: "f32[4][1]cpu" = torch.ops.aten.cos.default(arg0_1);  arg0_1 = None
            mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(cos, arg1_1);  cos = arg1_1 = None
            return (mul,)
