# The joint graph of the forward graph below (requires grad: x no, 16]" yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[16, 16]", w: "f32[16, 16]"):
#     mm = torch.ops.aten.mm.default(x, w)
#     relu = torch.ops.aten.relu.default(mm)
#     sum_1 = torch.ops.aten.sum.dim_IntList(relu, [1], True)
#     div = torch.ops.aten.div.Tensor(relu, sum_1)
#     mm_1 = torch.ops.aten.mm.default(div, w)
#     return (mm_1,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[16, 16][16, 1]cpu"; primals_2: "f32[16, 16][16, 1]cpu"; tangents_1: "f32[16, 16][16, 1]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mm: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(primals_1, primals_2)
        relu: "f32[16, 16][16, 1]cpu" = torch.ops.aten.relu.default(mm);  mm = None
        sum_1: "f32[16, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(relu, [1], True)
        div: "f32[16, 16][16, 1]cpu" = torch.ops.aten.div.Tensor(relu, sum_1)
        mm_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(div, primals_2)
        t: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(div);  div = None
        mm_2: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t, tangents_1);  t = None
        t_1: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(primals_2);  primals_2 = None
        mm_3: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(tangents_1, t_1);  tangents_1 = t_1 = None
        div_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.div.Tensor(relu, sum_1)
        div_2: "f32[16, 16][16, 1]cpu" = torch.ops.aten.div.Tensor(div_1, sum_1);  div_1 = None
        neg: "f32[16, 16][16, 1]cpu" = torch.ops.aten.neg.default(mm_3)
        mul: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(neg, div_2);  neg = div_2 = None
        div_3: "f32[16, 16][16, 1]cpu" = torch.ops.aten.div.Tensor(mm_3, sum_1);  mm_3 = sum_1 = None
        sum_2: "f32[16, 1][1, 1]cpu" = torch.ops.aten.sum.dim_IntList(mul, [1], True);  mul = None
        expand: "f32[16, 16][1, 0]cpu" = torch.ops.aten.expand.default(sum_2, [16, 16]);  sum_2 = None
        add: "f32[16, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(div_3, expand);  div_3 = expand = None
        detach: "f32[16, 16][16, 1]cpu" = torch.ops.aten.detach.default(relu);  relu = None
        detach_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.detach.default(detach);  detach = None
        threshold_backward: "f32[16, 16][16, 1]cpu" = torch.ops.aten.threshold_backward.default(add, detach_1, 0);  add = detach_1 = None
        t_2: "f32[16, 16][1, 16]cpu" = torch.ops.aten.t.default(primals_1);  primals_1 = None
        mm_4: "f32[16, 16][16, 1]cpu" = torch.ops.aten.mm.default(t_2, threshold_backward);  t_2 = threshold_backward = None
        add_1: "f32[16, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(mm_2, mm_4);  mm_2 = mm_4 = None
        return pytree.tree_unflatten([mm_1, None, add_1], self._out_spec)
