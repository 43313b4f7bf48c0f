# The example of DESIGN.md's "Text form": linear, relu, layer norm and a scaled residual add.
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 8][8, 1]cpu", primals_2: "f32[16, 8][8, 1]cpu", primals_3: "f32[16][1]cpu"):
        t: "f32[8, 16][1, 8]cpu" = torch.ops.aten.t.default(primals_2);  primals_2 = None
        addmm: "f32[4, 16][16, 1]cpu" = torch.ops.aten.addmm.default(primals_3, primals_1, t);  primals_3 = t = None
        relu: "f32[4, 16][16, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        native_layer_norm = torch.ops.aten.native_layer_norm.default(relu, [16], None, None, 1e-05)
        getitem: "f32[4, 16][16, 1]cpu" = native_layer_norm[0];  native_layer_norm = None
        add: "f32[4, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(getitem, relu, alpha = -0.1);  getitem = None
        return (add, primals_1, relu)
