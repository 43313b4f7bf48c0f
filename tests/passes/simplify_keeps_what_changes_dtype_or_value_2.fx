# An int tensor times the int 1 is the same int tensor.
# RUN: --passes=simplify

def forward(self, i: "i64[4]"):
    mul = torch.ops.aten.mul.Tensor(i, 1)
    neg = torch.ops.aten.neg.default(mul)
    return (neg,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: neg{{(: "[^"]*")?}} = torch.ops.aten.neg.default(i)
# CHECK-NEXT: return (neg,)
# CHECK: {{^}}simplify{{ +[0-9]+ +[0-9]+ +}}1{{ }}
