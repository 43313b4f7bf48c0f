# CSE never merges random ops.
# RUN: --passes=cse

def forward(self, x: "f32[4]"):
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    bernoulli_1 = torch.ops.aten.bernoulli.p(x, 0.5)
    add = torch.ops.aten.add.Tensor(bernoulli, bernoulli_1)
    return (add,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: bernoulli{{(: "[^"]*")?}} = torch.ops.aten.bernoulli.p(x, 0.5)
# CHECK-NEXT: bernoulli_1{{(: "[^"]*")?}} = torch.ops.aten.bernoulli.p(x, 0.5)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(bernoulli, bernoulli_1)
# CHECK-NEXT: return (add,)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}0{{ }}
