"""Trains a dynamic export at several sizes with aotgrad run --train and compares with eager."""
import subprocess, sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import torch
import export as E
aotgrad, model_name, fx, inputs_path, out_dir = sys.argv[1:6]
extra = sys.argv[7:]  # more options for aotgrad run (--decomp=full, --memory-budget=0.5)
sizes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[6].split(",")]
torch.manual_seed(0)
model, example = E.MODELS[model_name][1]()
tensors, meta = E.read_safetensors(inputs_path)
params = meta["parameters"].split(",")
names = {E.placeholder_name(n): n for n, _ in list(model.named_parameters()) + list(model.named_buffers())}
worst = 0.0
for k, size in enumerate(sizes):
    torch.manual_seed(100 + k)
    inputs = {}
    for name, t in example.items():
        shape = list(t.shape)
        for d, v in enumerate(size[: len(shape)]):
            shape[d] = v
        if t.dtype.is_floating_point:
            inputs[name] = torch.randn(shape, dtype=t.dtype)
        else:
            inputs[name] = torch.randint(int(t.min()), int(t.max()) + 1, shape, dtype=t.dtype)
    feed = dict(tensors)
    feed.update(inputs)
    ip = os.path.join(out_dir, "in_%d.safetensors" % k)
    op = os.path.join(out_dir, "out_%d.safetensors" % k)
    E.write_safetensors(ip, feed)
    subprocess.run([aotgrad, "run", fx, "--inputs=" + ip, "--train", "--grad=" + ",".join(params),
                    "--outputs=" + op] + extra, check=True)
    got, _ = E.read_safetensors(op)
    state = {names[p]: tensors[p].clone().requires_grad_(p in params) for p in names}
    loss = E.functional_call(model, state, (), inputs)
    loss.backward()
    diffs = {"loss": (got["out_0"] - loss.detach()).abs().max().item()}
    for p in params:  # relative to the largest element (absolute near 0: a bias before batch norm has ~0 grads)
        g = state[names[p]].grad
        diffs["grad_" + p] = ((got["grad_" + p] - g).abs().max() / (g.abs().max() + 1e-3)).item()
    for p in names:  # buffers the step wrote (running statistics)
        if p not in params and p in got:
            diffs[p] = (got[p].double() - state[names[p]].detach().double()).abs().max().item()
    where = max(diffs, key=diffs.get)
    err = diffs[where]
    worst = max(worst, err)
    print("size %s: loss %.6f (eager %.6f), largest difference %.2e (%s)" % (
        "x".join(map(str, size)), got["out_0"].item(), loss.item(), err, where))
print("largest difference over %d sizes: %.2e" % (len(sizes), worst))
sys.exit(0 if worst < 1e-4 else 1)
