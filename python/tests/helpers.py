"""What the package's tests share."""
import torch
import torch.nn.functional as F


def train(model, compiled, batches, opt="sgd"):
    """The losses of `model` (eager) and of `compiled` (torch.compile's callable of a copy), one
    optimizer step per batch of `batches`, SGD or Adam."""
    losses = []
    make = (lambda p: torch.optim.SGD(p, lr=0.1)) if opt == "sgd" else (
        lambda p: torch.optim.Adam(p, lr=1e-3))
    for m in (model, compiled):
        o = make(m.parameters())
        run = []
        for x, y in batches:
            o.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            o.step()
            run.append(loss.item())
        losses.append(run)
    return losses


def cond_loss(x, w):
    """A graph with torch.cond, which aotgrad's IR does not take from FX (a higher-order op with
    subgraph attributes)."""
    return torch.cond(x.sum() > 0, lambda x, w: (x * w).sin(), lambda x, w: (x + w).cos(),
                      (x, w)).sum()


def check_fallback(backend, warning):
    """`backend` compiles cond_loss by PyTorch's own path with one warning matching `warning`,
    and the gradient is eager's; under aotgrad.config.strict the same graph raises."""
    import pytest

    import aotgrad

    x, w = torch.randn(4), torch.randn(4, requires_grad=True)
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match=warning):
        torch.compile(cond_loss, backend=backend)(x, w).backward()
    we = w.detach().clone().requires_grad_()
    cond_loss(x, we).backward()
    assert torch.allclose(w.grad, we.grad)
    aotgrad.config.strict = True
    try:
        torch._dynamo.reset()
        with pytest.raises(Exception, match="node"):
            torch.compile(cond_loss, backend=backend)(x, w).backward()
    finally:
        aotgrad.config.strict = False
