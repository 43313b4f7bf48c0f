# CSE never merges collectives or their waits: each is a communication every rank issues
# (Note [Functional collectives]); the pure ops around them still merge.
# RUN: --passes=cse

def forward(self, x: "f32[4]"):
    all_reduce = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
    wait_tensor = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
    all_reduce_1 = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
    wait_tensor_1 = torch.ops._c10d_functional.wait_tensor.default(all_reduce_1)
    mul = torch.ops.aten.mul.Tensor(wait_tensor, 2)
    mul_1 = torch.ops.aten.mul.Tensor(wait_tensor, 2)
    add = torch.ops.aten.add.Tensor(mul, mul_1)
    add_1 = torch.ops.aten.add.Tensor(add, wait_tensor_1)
    return (add_1,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: all_reduce{{(: "[^"]*")?}} = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
# CHECK-NEXT: wait_tensor{{(: "[^"]*")?}} = torch.ops._c10d_functional.wait_tensor.default(all_reduce)
# CHECK-NEXT: all_reduce_1{{(: "[^"]*")?}} = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
# CHECK-NEXT: wait_tensor_1{{(: "[^"]*")?}} = torch.ops._c10d_functional.wait_tensor.default(all_reduce_1)
# CHECK-NEXT: mul{{(: "[^"]*")?}} = torch.ops.aten.mul.Tensor(wait_tensor, 2)
# CHECK-NEXT: add{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(mul, mul)
# CHECK-NEXT: add_1{{(: "[^"]*")?}} = torch.ops.aten.add.Tensor(add, wait_tensor_1)
# CHECK-NEXT: return (add_1,)
# CHECK: {{^}}cse{{ +[0-9]+ +[0-9]+ +}}1{{ }}
