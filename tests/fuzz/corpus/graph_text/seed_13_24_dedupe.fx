# Section 13.24 of the seed chapter: f(t, t) with x.add_(1); the duplicated, mutated input is
# passed once (arg0_1) and its new value is returned first. Annotated: t is f32[4].
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu"):
        add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(arg0_1, 1);  arg0_1 = None
        add_1: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(add, add)
        return (add, add_1)
