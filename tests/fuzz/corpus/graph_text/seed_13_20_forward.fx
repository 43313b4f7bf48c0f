# Section 13.20 of the seed chapter: the forward graph after partitioning; it saves primals_1
# (x) and detach_1 (relu's output) for the backward.
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 8][8, 1]cpu", primals_2: "f32[16, 8][8, 1]cpu", primals_3: "f32[16][1]cpu"):
        t: "f32[8, 16][1, 8]cpu" = torch.ops.aten.t.default(primals_2);  primals_2 = None
        addmm: "f32[4, 16][16, 1]cpu" = torch.ops.aten.addmm.default(primals_3, primals_1, t);  primals_3 = t = None
        relu: "f32[4, 16][16, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        detach: "f32[4, 16][16, 1]cpu" = torch.ops.aten.detach.default(relu)
        detach_1: "f32[4, 16][16, 1]cpu" = torch.ops.aten.detach.default(detach);  detach = None
        return (relu, primals_1, detach_1)
