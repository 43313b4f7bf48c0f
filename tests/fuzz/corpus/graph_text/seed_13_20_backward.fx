# Section 13.20 of the seed chapter: the backward graph after partitioning.
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 8][8, 1]cpu", detach_1: "f32[4, 16][16, 1]cpu", tangents_1: "f32[4, 16][16, 1]cpu"):
        threshold_backward: "f32[4, 16][16, 1]cpu" = torch.ops.aten.threshold_backward.default(tangents_1, detach_1, 0);  tangents_1 = detach_1 = None
        t_1: "f32[16, 4][1, 16]cpu" = torch.ops.aten.t.default(threshold_backward)
        mm: "f32[16, 8][8, 1]cpu" = torch.ops.aten.mm.default(t_1, primals_1);  t_1 = primals_1 = None
        t_2: "f32[8, 16][1, 8]cpu" = torch.ops.aten.t.default(mm);  mm = None
        sum_1: "f32[1, 16][16, 1]cpu" = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True);  threshold_backward = None
        view: "f32[16][1]cpu" = torch.ops.aten.view.default(sum_1, [16]);  sum_1 = None
        t_3: "f32[16, 8][8, 1]cpu" = torch.ops.aten.t.default(t_2);  t_2 = None
        return (None, t_3, view)
