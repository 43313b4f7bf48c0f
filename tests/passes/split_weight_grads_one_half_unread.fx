# A convolution_backward whose weight and bias gradients no getitem reads is left as it is:
# splitting it would leave a dead call.
# RUN: --passes=split_weight_grads

def forward(self, grad: "f32[2, 4, 6, 6]", x: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(grad, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
    getitem = convolution_backward[0]
    return (getitem,)

# CHECK-LABEL: def forward(
# CHECK-NEXT: convolution_backward = torch.ops.aten.convolution_backward.default(grad, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
# CHECK-NEXT: getitem{{(: "[^"]*")?}} = convolution_backward[0]
# CHECK-NEXT: return (getitem,)
# CHECK: {{^}}split_weight_grads{{ +[0-9]+ +[0-9]+ +}}0{{ }}
