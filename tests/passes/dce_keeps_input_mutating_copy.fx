# keep_inference_input_mutations: the trailing copy_ into an input has no users and stays.
# RUN: --passes=dce

def forward(self, x: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, 1)
    unused = torch.ops.aten.sin.default(add)
    copy_ = torch.ops.aten.copy_.default(x, add)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, 1)
# CHECK-NEXT: copy_{{(: "[^"]*")?}} = torch.ops.aten.copy_.default(x, add)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}1{{ }}
