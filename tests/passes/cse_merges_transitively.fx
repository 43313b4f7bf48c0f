# Common subexpression elimination merges repeated expressions, transitively: add_1 is add
# (alpha=1 is the default), so relu_1 is relu.
# RUN: --passes=cse

def forward(self, x: "f32[4]", y: "f32[4]"):
    add = torch.ops.aten.add.Tensor(x, y)
    add_1 = torch.ops.aten.add.Tensor(x, y, alpha = 1)
    relu = torch.ops.aten.relu.default(add)
    relu_1 = torch.ops.aten.relu.default(add_1)
    mul = torch.ops.aten.mul.Tensor(relu, relu_1)
    return (mul,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(x, y)
# CHECK-NEXT: relu{{(: "[^"]*")?}} = torch.ops.aten.relu.default(add)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(relu, relu)
# CHECK-NEXT: return (mul,)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}2{{ }}
