# DCE removes a pure multi-output op with its getitems.
# RUN: --passes=dce

def forward(self, x: "f32[4, 3]"):
    max_1 = torch.ops.aten.max.dim(x, 1)
    getitem = max_1[0]
    getitem_1 = max_1[1]
    return (x,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: return (x,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}3{{ }}
