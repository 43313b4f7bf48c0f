# The joint graph of the forward graph below (requires grad: x no, 16]" yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[16, 16]", w: "f32[16, 16]"):
#     relu = torch.ops.aten.relu.default(x)
#     mm = torch.ops.aten.mm.default(relu, w)
#     return (mm,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[16, 16][16, 1]cpu"; primals_2: "f32[16, 16][16, 1]cpu"; tangents_1: "f32[16, 16][16, 1]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        relu: "f32[16, 16][16, 1]cpu" = torch.ops.aten.relu.default(primals_1);  primals_1 = None
        mm: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(relu, primals_2);  primals_2 = None
        t: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(relu);  relu = None
        mm_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t, tangents_1);  t = tangents_1 = None
        return pytree.tree_unflatten([mm, None, mm_1], self._out_spec)
