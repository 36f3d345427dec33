"""torch_train.py - `import torch` and N SGD steps (default 30) of the tiny
model of tests/integration/python/torch_train.py on the CPU: the issue-12
"short PyTorch CPU training loop" (bench/run_all.py --sections torch).
Usage: torch_train.py [STEPS]."""

import sys

import torch
import torch.nn as nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def train(steps):
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(512, 64)
    y = torch.randn(512, 1)
    loss = None
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
    return loss.item()


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.stdout.write("loss=%f\n" % train(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
