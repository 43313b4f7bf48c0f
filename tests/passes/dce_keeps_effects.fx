# DCE keeps effectful calls (aten::_print, with_effects) even when nothing uses their value: the
# effect is the point (Note [Effect tokens]); other dead code goes.
# RUN: --passes=dce

def forward(self, token: "f32[0]", x: "f32[4]"):
    _print = torch.ops.aten._print.default('moo')
    with_effects = torch.ops.higher_order.with_effects(token, torch.ops.aten._print.default, 'boo')
    getitem = with_effects[0]
    neg = torch.ops.aten.neg.default(x)
    relu = torch.ops.aten.relu.default(x)
    return (relu,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: _print = torch.ops.aten._print.default('moo')
# CHECK-NEXT: with_effects = torch.ops.higher_order.with_effects(token, torch.ops.aten._print.default, 'boo')
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(x)
# CHECK-NEXT: return (relu,)
# CHECK: {{^}}dce{{ +[0-9]+ +[0-9]+ +}}2{{ }}
