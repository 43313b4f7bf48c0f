# EfficientNetV2's FusedMBConv residual: two SiLUs (one after Conv-BatchNorm, one after a
# convolution) added, and the sum fed to a convolution, whose backward reads it; each SiLU's input
# is what silu_backward reads. functorch 1.13's min-cut recomputes the sum from those inputs, two
# calls (silu_1, add) above what the backward has; PyTorch 2.x bans the add ("materialized in
# backward") and saves it. tests/transforms/min_cut_pointwise_test.cc and
# tests/runtime/recompute_pointwise_test.cc (MinCutOptions::recompute_pointwise_from_saved).
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 6, 6][108, 36, 6, 1]cpu", w1: "f32[8, 3, 3, 3][27, 9, 3, 1]cpu", bn_w: "f32[8][1]cpu", bn_b: "f32[8][1]cpu", w2: "f32[8, 8, 3, 3][72, 9, 3, 1]cpu", w3: "f32[8, 8, 3, 3][72, 9, 3, 1]cpu"):
        convolution: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  x = w1 = None
        native_batch_norm = torch.ops.aten.native_batch_norm.default(convolution, bn_w, bn_b, None, None, True, 0.1, 1e-05);  convolution = bn_w = bn_b = None
        getitem: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = native_batch_norm[0];  native_batch_norm = None
        silu: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.silu.default(getitem);  getitem = None
        convolution_1: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(silu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  w2 = None
        silu_1: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.silu.default(convolution_1);  convolution_1 = None
        add: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.add.Tensor(silu_1, silu);  silu_1 = silu = None
        convolution_2: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(add, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  add = w3 = None
        mean: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mean.dim(convolution_2, [-1, -2]);  convolution_2 = None
        return (mean,)
