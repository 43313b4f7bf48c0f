def forward(self, x: "f32[4]", y: "f32[4]"):
    b = torch.ops.aten.add.Tensor(x, 'f32[4]écpu')
    return b
