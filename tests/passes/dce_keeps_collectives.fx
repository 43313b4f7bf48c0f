# DCE keeps collectives and their waits even when their value is unused, so that no rank drops a
# collective another rank issues (fx keeps wait_tensor as side-effectful); other dead code goes.
# RUN: --passes=dce

def forward(self, x: "f32[4]"):
    all_gather_into_tensor = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
    broadcast = torch.ops._c10d_functional.broadcast.default(x, 0, '0')
    neg = torch.ops.aten.neg.default(wait_tensor)
    relu = torch.ops.aten.relu.default(x)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: all_gather_into_tensor{{(: "[^"]*")?}} = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')
# CHECK-NEXT: wait_tensor{{(: "[^"]*")?}} = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor)
# CHECK-NEXT: broadcast{{(: "[^"]*")?}} = torch.ops._c10d_functional.broadcast.default(x, 0, '0')
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}1{{ }}
