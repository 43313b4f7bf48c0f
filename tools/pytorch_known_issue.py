"""PyTorch 2.11's own AOTAutograd on two cases of aotgrad's training fuzzer.

as_strided_argument_written (tests/fuzz/training_regressions/as_strided_argument_written.txt), once
a known issue of aotgrad's, fixed there: the argument is as_strided of a diagonal, reaching past the
diagonal, and the function writes it in place. Eagerly the write's backward reaches the old value
through the base (CopySlices), so the elements outside the diagonal get gradient; through PyTorch's
AOTAutograd compiled function the gradient goes through the argument's own AsStridedBackward, which
drops them. aotgrad compiles the argument's autograd base in its place and gives eager's gradient
(AliasedInputs.AsStridedPastItsViewWrittenTrainsThroughItsBase).

no_grad_leaf_output_backward (tests/fuzz/training_regressions/no_grad_leaf_output_backward.txt),
fixed in aotgrad: an output that is a view made under torch.no_grad of an input that requires grad
is eagerly a leaf of its own, whose backward reaches nothing (the input's .grad stays None).

This prints the leaf's gradient both ways with functorch.compile.aot_function (nop compilers).

    .venv/bin/python tools/pytorch_known_issue.py
"""
import torch
from functorch.compile import aot_function, nop


def setup():
    leaf = torch.arange(27, dtype=torch.float64).reshape(3, 3, 3).requires_grad_()
    diagonal = (leaf * 2).diagonal(-1, 0, 1)
    return leaf, diagonal.as_strided([3], [3], 2)


def f(a):
    a.mul_(-1)
    return (a,)


def leaf_grad(fn):
    leaf, arg = setup()
    fn(arg)[0].backward(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    return leaf.grad.flatten()[:9].tolist()


def no_grad_view(a, b):
    a.add_(b)
    with torch.no_grad():
        c = b.select(0, 1)
    return c


def no_grad_view_grad(fn):
    a = torch.zeros(4, dtype=torch.float64)
    b = torch.arange(4, dtype=torch.float64).requires_grad_()
    (fn(a, b) * 3).backward()
    return None if b.grad is None else b.grad.tolist()


if __name__ == "__main__":
    compiled = aot_function(f, fw_compiler=nop, bw_compiler=nop)
    print("as_strided_argument_written: the leaf's gradient")
    print("  eager                    ", leaf_grad(f))
    print("  PyTorch 2.11 aot_function", leaf_grad(compiled))
    compiled = aot_function(no_grad_view, fw_compiler=nop, bw_compiler=nop)
    print("no_grad_leaf_output_backward: b.grad")
    print("  eager                    ", no_grad_view_grad(no_grad_view))
    print("  PyTorch 2.11 aot_function", no_grad_view_grad(compiled))
