# hints: s0=4
class GraphModule(torch.nn.Module):
    def forward(self, p_conv1_weight: "f32[8, 3, 3, 3][27, 9, 3, 1]cpu", p_conv1_bias: "f32[8][1]cpu", p_bn1_weight: "f32[8][1]cpu", p_bn1_bias: "f32[8][1]cpu", p_conv2_weight: "f32[16, 8, 3, 3][72, 9, 3, 1]cpu", p_conv2_bias: "f32[16][1]cpu", p_bn2_weight: "f32[16][1]cpu", p_bn2_bias: "f32[16][1]cpu", p_fc_weight: "f32[10, 16][16, 1]cpu", p_fc_bias: "f32[10][1]cpu", p_bn1_running_mean: "f32[8][1]cpu", p_bn1_running_var: "f32[8][1]cpu", p_bn1_num_batches_tracked: "i64[][]cpu", p_bn2_running_mean: "f32[16][1]cpu", p_bn2_running_var: "f32[16][1]cpu", p_bn2_num_batches_tracked: "i64[][]cpu", x: "f32[s0, 3, 16, 16][768, 256, 16, 1]cpu", target: "i64[s0][1]cpu"):
        convolution: "f32[s0, 8, 16, 16][2048, 256, 16, 1]cpu" = torch.ops.aten.convolution.default(x, p_conv1_weight, p_conv1_bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_conv1_weight = p_conv1_bias = None
        add_: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_bn1_num_batches_tracked, 1);  p_bn1_num_batches_tracked = add_ = None
        native_batch_norm = torch.ops.aten.native_batch_norm.default(convolution, p_bn1_weight, p_bn1_bias, p_bn1_running_mean, p_bn1_running_var, True, 0.1, 1e-05);  convolution = p_bn1_weight = p_bn1_bias = p_bn1_running_mean = p_bn1_running_var = None
        getitem: "f32[s0, 8, 16, 16][2048, 256, 16, 1]cpu" = native_batch_norm[0]
        getitem_1: "f32[8][1]cpu" = native_batch_norm[1];  getitem_1 = None
        getitem_2: "f32[8][1]cpu" = native_batch_norm[2];  native_batch_norm = getitem_2 = None
        relu_: "f32[s0, 8, 16, 16][2048, 256, 16, 1]cpu" = torch.ops.aten.relu_.default(getitem);  getitem = None
        max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu_, [2, 2], [2, 2]);  relu_ = None
        getitem_3: "f32[s0, 8, 8, 8][512, 64, 8, 1]cpu" = max_pool2d_with_indices[0]
        getitem_4: "i64[s0, 8, 8, 8][512, 64, 8, 1]cpu" = max_pool2d_with_indices[1];  max_pool2d_with_indices = getitem_4 = None
        convolution_1: "f32[s0, 16, 8, 8][1024, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(getitem_3, p_conv2_weight, p_conv2_bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  getitem_3 = p_conv2_weight = p_conv2_bias = None
        add__1: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_bn2_num_batches_tracked, 1);  p_bn2_num_batches_tracked = add__1 = None
        native_batch_norm_1 = torch.ops.aten.native_batch_norm.default(convolution_1, p_bn2_weight, p_bn2_bias, p_bn2_running_mean, p_bn2_running_var, True, 0.1, 1e-05);  convolution_1 = p_bn2_weight = p_bn2_bias = p_bn2_running_mean = p_bn2_running_var = None
        getitem_5: "f32[s0, 16, 8, 8][1024, 64, 8, 1]cpu" = native_batch_norm_1[0]
        getitem_6: "f32[16][1]cpu" = native_batch_norm_1[1];  getitem_6 = None
        getitem_7: "f32[16][1]cpu" = native_batch_norm_1[2];  native_batch_norm_1 = getitem_7 = None
        relu__1: "f32[s0, 16, 8, 8][1024, 64, 8, 1]cpu" = torch.ops.aten.relu_.default(getitem_5);  getitem_5 = None
        mean: "f32[s0, 16, 1, 1][16, 1, 1, 1]cpu" = torch.ops.aten.mean.dim(relu__1, [-1, -2], True);  relu__1 = None
        sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0);  x = None
        view: "f32[s0, 16][16, 1]cpu" = torch.ops.aten.view.default(mean, [sym_size_int, 16]);  mean = sym_size_int = None
        t: "f32[16, 10][1, 16]cpu" = torch.ops.aten.t.default(p_fc_weight);  p_fc_weight = None
        addmm: "f32[s0, 10][10, 1]cpu" = torch.ops.aten.addmm.default(p_fc_bias, view, t);  p_fc_bias = view = t = None
        _log_softmax: "f32[s0, 10][10, 1]cpu" = torch.ops.aten._log_softmax.default(addmm, 1, False);  addmm = None
        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(_log_softmax, target, None, 1, -100);  _log_softmax = target = None
        getitem_8: "f32[][]cpu" = nll_loss_forward[0]
        getitem_9: "f32[][]cpu" = nll_loss_forward[1];  nll_loss_forward = getitem_9 = None
        return (getitem_8,)
