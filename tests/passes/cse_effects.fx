# CSE never merges two effectful calls: the same print twice prints twice, before and after
# functionalization threads the token through them (Note [Effect tokens]); the pure adds merge.
# RUN: --passes=cse,functionalize,cse

def forward(self, x: "f32[4]"):
    _print = torch.ops.aten._print.default('moo')
    add = torch.ops.aten.add.Tensor(x, x)
    _print_1 = torch.ops.aten._print.default('moo')
    add_1 = torch.ops.aten.add.Tensor(x, x)
    mul = torch.ops.aten.mul.Tensor(add, add_1)
    return (mul,)

# CHECK-LABEL: def forward(
# CHECK-SAME: token: "f32[0][1]cpu", x: "f32[4][1]cpu"
# CHECK-NEXT: with_effects = torch.ops.higher_order.with_effects(token, torch.ops.aten._print.default, 'moo')
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = with_effects[0]
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, x)
# CHECK-NEXT: with_effects_1 = torch.ops.higher_order.with_effects(getitem, torch.ops.aten._print.default, 'moo')
# CHECK-NEXT: getitem_2{{(: "[^"]*")?}} = with_effects_1[0]
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(add, add)
# CHECK-NEXT: return (getitem_2, mul)
