# The joint graph of the forward graph below (requires grad: x yes, w no), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[64]", w: "f32[64]"):
#     _to_copy = torch.ops.aten._to_copy.default(w, dtype = torch.float16)
#     mul = torch.ops.aten.mul.Tensor(x, _to_copy)
#     sum_1 = torch.ops.aten.sum.default(mul)
#     return (sum_1,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[64][1]cpu"; primals_2: "f32[64][1]cpu"; tangents_1: "f32[][]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        _to_copy: "f16[64][1]cpu" = torch.ops.aten._to_copy.default(primals_2, dtype = torch.float16);  primals_2 = None
        mul: "f32[64][1]cpu" = torch.ops.aten.mul.Tensor(primals_1, _to_copy);  primals_1 = None
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
        expand: "f32[64][0]cpu" = torch.ops.aten.expand.default(tangents_1, [64]);  tangents_1 = None
        mul_1: "f32[64][1]cpu" = torch.ops.aten.mul.Tensor(expand, _to_copy);  expand = _to_copy = None
        return pytree.tree_unflatten([sum_1, mul_1, None], self._out_spec)
