# The joint graph of the forward graph below (requires grad: x no, 16]" yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[16, 16]", w: "f32[16, 16]"):
#     mm = torch.ops.aten.mm.default(x, w)
#     mm_1 = torch.ops.aten.mm.default(x, w)
#     mul = torch.ops.aten.mul.Tensor(mm, mm_1)
#     mm_2 = torch.ops.aten.mm.default(mul, w)
#     return (mm_2,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[16, 16][16, 1]cpu"; primals_2: "f32[16, 16][16, 1]cpu"; tangents_1: "f32[16, 16][16, 1]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mm: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(primals_1, primals_2)
        mm_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(primals_1, primals_2)
        mul: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(mm, mm_1)
        mm_2: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(mul, primals_2)
        t: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(mul);  mul = None
        mm_3: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t, tangents_1);  t = None
        t_1: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(primals_2);  primals_2 = None
        mm_4: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(tangents_1, t_1);  tangents_1 = t_1 = None
        mul_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(mm_4, mm);  mm = None
        mul_2: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(mm_4, mm_1);  mm_4 = mm_1 = None
        t_2: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(primals_1)
        mm_5: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t_2, mul_1);  t_2 = mul_1 = None
        add: "f32[16, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(mm_3, mm_5);  mm_3 = mm_5 = None
        t_3: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(primals_1);  primals_1 = None
        mm_6: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t_3, mul_2);  t_3 = mul_2 = None
        add_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(add, mm_6);  add = mm_6 = None
        return pytree.tree_unflatten([mm_2, None, add_1], self._out_spec)
