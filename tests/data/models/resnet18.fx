class GraphModule(torch.nn.Module):
    def forward(self, p_conv1_weight: "f32[64, 3, 7, 7][147, 49, 7, 1]cpu", p_bn1_weight: "f32[64][1]cpu", p_bn1_bias: "f32[64][1]cpu", p_layer1_0_conv1_weight: "f32[64, 64, 3, 3][576, 9, 3, 1]cpu", p_layer1_0_bn1_weight: "f32[64][1]cpu", p_layer1_0_bn1_bias: "f32[64][1]cpu", p_layer1_0_conv2_weight: "f32[64, 64, 3, 3][576, 9, 3, 1]cpu", p_layer1_0_bn2_weight: "f32[64][1]cpu", p_layer1_0_bn2_bias: "f32[64][1]cpu", p_layer1_1_conv1_weight: "f32[64, 64, 3, 3][576, 9, 3, 1]cpu", p_layer1_1_bn1_weight: "f32[64][1]cpu", p_layer1_1_bn1_bias: "f32[64][1]cpu", p_layer1_1_conv2_weight: "f32[64, 64, 3, 3][576, 9, 3, 1]cpu", p_layer1_1_bn2_weight: "f32[64][1]cpu", p_layer1_1_bn2_bias: "f32[64][1]cpu", p_layer2_0_conv1_weight: "f32[128, 64, 3, 3][576, 9, 3, 1]cpu", p_layer2_0_bn1_weight: "f32[128][1]cpu", p_layer2_0_bn1_bias: "f32[128][1]cpu", p_layer2_0_conv2_weight: "f32[128, 128, 3, 3][1152, 9, 3, 1]cpu", p_layer2_0_bn2_weight: "f32[128][1]cpu", p_layer2_0_bn2_bias: "f32[128][1]cpu", p_layer2_0_downsample_0_weight: "f32[128, 64, 1, 1][64, 1, 1, 1]cpu", p_layer2_0_downsample_1_weight: "f32[128][1]cpu", p_layer2_0_downsample_1_bias: "f32[128][1]cpu", p_layer2_1_conv1_weight: "f32[128, 128, 3, 3][1152, 9, 3, 1]cpu", p_layer2_1_bn1_weight: "f32[128][1]cpu", p_layer2_1_bn1_bias: "f32[128][1]cpu", p_layer2_1_conv2_weight: "f32[128, 128, 3, 3][1152, 9, 3, 1]cpu", p_layer2_1_bn2_weight: "f32[128][1]cpu", p_layer2_1_bn2_bias: "f32[128][1]cpu", p_layer3_0_conv1_weight: "f32[256, 128, 3, 3][1152, 9, 3, 1]cpu", p_layer3_0_bn1_weight: "f32[256][1]cpu", p_layer3_0_bn1_bias: "f32[256][1]cpu", p_layer3_0_conv2_weight: "f32[256, 256, 3, 3][2304, 9, 3, 1]cpu", p_layer3_0_bn2_weight: "f32[256][1]cpu", p_layer3_0_bn2_bias: "f32[256][1]cpu", p_layer3_0_downsample_0_weight: "f32[256, 128, 1, 1][128, 1, 1, 1]cpu", p_layer3_0_downsample_1_weight: "f32[256][1]cpu", p_layer3_0_downsample_1_bias: "f32[256][1]cpu", p_layer3_1_conv1_weight: "f32[256, 256, 3, 3][2304, 9, 3, 1]cpu", p_layer3_1_bn1_weight: "f32[256][1]cpu", p_layer3_1_bn1_bias: "f32[256][1]cpu", p_layer3_1_conv2_weight: "f32[256, 256, 3, 3][2304, 9, 3, 1]cpu", p_layer3_1_bn2_weight: "f32[256][1]cpu", p_layer3_1_bn2_bias: "f32[256][1]cpu", p_layer4_0_conv1_weight: "f32[512, 256, 3, 3][2304, 9, 3, 1]cpu", p_layer4_0_bn1_weight: "f32[512][1]cpu", p_layer4_0_bn1_bias: "f32[512][1]cpu", p_layer4_0_conv2_weight: "f32[512, 512, 3, 3][4608, 9, 3, 1]cpu", p_layer4_0_bn2_weight: "f32[512][1]cpu", p_layer4_0_bn2_bias: "f32[512][1]cpu", p_layer4_0_downsample_0_weight: "f32[512, 256, 1, 1][256, 1, 1, 1]cpu", p_layer4_0_downsample_1_weight: "f32[512][1]cpu", p_layer4_0_downsample_1_bias: "f32[512][1]cpu", p_layer4_1_conv1_weight: "f32[512, 512, 3, 3][4608, 9, 3, 1]cpu", p_layer4_1_bn1_weight: "f32[512][1]cpu", p_layer4_1_bn1_bias: "f32[512][1]cpu", p_layer4_1_conv2_weight: "f32[512, 512, 3, 3][4608, 9, 3, 1]cpu", p_layer4_1_bn2_weight: "f32[512][1]cpu", p_layer4_1_bn2_bias: "f32[512][1]cpu", p_fc_weight: "f32[10, 512][512, 1]cpu", p_fc_bias: "f32[10][1]cpu", p_bn1_running_mean: "f32[64][1]cpu", p_bn1_running_var: "f32[64][1]cpu", p_bn1_num_batches_tracked: "i64[][]cpu", p_layer1_0_bn1_running_mean: "f32[64][1]cpu", p_layer1_0_bn1_running_var: "f32[64][1]cpu", p_layer1_0_bn1_num_batches_tracked: "i64[][]cpu", p_layer1_0_bn2_running_mean: "f32[64][1]cpu", p_layer1_0_bn2_running_var: "f32[64][1]cpu", p_layer1_0_bn2_num_batches_tracked: "i64[][]cpu", p_layer1_1_bn1_running_mean: "f32[64][1]cpu", p_layer1_1_bn1_running_var: "f32[64][1]cpu", p_layer1_1_bn1_num_batches_tracked: "i64[][]cpu", p_layer1_1_bn2_running_mean: "f32[64][1]cpu", p_layer1_1_bn2_running_var: "f32[64][1]cpu", p_layer1_1_bn2_num_batches_tracked: "i64[][]cpu", p_layer2_0_bn1_running_mean: "f32[128][1]cpu", p_layer2_0_bn1_running_var: "f32[128][1]cpu", p_layer2_0_bn1_num_batches_tracked: "i64[][]cpu", p_layer2_0_bn2_running_mean: "f32[128][1]cpu", p_layer2_0_bn2_running_var: "f32[128][1]cpu", p_layer2_0_bn2_num_batches_tracked: "i64[][]cpu", p_layer2_0_downsample_1_running_mean: "f32[128][1]cpu", p_layer2_0_downsample_1_running_var: "f32[128][1]cpu", p_layer2_0_downsample_1_num_batches_tracked: "i64[][]cpu", p_layer2_1_bn1_running_mean: "f32[128][1]cpu", p_layer2_1_bn1_running_var: "f32[128][1]cpu", p_layer2_1_bn1_num_batches_tracked: "i64[][]cpu", p_layer2_1_bn2_running_mean: "f32[128][1]cpu", p_layer2_1_bn2_running_var: "f32[128][1]cpu", p_layer2_1_bn2_num_batches_tracked: "i64[][]cpu", p_layer3_0_bn1_running_mean: "f32[256][1]cpu", p_layer3_0_bn1_running_var: "f32[256][1]cpu", p_layer3_0_bn1_num_batches_tracked: "i64[][]cpu", p_layer3_0_bn2_running_mean: "f32[256][1]cpu", p_layer3_0_bn2_running_var: "f32[256][1]cpu", p_layer3_0_bn2_num_batches_tracked: "i64[][]cpu", p_layer3_0_downsample_1_running_mean: "f32[256][1]cpu", p_layer3_0_downsample_1_running_var: "f32[256][1]cpu", p_layer3_0_downsample_1_num_batches_tracked: "i64[][]cpu", p_layer3_1_bn1_running_mean: "f32[256][1]cpu", p_layer3_1_bn1_running_var: "f32[256][1]cpu", p_layer3_1_bn1_num_batches_tracked: "i64[][]cpu", p_layer3_1_bn2_running_mean: "f32[256][1]cpu", p_layer3_1_bn2_running_var: "f32[256][1]cpu", p_layer3_1_bn2_num_batches_tracked: "i64[][]cpu", p_layer4_0_bn1_running_mean: "f32[512][1]cpu", p_layer4_0_bn1_running_var: "f32[512][1]cpu", p_layer4_0_bn1_num_batches_tracked: "i64[][]cpu", p_layer4_0_bn2_running_mean: "f32[512][1]cpu", p_layer4_0_bn2_running_var: "f32[512][1]cpu", p_layer4_0_bn2_num_batches_tracked: "i64[][]cpu", p_layer4_0_downsample_1_running_mean: "f32[512][1]cpu", p_layer4_0_downsample_1_running_var: "f32[512][1]cpu", p_layer4_0_downsample_1_num_batches_tracked: "i64[][]cpu", p_layer4_1_bn1_running_mean: "f32[512][1]cpu", p_layer4_1_bn1_running_var: "f32[512][1]cpu", p_layer4_1_bn1_num_batches_tracked: "i64[][]cpu", p_layer4_1_bn2_running_mean: "f32[512][1]cpu", p_layer4_1_bn2_running_var: "f32[512][1]cpu", p_layer4_1_bn2_num_batches_tracked: "i64[][]cpu", x: "f32[16, 3, 64, 64][12288, 4096, 64, 1]cpu", target: "i64[16][1]cpu"):
        convolution: "f32[16, 64, 32, 32][65536, 1024, 32, 1]cpu" = torch.ops.aten.convolution.default(x, p_conv1_weight, None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1);  x = p_conv1_weight = None
        add_: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_bn1_num_batches_tracked, 1);  p_bn1_num_batches_tracked = add_ = None
        native_batch_norm = torch.ops.aten.native_batch_norm.default(convolution, p_bn1_weight, p_bn1_bias, p_bn1_running_mean, p_bn1_running_var, True, 0.1, 1e-05);  convolution = p_bn1_weight = p_bn1_bias = p_bn1_running_mean = p_bn1_running_var = None
        getitem: "f32[16, 64, 32, 32][65536, 1024, 32, 1]cpu" = native_batch_norm[0]
        getitem_1: "f32[64][1]cpu" = native_batch_norm[1];  getitem_1 = None
        getitem_2: "f32[64][1]cpu" = native_batch_norm[2];  native_batch_norm = getitem_2 = None
        relu_: "f32[16, 64, 32, 32][65536, 1024, 32, 1]cpu" = torch.ops.aten.relu_.default(getitem);  getitem = None
        max_pool2d_with_indices = torch.ops.aten.max_pool2d_with_indices.default(relu_, [3, 3], [2, 2], [1, 1]);  relu_ = None
        getitem_3: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = max_pool2d_with_indices[0]
        getitem_4: "i64[16, 64, 16, 16][16384, 256, 16, 1]cpu" = max_pool2d_with_indices[1];  max_pool2d_with_indices = getitem_4 = None
        convolution_1: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.convolution.default(getitem_3, p_layer1_0_conv1_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_layer1_0_conv1_weight = None
        add__1: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer1_0_bn1_num_batches_tracked, 1);  p_layer1_0_bn1_num_batches_tracked = add__1 = None
        native_batch_norm_1 = torch.ops.aten.native_batch_norm.default(convolution_1, p_layer1_0_bn1_weight, p_layer1_0_bn1_bias, p_layer1_0_bn1_running_mean, p_layer1_0_bn1_running_var, True, 0.1, 1e-05);  convolution_1 = p_layer1_0_bn1_weight = p_layer1_0_bn1_bias = p_layer1_0_bn1_running_mean = p_layer1_0_bn1_running_var = None
        getitem_5: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = native_batch_norm_1[0]
        getitem_6: "f32[64][1]cpu" = native_batch_norm_1[1];  getitem_6 = None
        getitem_7: "f32[64][1]cpu" = native_batch_norm_1[2];  native_batch_norm_1 = getitem_7 = None
        relu__1: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.relu_.default(getitem_5);  getitem_5 = None
        convolution_2: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.convolution.default(relu__1, p_layer1_0_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__1 = p_layer1_0_conv2_weight = None
        add__2: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer1_0_bn2_num_batches_tracked, 1);  p_layer1_0_bn2_num_batches_tracked = add__2 = None
        native_batch_norm_2 = torch.ops.aten.native_batch_norm.default(convolution_2, p_layer1_0_bn2_weight, p_layer1_0_bn2_bias, p_layer1_0_bn2_running_mean, p_layer1_0_bn2_running_var, True, 0.1, 1e-05);  convolution_2 = p_layer1_0_bn2_weight = p_layer1_0_bn2_bias = p_layer1_0_bn2_running_mean = p_layer1_0_bn2_running_var = None
        getitem_8: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = native_batch_norm_2[0]
        getitem_9: "f32[64][1]cpu" = native_batch_norm_2[1];  getitem_9 = None
        getitem_10: "f32[64][1]cpu" = native_batch_norm_2[2];  native_batch_norm_2 = getitem_10 = None
        add__3: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_8, getitem_3);  getitem_8 = getitem_3 = None
        relu__2: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.relu_.default(add__3);  add__3 = None
        convolution_3: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.convolution.default(relu__2, p_layer1_1_conv1_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_layer1_1_conv1_weight = None
        add__4: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer1_1_bn1_num_batches_tracked, 1);  p_layer1_1_bn1_num_batches_tracked = add__4 = None
        native_batch_norm_3 = torch.ops.aten.native_batch_norm.default(convolution_3, p_layer1_1_bn1_weight, p_layer1_1_bn1_bias, p_layer1_1_bn1_running_mean, p_layer1_1_bn1_running_var, True, 0.1, 1e-05);  convolution_3 = p_layer1_1_bn1_weight = p_layer1_1_bn1_bias = p_layer1_1_bn1_running_mean = p_layer1_1_bn1_running_var = None
        getitem_11: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = native_batch_norm_3[0]
        getitem_12: "f32[64][1]cpu" = native_batch_norm_3[1];  getitem_12 = None
        getitem_13: "f32[64][1]cpu" = native_batch_norm_3[2];  native_batch_norm_3 = getitem_13 = None
        relu__3: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.relu_.default(getitem_11);  getitem_11 = None
        convolution_4: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.convolution.default(relu__3, p_layer1_1_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__3 = p_layer1_1_conv2_weight = None
        add__5: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer1_1_bn2_num_batches_tracked, 1);  p_layer1_1_bn2_num_batches_tracked = add__5 = None
        native_batch_norm_4 = torch.ops.aten.native_batch_norm.default(convolution_4, p_layer1_1_bn2_weight, p_layer1_1_bn2_bias, p_layer1_1_bn2_running_mean, p_layer1_1_bn2_running_var, True, 0.1, 1e-05);  convolution_4 = p_layer1_1_bn2_weight = p_layer1_1_bn2_bias = p_layer1_1_bn2_running_mean = p_layer1_1_bn2_running_var = None
        getitem_14: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = native_batch_norm_4[0]
        getitem_15: "f32[64][1]cpu" = native_batch_norm_4[1];  getitem_15 = None
        getitem_16: "f32[64][1]cpu" = native_batch_norm_4[2];  native_batch_norm_4 = getitem_16 = None
        add__6: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_14, relu__2);  getitem_14 = relu__2 = None
        relu__4: "f32[16, 64, 16, 16][16384, 256, 16, 1]cpu" = torch.ops.aten.relu_.default(add__6);  add__6 = None
        convolution_5: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(relu__4, p_layer2_0_conv1_weight, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1);  p_layer2_0_conv1_weight = None
        add__7: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer2_0_bn1_num_batches_tracked, 1);  p_layer2_0_bn1_num_batches_tracked = add__7 = None
        native_batch_norm_5 = torch.ops.aten.native_batch_norm.default(convolution_5, p_layer2_0_bn1_weight, p_layer2_0_bn1_bias, p_layer2_0_bn1_running_mean, p_layer2_0_bn1_running_var, True, 0.1, 1e-05);  convolution_5 = p_layer2_0_bn1_weight = p_layer2_0_bn1_bias = p_layer2_0_bn1_running_mean = p_layer2_0_bn1_running_var = None
        getitem_17: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = native_batch_norm_5[0]
        getitem_18: "f32[128][1]cpu" = native_batch_norm_5[1];  getitem_18 = None
        getitem_19: "f32[128][1]cpu" = native_batch_norm_5[2];  native_batch_norm_5 = getitem_19 = None
        relu__5: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.relu_.default(getitem_17);  getitem_17 = None
        convolution_6: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(relu__5, p_layer2_0_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__5 = p_layer2_0_conv2_weight = None
        add__8: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer2_0_bn2_num_batches_tracked, 1);  p_layer2_0_bn2_num_batches_tracked = add__8 = None
        native_batch_norm_6 = torch.ops.aten.native_batch_norm.default(convolution_6, p_layer2_0_bn2_weight, p_layer2_0_bn2_bias, p_layer2_0_bn2_running_mean, p_layer2_0_bn2_running_var, True, 0.1, 1e-05);  convolution_6 = p_layer2_0_bn2_weight = p_layer2_0_bn2_bias = p_layer2_0_bn2_running_mean = p_layer2_0_bn2_running_var = None
        getitem_20: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = native_batch_norm_6[0]
        getitem_21: "f32[128][1]cpu" = native_batch_norm_6[1];  getitem_21 = None
        getitem_22: "f32[128][1]cpu" = native_batch_norm_6[2];  native_batch_norm_6 = getitem_22 = None
        convolution_7: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(relu__4, p_layer2_0_downsample_0_weight, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1);  relu__4 = p_layer2_0_downsample_0_weight = None
        add__9: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer2_0_downsample_1_num_batches_tracked, 1);  p_layer2_0_downsample_1_num_batches_tracked = add__9 = None
        native_batch_norm_7 = torch.ops.aten.native_batch_norm.default(convolution_7, p_layer2_0_downsample_1_weight, p_layer2_0_downsample_1_bias, p_layer2_0_downsample_1_running_mean, p_layer2_0_downsample_1_running_var, True, 0.1, 1e-05);  convolution_7 = p_layer2_0_downsample_1_weight = p_layer2_0_downsample_1_bias = p_layer2_0_downsample_1_running_mean = p_layer2_0_downsample_1_running_var = None
        getitem_23: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = native_batch_norm_7[0]
        getitem_24: "f32[128][1]cpu" = native_batch_norm_7[1];  getitem_24 = None
        getitem_25: "f32[128][1]cpu" = native_batch_norm_7[2];  native_batch_norm_7 = getitem_25 = None
        add__10: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_20, getitem_23);  getitem_20 = getitem_23 = None
        relu__6: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.relu_.default(add__10);  add__10 = None
        convolution_8: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(relu__6, p_layer2_1_conv1_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_layer2_1_conv1_weight = None
        add__11: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer2_1_bn1_num_batches_tracked, 1);  p_layer2_1_bn1_num_batches_tracked = add__11 = None
        native_batch_norm_8 = torch.ops.aten.native_batch_norm.default(convolution_8, p_layer2_1_bn1_weight, p_layer2_1_bn1_bias, p_layer2_1_bn1_running_mean, p_layer2_1_bn1_running_var, True, 0.1, 1e-05);  convolution_8 = p_layer2_1_bn1_weight = p_layer2_1_bn1_bias = p_layer2_1_bn1_running_mean = p_layer2_1_bn1_running_var = None
        getitem_26: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = native_batch_norm_8[0]
        getitem_27: "f32[128][1]cpu" = native_batch_norm_8[1];  getitem_27 = None
        getitem_28: "f32[128][1]cpu" = native_batch_norm_8[2];  native_batch_norm_8 = getitem_28 = None
        relu__7: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.relu_.default(getitem_26);  getitem_26 = None
        convolution_9: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(relu__7, p_layer2_1_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__7 = p_layer2_1_conv2_weight = None
        add__12: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer2_1_bn2_num_batches_tracked, 1);  p_layer2_1_bn2_num_batches_tracked = add__12 = None
        native_batch_norm_9 = torch.ops.aten.native_batch_norm.default(convolution_9, p_layer2_1_bn2_weight, p_layer2_1_bn2_bias, p_layer2_1_bn2_running_mean, p_layer2_1_bn2_running_var, True, 0.1, 1e-05);  convolution_9 = p_layer2_1_bn2_weight = p_layer2_1_bn2_bias = p_layer2_1_bn2_running_mean = p_layer2_1_bn2_running_var = None
        getitem_29: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = native_batch_norm_9[0]
        getitem_30: "f32[128][1]cpu" = native_batch_norm_9[1];  getitem_30 = None
        getitem_31: "f32[128][1]cpu" = native_batch_norm_9[2];  native_batch_norm_9 = getitem_31 = None
        add__13: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_29, relu__6);  getitem_29 = relu__6 = None
        relu__8: "f32[16, 128, 8, 8][8192, 64, 8, 1]cpu" = torch.ops.aten.relu_.default(add__13);  add__13 = None
        convolution_10: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.convolution.default(relu__8, p_layer3_0_conv1_weight, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1);  p_layer3_0_conv1_weight = None
        add__14: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer3_0_bn1_num_batches_tracked, 1);  p_layer3_0_bn1_num_batches_tracked = add__14 = None
        native_batch_norm_10 = torch.ops.aten.native_batch_norm.default(convolution_10, p_layer3_0_bn1_weight, p_layer3_0_bn1_bias, p_layer3_0_bn1_running_mean, p_layer3_0_bn1_running_var, True, 0.1, 1e-05);  convolution_10 = p_layer3_0_bn1_weight = p_layer3_0_bn1_bias = p_layer3_0_bn1_running_mean = p_layer3_0_bn1_running_var = None
        getitem_32: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = native_batch_norm_10[0]
        getitem_33: "f32[256][1]cpu" = native_batch_norm_10[1];  getitem_33 = None
        getitem_34: "f32[256][1]cpu" = native_batch_norm_10[2];  native_batch_norm_10 = getitem_34 = None
        relu__9: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.relu_.default(getitem_32);  getitem_32 = None
        convolution_11: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.convolution.default(relu__9, p_layer3_0_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__9 = p_layer3_0_conv2_weight = None
        add__15: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer3_0_bn2_num_batches_tracked, 1);  p_layer3_0_bn2_num_batches_tracked = add__15 = None
        native_batch_norm_11 = torch.ops.aten.native_batch_norm.default(convolution_11, p_layer3_0_bn2_weight, p_layer3_0_bn2_bias, p_layer3_0_bn2_running_mean, p_layer3_0_bn2_running_var, True, 0.1, 1e-05);  convolution_11 = p_layer3_0_bn2_weight = p_layer3_0_bn2_bias = p_layer3_0_bn2_running_mean = p_layer3_0_bn2_running_var = None
        getitem_35: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = native_batch_norm_11[0]
        getitem_36: "f32[256][1]cpu" = native_batch_norm_11[1];  getitem_36 = None
        getitem_37: "f32[256][1]cpu" = native_batch_norm_11[2];  native_batch_norm_11 = getitem_37 = None
        convolution_12: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.convolution.default(relu__8, p_layer3_0_downsample_0_weight, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1);  relu__8 = p_layer3_0_downsample_0_weight = None
        add__16: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer3_0_downsample_1_num_batches_tracked, 1);  p_layer3_0_downsample_1_num_batches_tracked = add__16 = None
        native_batch_norm_12 = torch.ops.aten.native_batch_norm.default(convolution_12, p_layer3_0_downsample_1_weight, p_layer3_0_downsample_1_bias, p_layer3_0_downsample_1_running_mean, p_layer3_0_downsample_1_running_var, True, 0.1, 1e-05);  convolution_12 = p_layer3_0_downsample_1_weight = p_layer3_0_downsample_1_bias = p_layer3_0_downsample_1_running_mean = p_layer3_0_downsample_1_running_var = None
        getitem_38: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = native_batch_norm_12[0]
        getitem_39: "f32[256][1]cpu" = native_batch_norm_12[1];  getitem_39 = None
        getitem_40: "f32[256][1]cpu" = native_batch_norm_12[2];  native_batch_norm_12 = getitem_40 = None
        add__17: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_35, getitem_38);  getitem_35 = getitem_38 = None
        relu__10: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.relu_.default(add__17);  add__17 = None
        convolution_13: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.convolution.default(relu__10, p_layer3_1_conv1_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_layer3_1_conv1_weight = None
        add__18: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer3_1_bn1_num_batches_tracked, 1);  p_layer3_1_bn1_num_batches_tracked = add__18 = None
        native_batch_norm_13 = torch.ops.aten.native_batch_norm.default(convolution_13, p_layer3_1_bn1_weight, p_layer3_1_bn1_bias, p_layer3_1_bn1_running_mean, p_layer3_1_bn1_running_var, True, 0.1, 1e-05);  convolution_13 = p_layer3_1_bn1_weight = p_layer3_1_bn1_bias = p_layer3_1_bn1_running_mean = p_layer3_1_bn1_running_var = None
        getitem_41: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = native_batch_norm_13[0]
        getitem_42: "f32[256][1]cpu" = native_batch_norm_13[1];  getitem_42 = None
        getitem_43: "f32[256][1]cpu" = native_batch_norm_13[2];  native_batch_norm_13 = getitem_43 = None
        relu__11: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.relu_.default(getitem_41);  getitem_41 = None
        convolution_14: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.convolution.default(relu__11, p_layer3_1_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__11 = p_layer3_1_conv2_weight = None
        add__19: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer3_1_bn2_num_batches_tracked, 1);  p_layer3_1_bn2_num_batches_tracked = add__19 = None
        native_batch_norm_14 = torch.ops.aten.native_batch_norm.default(convolution_14, p_layer3_1_bn2_weight, p_layer3_1_bn2_bias, p_layer3_1_bn2_running_mean, p_layer3_1_bn2_running_var, True, 0.1, 1e-05);  convolution_14 = p_layer3_1_bn2_weight = p_layer3_1_bn2_bias = p_layer3_1_bn2_running_mean = p_layer3_1_bn2_running_var = None
        getitem_44: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = native_batch_norm_14[0]
        getitem_45: "f32[256][1]cpu" = native_batch_norm_14[1];  getitem_45 = None
        getitem_46: "f32[256][1]cpu" = native_batch_norm_14[2];  native_batch_norm_14 = getitem_46 = None
        add__20: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_44, relu__10);  getitem_44 = relu__10 = None
        relu__12: "f32[16, 256, 4, 4][4096, 16, 4, 1]cpu" = torch.ops.aten.relu_.default(add__20);  add__20 = None
        convolution_15: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(relu__12, p_layer4_0_conv1_weight, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1);  p_layer4_0_conv1_weight = None
        add__21: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer4_0_bn1_num_batches_tracked, 1);  p_layer4_0_bn1_num_batches_tracked = add__21 = None
        native_batch_norm_15 = torch.ops.aten.native_batch_norm.default(convolution_15, p_layer4_0_bn1_weight, p_layer4_0_bn1_bias, p_layer4_0_bn1_running_mean, p_layer4_0_bn1_running_var, True, 0.1, 1e-05);  convolution_15 = p_layer4_0_bn1_weight = p_layer4_0_bn1_bias = p_layer4_0_bn1_running_mean = p_layer4_0_bn1_running_var = None
        getitem_47: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = native_batch_norm_15[0]
        getitem_48: "f32[512][1]cpu" = native_batch_norm_15[1];  getitem_48 = None
        getitem_49: "f32[512][1]cpu" = native_batch_norm_15[2];  native_batch_norm_15 = getitem_49 = None
        relu__13: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.relu_.default(getitem_47);  getitem_47 = None
        convolution_16: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(relu__13, p_layer4_0_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__13 = p_layer4_0_conv2_weight = None
        add__22: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer4_0_bn2_num_batches_tracked, 1);  p_layer4_0_bn2_num_batches_tracked = add__22 = None
        native_batch_norm_16 = torch.ops.aten.native_batch_norm.default(convolution_16, p_layer4_0_bn2_weight, p_layer4_0_bn2_bias, p_layer4_0_bn2_running_mean, p_layer4_0_bn2_running_var, True, 0.1, 1e-05);  convolution_16 = p_layer4_0_bn2_weight = p_layer4_0_bn2_bias = p_layer4_0_bn2_running_mean = p_layer4_0_bn2_running_var = None
        getitem_50: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = native_batch_norm_16[0]
        getitem_51: "f32[512][1]cpu" = native_batch_norm_16[1];  getitem_51 = None
        getitem_52: "f32[512][1]cpu" = native_batch_norm_16[2];  native_batch_norm_16 = getitem_52 = None
        convolution_17: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(relu__12, p_layer4_0_downsample_0_weight, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1);  relu__12 = p_layer4_0_downsample_0_weight = None
        add__23: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer4_0_downsample_1_num_batches_tracked, 1);  p_layer4_0_downsample_1_num_batches_tracked = add__23 = None
        native_batch_norm_17 = torch.ops.aten.native_batch_norm.default(convolution_17, p_layer4_0_downsample_1_weight, p_layer4_0_downsample_1_bias, p_layer4_0_downsample_1_running_mean, p_layer4_0_downsample_1_running_var, True, 0.1, 1e-05);  convolution_17 = p_layer4_0_downsample_1_weight = p_layer4_0_downsample_1_bias = p_layer4_0_downsample_1_running_mean = p_layer4_0_downsample_1_running_var = None
        getitem_53: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = native_batch_norm_17[0]
        getitem_54: "f32[512][1]cpu" = native_batch_norm_17[1];  getitem_54 = None
        getitem_55: "f32[512][1]cpu" = native_batch_norm_17[2];  native_batch_norm_17 = getitem_55 = None
        add__24: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_50, getitem_53);  getitem_50 = getitem_53 = None
        relu__14: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.relu_.default(add__24);  add__24 = None
        convolution_18: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(relu__14, p_layer4_1_conv1_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  p_layer4_1_conv1_weight = None
        add__25: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer4_1_bn1_num_batches_tracked, 1);  p_layer4_1_bn1_num_batches_tracked = add__25 = None
        native_batch_norm_18 = torch.ops.aten.native_batch_norm.default(convolution_18, p_layer4_1_bn1_weight, p_layer4_1_bn1_bias, p_layer4_1_bn1_running_mean, p_layer4_1_bn1_running_var, True, 0.1, 1e-05);  convolution_18 = p_layer4_1_bn1_weight = p_layer4_1_bn1_bias = p_layer4_1_bn1_running_mean = p_layer4_1_bn1_running_var = None
        getitem_56: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = native_batch_norm_18[0]
        getitem_57: "f32[512][1]cpu" = native_batch_norm_18[1];  getitem_57 = None
        getitem_58: "f32[512][1]cpu" = native_batch_norm_18[2];  native_batch_norm_18 = getitem_58 = None
        relu__15: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.relu_.default(getitem_56);  getitem_56 = None
        convolution_19: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.convolution.default(relu__15, p_layer4_1_conv2_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  relu__15 = p_layer4_1_conv2_weight = None
        add__26: "i64[][]cpu" = torch.ops.aten.add_.Tensor(p_layer4_1_bn2_num_batches_tracked, 1);  p_layer4_1_bn2_num_batches_tracked = add__26 = None
        native_batch_norm_19 = torch.ops.aten.native_batch_norm.default(convolution_19, p_layer4_1_bn2_weight, p_layer4_1_bn2_bias, p_layer4_1_bn2_running_mean, p_layer4_1_bn2_running_var, True, 0.1, 1e-05);  convolution_19 = p_layer4_1_bn2_weight = p_layer4_1_bn2_bias = p_layer4_1_bn2_running_mean = p_layer4_1_bn2_running_var = None
        getitem_59: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = native_batch_norm_19[0]
        getitem_60: "f32[512][1]cpu" = native_batch_norm_19[1];  getitem_60 = None
        getitem_61: "f32[512][1]cpu" = native_batch_norm_19[2];  native_batch_norm_19 = getitem_61 = None
        add__27: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.add_.Tensor(getitem_59, relu__14);  getitem_59 = relu__14 = None
        relu__16: "f32[16, 512, 2, 2][2048, 4, 2, 1]cpu" = torch.ops.aten.relu_.default(add__27);  add__27 = None
        mean: "f32[16, 512, 1, 1][512, 1, 1, 1]cpu" = torch.ops.aten.mean.dim(relu__16, [-1, -2], True);  relu__16 = None
        _reshape_alias: "f32[16, 512][512, 1]cpu" = torch.ops.aten._reshape_alias.default(mean, [16, 512], [512, 1]);  mean = None
        t: "f32[512, 10][1, 512]cpu" = torch.ops.aten.t.default(p_fc_weight);  p_fc_weight = None
        addmm: "f32[16, 10][10, 1]cpu" = torch.ops.aten.addmm.default(p_fc_bias, _reshape_alias, t);  p_fc_bias = _reshape_alias = t = None
        _log_softmax: "f32[16, 10][10, 1]cpu" = torch.ops.aten._log_softmax.default(addmm, 1, False);  addmm = None
        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(_log_softmax, target, None, 1, -100);  _log_softmax = target = None
        getitem_62: "f32[][]cpu" = nll_loss_forward[0]
        getitem_63: "f32[][]cpu" = nll_loss_forward[1];  nll_loss_forward = getitem_63 = None
        return (getitem_62,)
