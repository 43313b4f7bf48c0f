# As fx's is_impure (torch 2.7+): a random op advances the RNG stream, so DCE keeps an unused one
# (removing it would change the numbers every later random op draws), but not its unused getitems.
# RUN: --passes=dce

def forward(self, x: "f32[4]"):
    bernoulli = torch.ops.aten.bernoulli.p(x, 0.5)
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    return (getitem,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: bernoulli{{(: "[^"]*")?}} = torch.ops.aten.bernoulli.p(x, 0.5)
# CHECK-NEXT: native_dropout{{(: "[^"]*")?}} = torch.ops.aten.native_dropout.default(x, 0.5, True)
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = native_dropout[0]
# CHECK-NEXT: return (getitem,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}1{{ }}
