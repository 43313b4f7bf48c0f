"""ctest python.installed: the aotgrad package pip installed into the venv (scripts/setup.sh)
imports from site-packages, partitions as torch.compile's partitioner and is the Dynamo backend
"aotgrad" by its entry point (not a pytest module: it must not see the build tree's copy)."""
import os
import sys

sys.path = [p for p in sys.path if os.path.abspath(p) != os.getcwd() and p != ""]
import torch  # noqa: E402
from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402

import aotgrad  # noqa: E402

where = os.path.dirname(aotgrad._C.__file__)
assert "site-packages" in where, "aotgrad imported from %s, not the venv's site-packages" % where
boxed = lambda gm, _: make_boxed_func(gm.forward)  # noqa: E731
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
compiled = torch.compile(model, backend=aot_autograd(
    fw_compiler=boxed, bw_compiler=boxed, partition_fn=aotgrad.min_cut_partition))
x = torch.randn(4, 8)
compiled(x).sum().backward()
grads = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
model(x).sum().backward()
assert all(torch.allclose(a, p.grad) for a, p in zip(grads, model.parameters()))
# The Dynamo backend by name, from the package's entry point.
torch._dynamo.reset()
twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
twin.load_state_dict(model.state_dict())
by_name = torch.compile(twin, backend="aotgrad")
assert torch.allclose(by_name(x), model(x))
assert "aotgrad" in torch._dynamo.list_backends()
print("installed aotgrad: %s" % where)
