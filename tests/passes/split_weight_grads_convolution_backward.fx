# A convolution_backward computing grad_input and the weight and bias gradients becomes two calls
# of the same op: grad_input alone under the call's name, the weight and bias gradients in the
# second, which their getitems read.
# RUN: --passes=split_weight_grads

def forward(self, grad: "f32[2, 4, 6, 6]", x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(grad, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
    getitem = convolution_backward[0]
    getitem_1 = convolution_backward[1]
    getitem_2 = convolution_backward[2]
    return (getitem, getitem_1, getitem_2)

# CHECK-LABEL: def forward(
# CHECK-NEXT: convolution_backward = torch.ops.aten.convolution_backward.default(grad, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])
# CHECK-NEXT: convolution_backward_1 = torch.ops.aten.convolution_backward.default(grad, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, True])
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = convolution_backward[0]
# CHECK-NEXT: getitem_1{{(: "[^"]*")?}} = convolution_backward_1[1]
# CHECK-NEXT: getitem_2{{(: "[^"]*")?}} = convolution_backward_1[2]
# CHECK-NEXT: return (getitem, getitem_1, getitem_2)
# CHECK: {{^}}split_weight_grads{{ +[0-9]+ +[0-9]+ +}}1{{ }}
