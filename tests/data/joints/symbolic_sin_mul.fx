# The joint graph of the forward graph below (requires grad: x no, w yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[s0]", w: "f32[s0]"):
#     sin = torch.ops.aten.sin.default(x)
#     mul = torch.ops.aten.mul.Tensor(sin, w)
#     sum_1 = torch.ops.aten.sum.default(mul)
#     return (sum_1,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[s0][1]cpu"; primals_2: "f32[s0][1]cpu"; tangents_1: "f32[][]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        sin: "f32[s0][1]cpu" = torch.ops.aten.sin.default(primals_1)
        mul: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(sin, primals_2);  primals_2 = None
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
        sym_size: "Sym(s0)" = torch.ops.aten.sym_size.int(primals_1, 0);  primals_1 = None
        expand: "f32[s0][0]cpu" = torch.ops.aten.expand.default(tangents_1, [sym_size]);  tangents_1 = sym_size = None
        mul_1: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(expand, sin);  expand = sin = None
        return pytree.tree_unflatten([sum_1, None, mul_1], self._out_spec)
