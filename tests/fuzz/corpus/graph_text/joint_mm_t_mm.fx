# The joint graph of the forward graph below (requires grad: x no, 16]" yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[16, 16]", w: "f32[16, 16]"):
#     mm = torch.ops.aten.mm.default(x, x)
#     t = torch.ops.aten.t.default(mm)
#     mm_1 = torch.ops.aten.mm.default(t, w)
#     return (mm_1,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[16, 16][16, 1]cpu"; primals_2: "f32[16, 16][16, 1]cpu"; tangents_1: "f32[16, 16][16, 1]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mm: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(primals_1, primals_1);  primals_1 = None
        t: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(mm);  mm = None
        mm_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t, primals_2);  primals_2 = None
        t_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.t.default(t);  t = None
        mm_2: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t_1, tangents_1);  t_1 = tangents_1 = None
        return pytree.tree_unflatten([mm_1, None, mm_2], self._out_spec)
