# An output and an intermediate computed alike: CSE keeps the output's node.
# RUN: --passes=cse

def forward(self, x: "f32[4]"):
    exp = torch.ops.aten.exp.default(x)
    exp_1 = torch.ops.aten.exp.default(x)
    neg = torch.ops.aten.neg.default(exp_1)
    return (exp, neg)

# CHECK-LABEL: def forward(
# CHECK-NEXT: exp{{(: "[^"]*")?}} = torch.ops.aten.exp.default(x)
# CHECK-NEXT: neg{{(: "[^"]*")?}} = torch.ops.aten.neg.default(exp)
# CHECK-NEXT: return (exp, neg)
