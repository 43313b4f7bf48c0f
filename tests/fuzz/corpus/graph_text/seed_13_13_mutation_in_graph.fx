# Section 13.13 of the seed chapter with keep_inference_input_mutations=True: the copy_ back into
# the mutated input stays at the end of the graph. p and g are f32[4].
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu", arg1_1: "f32[4][1]cpu"):
        add: "f32[4][1]cpu" = torch.ops.aten.add.Tensor(arg0_1, arg1_1, alpha = -0.1);  arg1_1 = None
        mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(add, 2)
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
        copy_: "f32[4][1]cpu" = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = add = copy_ = None
        return (sum_1,)
