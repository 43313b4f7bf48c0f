# native_batch_norm writes running_mean/running_var when training (an undeclared mutation,
# OpDef::written_args): DCE keeps it.
# RUN: --passes=dce

def forward(self, x: "f32[2, 3]", rm: "f32[3]", rv: "f32[3]"):
    native_batch_norm = torch.ops.aten.native_batch_norm.default(x, None, None, rm, rv, True, 0.1, 1e-05)
    return (x,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: native_batch_norm{{(: "[^"]*")?}} = torch.ops.aten.native_batch_norm.default(x, None, None, rm, rv, True, 0.1, 1e-05)
# CHECK-NEXT: return (x,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}0{{ }}
