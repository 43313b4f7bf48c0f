class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 4][4, 1]cpu", y: "f32[4][1]cpu"):
        view = torch.ops.aten.view.default(x, [16])
        add_ = torch.ops.aten.add_.Tensor(y, 1)
        t_ = torch.ops.aten.t_.default(x)
        mul = torch.ops.aten.mul.Tensor(t_, 2)
        return (view, add_, mul)
