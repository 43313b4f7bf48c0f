# hints: s0=2, s1=8
class GraphModule(torch.nn.Module):
    def forward(self, p_tok_emb_weight: "f32[64, 32][32, 1]cpu", p_pos_emb_weight: "f32[64, 32][32, 1]cpu", p_ln1_weight: "f32[32][1]cpu", p_ln1_bias: "f32[32][1]cpu", p_attn_qkv_weight: "f32[96, 32][32, 1]cpu", p_attn_qkv_bias: "f32[96][1]cpu", p_attn_proj_weight: "f32[32, 32][32, 1]cpu", p_attn_proj_bias: "f32[32][1]cpu", p_ln2_weight: "f32[32][1]cpu", p_ln2_bias: "f32[32][1]cpu", p_fc_weight: "f32[128, 32][32, 1]cpu", p_fc_bias: "f32[128][1]cpu", p_fc_proj_weight: "f32[32, 128][128, 1]cpu", p_fc_proj_bias: "f32[32][1]cpu", p_ln_f_weight: "f32[32][1]cpu", p_ln_f_bias: "f32[32][1]cpu", p_head_weight: "f32[64, 32][32, 1]cpu", p_head_bias: "f32[64][1]cpu", p_attn_causal_mask: "b8[64, 64][64, 1]cpu", idx: "i64[s0, s1][s1, 1]cpu", targets: "i64[s0, s1][s1, 1]cpu"):
        sym_size_int: "Sym(s1)" = torch.ops.aten.sym_size.int(idx, 1)
        arange: "i64[s1][1]cpu" = torch.ops.aten.arange.start(0, sym_size_int, dtype = torch.int64, device = device(type='cpu'), pin_memory = False)
        embedding: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.embedding.default(p_tok_emb_weight, idx);  p_tok_emb_weight = None
        embedding_1: "f32[s1, 32][32, 1]cpu" = torch.ops.aten.embedding.default(p_pos_emb_weight, arange);  p_pos_emb_weight = arange = None
        add: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.add.Tensor(embedding, embedding_1);  embedding = embedding_1 = None
        native_layer_norm = torch.ops.aten.native_layer_norm.default(add, [32], p_ln1_weight, p_ln1_bias, 1e-05);  p_ln1_weight = p_ln1_bias = None
        getitem: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = native_layer_norm[0]
        getitem_1: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm[1];  getitem_1 = None
        getitem_2: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm[2];  native_layer_norm = getitem_2 = None
        sym_size_int_1: "Sym(s0)" = torch.ops.aten.sym_size.int(idx, 0);  idx = None
        mul_1: "Sym(s0*s1)" = sym_size_int_1 * sym_size_int
        view: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.view.default(getitem, [mul_1, 32]);  getitem = None
        t: "f32[32, 96][1, 32]cpu" = torch.ops.aten.t.default(p_attn_qkv_weight);  p_attn_qkv_weight = None
        addmm: "f32[s0*s1, 96][96, 1]cpu" = torch.ops.aten.addmm.default(p_attn_qkv_bias, view, t);  p_attn_qkv_bias = view = t = None
        view_1: "f32[s0, s1, 96][96*s1, 96, 1]cpu" = torch.ops.aten.view.default(addmm, [sym_size_int_1, sym_size_int, 96]);  addmm = None
        split = torch.ops.aten.split.Tensor(view_1, 32, 2);  view_1 = None
        getitem_3: "f32[s0, s1, 32][96*s1, 96, 1]cpu" = split[0]
        getitem_4: "f32[s0, s1, 32][96*s1, 96, 1]cpu" = split[1]
        getitem_5: "f32[s0, s1, 32][96*s1, 96, 1]cpu" = split[2];  split = None
        view_2: "f32[s0, s1, 2, 16][96*s1, 96, 16, 1]cpu" = torch.ops.aten.view.default(getitem_3, [sym_size_int_1, sym_size_int, 2, 16]);  getitem_3 = None
        transpose: "f32[s0, 2, s1, 16][96*s1, 16, 96, 1]cpu" = torch.ops.aten.transpose.int(view_2, 1, 2);  view_2 = None
        clone: "f32[s0, 2, s1, 16][32*s1, 16*s1, 16, 1]cpu" = torch.ops.aten.clone.default(transpose, memory_format = torch.contiguous_format);  transpose = None
        mul_2: "Sym(2*s0)" = sym_size_int_1 * 2
        _unsafe_view: "f32[2*s0, s1, 16][16*s1, 16, 1]cpu" = torch.ops.aten._unsafe_view.default(clone, [mul_2, sym_size_int, 16]);  clone = None
        view_3: "f32[s0, s1, 2, 16][96*s1, 96, 16, 1]cpu" = torch.ops.aten.view.default(getitem_4, [sym_size_int_1, sym_size_int, 2, 16]);  getitem_4 = None
        transpose_1: "f32[s0, 2, s1, 16][96*s1, 16, 96, 1]cpu" = torch.ops.aten.transpose.int(view_3, 1, 2);  view_3 = None
        clone_1: "f32[s0, 2, s1, 16][32*s1, 16*s1, 16, 1]cpu" = torch.ops.aten.clone.default(transpose_1, memory_format = torch.contiguous_format);  transpose_1 = None
        _unsafe_view_1: "f32[2*s0, s1, 16][16*s1, 16, 1]cpu" = torch.ops.aten._unsafe_view.default(clone_1, [mul_2, sym_size_int, 16]);  clone_1 = None
        view_4: "f32[s0, s1, 2, 16][96*s1, 96, 16, 1]cpu" = torch.ops.aten.view.default(getitem_5, [sym_size_int_1, sym_size_int, 2, 16]);  getitem_5 = None
        transpose_2: "f32[s0, 2, s1, 16][96*s1, 16, 96, 1]cpu" = torch.ops.aten.transpose.int(view_4, 1, 2);  view_4 = None
        clone_2: "f32[s0, 2, s1, 16][32*s1, 16*s1, 16, 1]cpu" = torch.ops.aten.clone.default(transpose_2, memory_format = torch.contiguous_format);  transpose_2 = None
        _unsafe_view_2: "f32[2*s0, s1, 16][16*s1, 16, 1]cpu" = torch.ops.aten._unsafe_view.default(clone_2, [mul_2, sym_size_int, 16]);  clone_2 = mul_2 = None
        transpose_3: "f32[2*s0, 16, s1][16*s1, 1, 16]cpu" = torch.ops.aten.transpose.int(_unsafe_view_1, 1, 2);  _unsafe_view_1 = None
        bmm: "f32[2*s0, s1, s1][s1**2, s1, 1]cpu" = torch.ops.aten.bmm.default(_unsafe_view, transpose_3);  _unsafe_view = transpose_3 = None
        mul: "f32[2*s0, s1, s1][s1**2, s1, 1]cpu" = torch.ops.aten.mul.Tensor(bmm, 0.25);  bmm = None
        slice_1: "b8[s1, 64][64, 1]cpu" = torch.ops.aten.slice.Tensor(p_attn_causal_mask, 0, 0, sym_size_int);  p_attn_causal_mask = None
        slice_2: "b8[s1, s1][64, 1]cpu" = torch.ops.aten.slice.Tensor(slice_1, 1, 0, sym_size_int);  slice_1 = None
        bitwise_not: "b8[s1, s1][s1, 1]cpu" = torch.ops.aten.bitwise_not.default(slice_2);  slice_2 = None
        masked_fill: "f32[2*s0, s1, s1][s1**2, s1, 1]cpu" = torch.ops.aten.masked_fill.Scalar(mul, bitwise_not, -inf);  mul = bitwise_not = None
        _softmax: "f32[2*s0, s1, s1][s1**2, s1, 1]cpu" = torch.ops.aten._softmax.default(masked_fill, -1, False);  masked_fill = None
        bmm_1: "f32[2*s0, s1, 16][16*s1, 16, 1]cpu" = torch.ops.aten.bmm.default(_softmax, _unsafe_view_2);  _softmax = _unsafe_view_2 = None
        view_5: "f32[s0, 2, s1, 16][32*s1, 16*s1, 16, 1]cpu" = torch.ops.aten.view.default(bmm_1, [sym_size_int_1, 2, sym_size_int, 16]);  bmm_1 = None
        transpose_4: "f32[s0, s1, 2, 16][32*s1, 16, 16*s1, 1]cpu" = torch.ops.aten.transpose.int(view_5, 1, 2);  view_5 = None
        clone_3: "f32[s0, s1, 2, 16][32*s1, 32, 16, 1]cpu" = torch.ops.aten.clone.default(transpose_4, memory_format = torch.contiguous_format);  transpose_4 = None
        _unsafe_view_3: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten._unsafe_view.default(clone_3, [sym_size_int_1, sym_size_int, 32]);  clone_3 = None
        view_6: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.view.default(_unsafe_view_3, [mul_1, 32]);  _unsafe_view_3 = None
        t_1: "f32[32, 32][1, 32]cpu" = torch.ops.aten.t.default(p_attn_proj_weight);  p_attn_proj_weight = None
        addmm_1: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.addmm.default(p_attn_proj_bias, view_6, t_1);  p_attn_proj_bias = view_6 = t_1 = None
        view_7: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.view.default(addmm_1, [sym_size_int_1, sym_size_int, 32]);  addmm_1 = None
        add_1: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.add.Tensor(add, view_7);  add = view_7 = None
        native_layer_norm_1 = torch.ops.aten.native_layer_norm.default(add_1, [32], p_ln2_weight, p_ln2_bias, 1e-05);  p_ln2_weight = p_ln2_bias = None
        getitem_6: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = native_layer_norm_1[0]
        getitem_7: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm_1[1];  getitem_7 = None
        getitem_8: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm_1[2];  native_layer_norm_1 = getitem_8 = None
        view_8: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.view.default(getitem_6, [mul_1, 32]);  getitem_6 = None
        t_2: "f32[32, 128][1, 32]cpu" = torch.ops.aten.t.default(p_fc_weight);  p_fc_weight = None
        addmm_2: "f32[s0*s1, 128][128, 1]cpu" = torch.ops.aten.addmm.default(p_fc_bias, view_8, t_2);  p_fc_bias = view_8 = t_2 = None
        view_9: "f32[s0, s1, 128][128*s1, 128, 1]cpu" = torch.ops.aten.view.default(addmm_2, [sym_size_int_1, sym_size_int, 128]);  addmm_2 = None
        gelu: "f32[s0, s1, 128][128*s1, 128, 1]cpu" = torch.ops.aten.gelu.default(view_9);  view_9 = None
        view_10: "f32[s0*s1, 128][128, 1]cpu" = torch.ops.aten.view.default(gelu, [mul_1, 128]);  gelu = None
        t_3: "f32[128, 32][1, 128]cpu" = torch.ops.aten.t.default(p_fc_proj_weight);  p_fc_proj_weight = None
        addmm_3: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.addmm.default(p_fc_proj_bias, view_10, t_3);  p_fc_proj_bias = view_10 = t_3 = None
        view_11: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.view.default(addmm_3, [sym_size_int_1, sym_size_int, 32]);  addmm_3 = None
        add_2: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = torch.ops.aten.add.Tensor(add_1, view_11);  add_1 = view_11 = None
        native_layer_norm_2 = torch.ops.aten.native_layer_norm.default(add_2, [32], p_ln_f_weight, p_ln_f_bias, 1e-05);  add_2 = p_ln_f_weight = p_ln_f_bias = None
        getitem_9: "f32[s0, s1, 32][32*s1, 32, 1]cpu" = native_layer_norm_2[0]
        getitem_10: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm_2[1];  getitem_10 = None
        getitem_11: "f32[s0, s1, 1][s1, 1, 1]cpu" = native_layer_norm_2[2];  native_layer_norm_2 = getitem_11 = None
        view_12: "f32[s0*s1, 32][32, 1]cpu" = torch.ops.aten.view.default(getitem_9, [mul_1, 32]);  getitem_9 = None
        t_4: "f32[32, 64][1, 32]cpu" = torch.ops.aten.t.default(p_head_weight);  p_head_weight = None
        addmm_4: "f32[s0*s1, 64][64, 1]cpu" = torch.ops.aten.addmm.default(p_head_bias, view_12, t_4);  p_head_bias = view_12 = t_4 = None
        view_13: "f32[s0, s1, 64][64*s1, 64, 1]cpu" = torch.ops.aten.view.default(addmm_4, [sym_size_int_1, sym_size_int, 64]);  addmm_4 = sym_size_int_1 = sym_size_int = None
        view_14: "f32[s0*s1, 64][64, 1]cpu" = torch.ops.aten.view.default(view_13, [mul_1, -1]);  view_13 = None
        view_15: "i64[s0*s1][1]cpu" = torch.ops.aten.view.default(targets, [mul_1]);  targets = mul_1 = None
        _log_softmax: "f32[s0*s1, 64][64, 1]cpu" = torch.ops.aten._log_softmax.default(view_14, 1, False);  view_14 = None
        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(_log_softmax, view_15, None, 1, -100);  _log_softmax = view_15 = None
        getitem_12: "f32[][]cpu" = nll_loss_forward[0]
        getitem_13: "f32[][]cpu" = nll_loss_forward[1];  nll_loss_forward = getitem_13 = None
        return (getitem_12,)
