"""PyTorch 2.11's own AOTAutograd on a known issue of aotgrad's training fuzzer.

as_strided_argument_written (tests/fuzz/training_regressions/known_as_strided_argument_written.txt):
the argument is as_strided of a diagonal, reaching past the diagonal, and the function writes it
in place. Eagerly the write's backward reaches the old value through the base (CopySlices), so the
elements outside the diagonal get gradient; through an AOTAutograd compiled function the gradient
goes through the argument's own AsStridedBackward, which drops them. This prints the leaf's
gradient both ways with functorch.compile.aot_function (nop compilers).

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


if __name__ == "__main__":
    print("eager                    ", leaf_grad(f))
    print("PyTorch 2.11 aot_function", leaf_grad(aot_function(f, fw_compiler=nop, bw_compiler=nop)))
