# Section 13.13 of the seed chapter: p.add_(g, alpha=-0.1); return (p * 2).sum() through
# aot_function with keep_inference_input_mutations=False -- the mutated input's new value is an
# extra output. Annotated here with p and g as f32[4].
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu", arg1_1: "f32[4][1]cpu"):
        add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg0_1 = arg1_1 = None
        mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(add, 2)
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
        return (add, sum_1)
