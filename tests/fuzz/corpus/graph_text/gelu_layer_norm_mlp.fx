# A Linear-GELU-LayerNorm-Linear MLP: the GELU's output is what LayerNorm normalizes, so the norm's
# backward reads it, and the GELU's input is what gelu_backward reads. functorch 1.13's min-cut
# saves the input and recomputes the GELU in the backward; PyTorch 2.x bans the GELU ("materialized
# in backward") and saves both. tests/transforms/min_cut_pointwise_test.cc and
# tests/runtime/recompute_pointwise_test.cc (MinCutOptions::recompute_pointwise_from_saved).
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 16][16, 1]cpu", w1: "f32[32, 16][16, 1]cpu", b1: "f32[32][1]cpu", ln_w: "f32[32][1]cpu", ln_b: "f32[32][1]cpu", w2: "f32[16, 32][32, 1]cpu", b2: "f32[16][1]cpu"):
        t: "f32[16, 32][1, 16]cpu" = torch.ops.aten.t.default(w1);  w1 = None
        addmm: "f32[8, 32][32, 1]cpu" = torch.ops.aten.addmm.default(b1, x, t);  b1 = x = t = None
        gelu: "f32[8, 32][32, 1]cpu" = torch.ops.aten.gelu.default(addmm);  addmm = None
        native_layer_norm = torch.ops.aten.native_layer_norm.default(gelu, [32], ln_w, ln_b, 1e-05);  gelu = ln_w = ln_b = None
        getitem: "f32[8, 32][32, 1]cpu" = native_layer_norm[0]
        getitem_1: "f32[8, 1][1, 1]cpu" = native_layer_norm[1];  getitem_1 = None
        getitem_2: "f32[8, 1][1, 1]cpu" = native_layer_norm[2];  native_layer_norm = getitem_2 = None
        t_1: "f32[32, 16][1, 32]cpu" = torch.ops.aten.t.default(w2);  w2 = None
        addmm_1: "f32[8, 16][16, 1]cpu" = torch.ops.aten.addmm.default(b2, getitem, t_1);  b2 = getitem = t_1 = None
        return (addmm_1,)
