# DCE on a graph with nothing dead changes nothing.
# RUN: --passes=dce

def forward(self, x: "f32[4]"):
    relu = torch.ops.aten.relu.default(x)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}0{{ }}
