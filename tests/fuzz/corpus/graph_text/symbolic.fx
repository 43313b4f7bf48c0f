# Dynamic shapes: a SymInt input and sizes that are symbols and expressions over them.
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "Sym(s0)", arg1_1: "f32[s0, 8][8, 1]cpu", arg2_1: "f32[8][1]cpu", arg3_1: "f32[2*s0, s1][s1, 1]cpu"):
        add: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(arg1_1, arg2_1);  arg1_1 = arg2_1 = None
        mul: "f32[s0, 8][8, 1]cpu" = torch.ops.aten.mul.Scalar(add, arg0_1);  add = arg0_1 = None
        neg: "f32[2*s0, s1][s1, 1]cpu" = torch.ops.aten.neg.default(arg3_1);  arg3_1 = None
        return (mul, neg)
