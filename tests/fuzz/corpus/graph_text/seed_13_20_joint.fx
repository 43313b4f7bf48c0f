# Section 13.20 of the seed chapter: the joint graph of F.linear(x, w, b).relu() with x [4, 8]
# (no grad), w [16, 8] and b [16]; x's gradient is None.
class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[4, 8][8, 1]cpu"; primals_2: "f32[16, 8][8, 1]cpu"; primals_3: "f32[16][1]cpu"; tangents_1: "f32[4, 16][16, 1]cpu"; 
    
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        t: "f32[8, 16][1, 8]cpu" = torch.ops.aten.t.default(primals_2);  primals_2 = None
        addmm: "f32[4, 16][16, 1]cpu" = torch.ops.aten.addmm.default(primals_3, primals_1, t);  primals_3 = t = None
        relu: "f32[4, 16][16, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        detach: "f32[4, 16][16, 1]cpu" = torch.ops.aten.detach.default(relu)
        detach_1: "f32[4, 16][16, 1]cpu" = torch.ops.aten.detach.default(detach);  detach = None
        threshold_backward: "f32[4, 16][16, 1]cpu" = torch.ops.aten.threshold_backward.default(tangents_1, detach_1, 0);  tangents_1 = detach_1 = None
        t_1: "f32[16, 4][1, 16]cpu" = torch.ops.aten.t.default(threshold_backward)
        mm: "f32[16, 8][8, 1]cpu" = torch.ops.aten.mm.default(t_1, primals_1);  t_1 = primals_1 = None
        t_2: "f32[8, 16][1, 8]cpu" = torch.ops.aten.t.default(mm);  mm = None
        sum_1: "f32[1, 16][16, 1]cpu" = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True);  threshold_backward = None
        view: "f32[16][1]cpu" = torch.ops.aten.view.default(sum_1, [16]);  sum_1 = None
        t_3: "f32[16, 8][8, 1]cpu" = torch.ops.aten.t.default(t_2);  t_2 = None
        return pytree.tree_unflatten([relu, None, t_3, view], self._out_spec)
