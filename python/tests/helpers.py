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
