# A view that is an output may become another view of the same storage.
# RUN: --passes=simplify

def forward(self, x: "f32[4, 3]"):
    slice_1 = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
    view = torch.ops.aten.view.default(slice_1, [2, 3])
    return (view,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: slice_1{{(: "[^"]*")?}} = torch.ops.aten.slice.Tensor(x, 0, 1, 3)
# CHECK-NEXT: return (slice_1,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
