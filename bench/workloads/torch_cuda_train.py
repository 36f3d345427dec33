"""torch_cuda_train.py - `import torch` and N training steps (default 100) of a
small convolutional model on the first CUDA device, with each batch built on
the host and copied over: the issue-12 "PyTorch CUDA script", where host
allocations (batches, autograd bookkeeping) and device allocations (the
caching allocator's segments) both happen every step
(bench/run_all.py --sections torch, when torch sees a GPU).
Usage: torch_cuda_train.py [STEPS]."""

import sys

import torch
import torch.nn as nn


class SmallConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def host_batch(step):
    # Batch sizes vary, so the caching allocator's blocks are split and
    # reused rather than replayed from one size.
    n = 64 + 32 * (step % 4)
    return torch.randn(n, 3, 32, 32).pin_memory(), torch.randint(0, 10, (n,))


def train(steps):
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    model = SmallConv().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = None
    for step in range(steps):
        x, y = host_batch(step)
        x, y = x.to(dev, non_blocking=True), y.to(dev)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return loss.item()


if __name__ == "__main__":
    torch.set_num_threads(1)
    print("loss=%.4f max_allocated=%d" % (train(int(sys.argv[1]) if len(sys.argv) > 1 else 100),
                                           torch.cuda.max_memory_allocated()))
