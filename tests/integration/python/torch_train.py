# SPDX-License-Identifier: MIT
"""torch_train.py - `import torch` and a few SGD steps of a tiny model on the
CPU (test_python_torch.py). The batch is large enough that each step's
tensors are allocations of their own (fc1's output: 512 x 256 floats =
524,288 bytes). "@name" markers: do not reformat."""

import sys

import torch
import torch.nn as nn

STEPS = 5


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # @torch_forward
        return self.fc2(h)


def train(steps):
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(512, 64)  # @torch_data
    y = torch.randn(512, 1)
    loss = None
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)  # @torch_model_call
        loss = ((out - y) ** 2).mean()  # @torch_loss
        loss.backward()  # @torch_backward
        opt.step()  # @torch_step
    return loss.item()


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.stdout.write("loss=%f\n" % train(STEPS))
