class GraphModule(torch.nn.Module):
    def forward(self, p_fc1_weight: "f32[32, 8][8, 1]cpu", p_fc1_bias: "f32[32][1]cpu", p_fc2_weight: "f32[32, 32][32, 1]cpu", p_fc2_bias: "f32[32][1]cpu", p_fc3_weight: "f32[4, 32][32, 1]cpu", p_fc3_bias: "f32[4][1]cpu", x: "f32[4, 8][8, 1]cpu", y: "f32[4, 4][4, 1]cpu"):
        t: "f32[8, 32][1, 8]cpu" = torch.ops.aten.t.default(p_fc1_weight);  p_fc1_weight = None
        addmm: "f32[4, 32][32, 1]cpu" = torch.ops.aten.addmm.default(p_fc1_bias, x, t);  p_fc1_bias = x = t = None
        relu: "f32[4, 32][32, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        t_1: "f32[32, 32][1, 32]cpu" = torch.ops.aten.t.default(p_fc2_weight);  p_fc2_weight = None
        addmm_1: "f32[4, 32][32, 1]cpu" = torch.ops.aten.addmm.default(p_fc2_bias, relu, t_1);  p_fc2_bias = relu = t_1 = None
        relu_1: "f32[4, 32][32, 1]cpu" = torch.ops.aten.relu.default(addmm_1);  addmm_1 = None
        t_2: "f32[32, 4][1, 32]cpu" = torch.ops.aten.t.default(p_fc3_weight);  p_fc3_weight = None
        addmm_2: "f32[4, 4][4, 1]cpu" = torch.ops.aten.addmm.default(p_fc3_bias, relu_1, t_2);  p_fc3_bias = relu_1 = t_2 = None
        mse_loss: "f32[][]cpu" = torch.ops.aten.mse_loss.default(addmm_2, y);  addmm_2 = y = None
        return (mse_loss,)
