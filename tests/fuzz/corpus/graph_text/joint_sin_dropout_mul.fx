# The joint graph of the forward graph below (requires grad: x no, w yes), as build_joint makes it
# and `aotgrad compile --dump` prints it. tests/transforms/min_cut_test.cc partitions it.
#
# def forward(self, x: "f32[64]", w: "f32[64]"):
#     sin = torch.ops.aten.sin.default(x)
#     native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True)
#     getitem = native_dropout[0]
#     getitem_1 = native_dropout[1]
#     mul = torch.ops.aten.mul.Tensor(getitem, w)
#     sum_1 = torch.ops.aten.sum.default(mul)
#     return (sum_1,)

class GraphModule(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[64][1]cpu"; primals_2: "f32[64][1]cpu"; tangents_1: "f32[][]cpu"; 
    
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        sin: "f32[64][1]cpu" = torch.ops.aten.sin.default(primals_1);  primals_1 = None
        native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True);  sin = None
        getitem: "f32[64][1]cpu" = native_dropout[0]
        getitem_1: "b8[64][1]cpu" = native_dropout[1];  native_dropout = getitem_1 = None
        mul: "f32[64][1]cpu" = torch.ops.aten.mul.Tensor(getitem, primals_2);  primals_2 = None
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
        expand: "f32[64][0]cpu" = torch.ops.aten.expand.default(tangents_1, [64]);  tangents_1 = None
        mul_1: "f32[64][1]cpu" = torch.ops.aten.mul.Tensor(expand, getitem);  expand = getitem = None
        return pytree.tree_unflatten([sum_1, None, mul_1], self._out_spec)
