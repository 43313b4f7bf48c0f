# native_batch_norm in eval mode writes nothing: DCE removes it.
# RUN: --passes=dce

def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]"):
    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, None, None, rm, rv, False, 0.1, 1e-05)
    return (x,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: return (x,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}1{{ }}
