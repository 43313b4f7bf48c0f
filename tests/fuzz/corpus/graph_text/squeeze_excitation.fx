# EfficientNet's squeeze-excitation at 2x2 spatial size: a SiLU's output averaged over the spatial
# dimensions (only 4x smaller, so not a "reduction op") feeds a 1x1 convolution, whose backward
# reads the mean; the sigmoid's product with the SiLU reads the SiLU in the backward. functorch
# 1.13's min-cut recomputes the mean from the SiLU; PyTorch 2.x bans it ("materialized in
# backward") and saves it. tests/transforms/min_cut_pointwise_test.cc and
# tests/runtime/recompute_pointwise_test.cc (MinCutOptions::recompute_pointwise_from_saved).
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 4, 4][48, 16, 4, 1]cpu", w1: "f32[8, 3, 3, 3][27, 9, 3, 1]cpu", w_se1: "f32[4, 8, 1, 1][8, 1, 1, 1]cpu", b_se1: "f32[4][1]cpu", w_se2: "f32[8, 4, 1, 1][4, 1, 1, 1]cpu", b_se2: "f32[8][1]cpu"):
        convolution: "f32[2, 8, 2, 2][32, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(x, w1, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1);  x = w1 = None
        silu: "f32[2, 8, 2, 2][32, 4, 2, 1]cpu" = torch.ops.aten.silu.default(convolution);  convolution = None
        mean: "f32[2, 8, 1, 1][8, 1, 1, 1]cpu" = torch.ops.aten.mean.dim(silu, [-1, -2], True)
        convolution_1: "f32[2, 4, 1, 1][4, 1, 1, 1]cpu" = torch.ops.aten.convolution.default(mean, w_se1, b_se1, [1, 1], [0, 0], [1, 1], False, [0, 0], 1);  mean = w_se1 = b_se1 = None
        silu_1: "f32[2, 4, 1, 1][4, 1, 1, 1]cpu" = torch.ops.aten.silu.default(convolution_1);  convolution_1 = None
        convolution_2: "f32[2, 8, 1, 1][8, 1, 1, 1]cpu" = torch.ops.aten.convolution.default(silu_1, w_se2, b_se2, [1, 1], [0, 0], [1, 1], False, [0, 0], 1);  silu_1 = w_se2 = b_se2 = None
        sigmoid: "f32[2, 8, 1, 1][8, 1, 1, 1]cpu" = torch.ops.aten.sigmoid.default(convolution_2);  convolution_2 = None
        mul: "f32[2, 8, 2, 2][32, 4, 2, 1]cpu" = torch.ops.aten.mul.Tensor(silu, sigmoid);  silu = sigmoid = None
        mean_1: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mean.dim(mul, [-1, -2]);  mul = None
        return (mean_1,)
