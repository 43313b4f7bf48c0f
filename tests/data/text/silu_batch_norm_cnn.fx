# Conv-BatchNorm-SiLU-Conv-SiLU-BatchNorm (training-mode batch statistics, no running stats): one
# SiLU feeds a convolution, whose backward reads the SiLU's output, the other a BatchNorm, whose
# backward reads it too; each SiLU's input is what silu_backward reads. functorch 1.13's min-cut
# saves the inputs and recomputes the SiLUs in the backward; PyTorch 2.x bans them ("materialized in
# backward") and saves both. tests/transforms/min_cut_pointwise_test.cc and
# tests/runtime/recompute_pointwise_test.cc (MinCutOptions::recompute_pointwise_from_saved).
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 8, 8][192, 64, 8, 1]cpu", w1: "f32[8, 3, 3, 3][27, 9, 3, 1]cpu", bn1_w: "f32[8][1]cpu", bn1_b: "f32[8][1]cpu", w2: "f32[8, 8, 3, 3][72, 9, 3, 1]cpu", bn2_w: "f32[8][1]cpu", bn2_b: "f32[8][1]cpu"):
        convolution: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  x = w1 = None
        native_batch_norm = torch.ops.aten.native_batch_norm.default(convolution, bn1_w, bn1_b, None, None, True, 0.1, 1e-05);  convolution = bn1_w = bn1_b = None
        getitem: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = native_batch_norm[0]
        getitem_1: "f32[8][1]cpu" = native_batch_norm[1];  getitem_1 = None
        getitem_2: "f32[8][1]cpu" = native_batch_norm[2];  native_batch_norm = getitem_2 = None
        silu: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = torch.ops.aten.silu.default(getitem);  getitem = None
        convolution_1: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(silu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  silu = w2 = None
        silu_1: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = torch.ops.aten.silu.default(convolution_1);  convolution_1 = None
        native_batch_norm_1 = torch.ops.aten.native_batch_norm.default(silu_1, bn2_w, bn2_b, None, None, True, 0.1, 1e-05);  silu_1 = bn2_w = bn2_b = None
        getitem_3: "f32[2, 8, 8, 8][512, 64, 8, 1]cpu" = native_batch_norm_1[0]
        getitem_4: "f32[8][1]cpu" = native_batch_norm_1[1];  getitem_4 = None
        getitem_5: "f32[8][1]cpu" = native_batch_norm_1[2];  native_batch_norm_1 = getitem_5 = None
        mean: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mean.dim(getitem_3, [-1, -2]);  getitem_3 = None
        return (mean,)
