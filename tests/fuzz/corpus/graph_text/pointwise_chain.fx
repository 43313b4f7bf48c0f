# Pointwise ops only: broadcasting, kwargs, scalar arguments, a multi-use value and a value
# returned twice.
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8][8, 1]cpu", arg1_1: "f32[8][1]cpu", arg2_1: "b8[4, 8][8, 1]cpu"):
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, arg1_1);  arg1_1 = None
        sigmoid: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sigmoid.default(mul)
        gelu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.gelu.default(sigmoid, approximate = 'tanh')
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(gelu, mul, alpha = 2);  gelu = None
        div: "f32[4, 8][8, 1]cpu" = torch.ops.aten.div.Tensor_mode(add, mul, rounding_mode = 'floor');  add = mul = None
        clamp: "f32[4, 8][8, 1]cpu" = torch.ops.aten.clamp.default(div, None, 6.0);  div = None
        masked_fill: "f32[4, 8][8, 1]cpu" = torch.ops.aten.masked_fill.Scalar(clamp, arg2_1, -inf);  clamp = arg2_1 = None
        relu: "f32[4, 8][8, 1]cpu" = torch.ops.aten.relu.default(masked_fill);  masked_fill = None
        threshold_backward: "f32[4, 8][8, 1]cpu" = torch.ops.aten.threshold_backward.default(relu, arg0_1, 0);  arg0_1 = None
        return (relu, threshold_backward, sigmoid, relu)
