"""MNIST MLP 784-256-128-10 (ReLU, Adam, batch 128): minigrad vs hand-written NumPy vs PyTorch CPU.

Each contender trains in its own process on the same data in the same order and
prints epoch time, test accuracy and peak memory; the table puts them side by side.

    python benchmarks/mnist_mlp.py [--epochs 3] [--batch-size 128] [--rounds 3] [--subset]
"""

from __future__ import annotations

import math

import numpy as np

from _mnist_common import compare, epoch_orders, timed_epochs

SIZES = [784, 256, 128, 10]
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


def run_minigrad(args, data):
    from minigrad import nn, optim
    from minigrad.tensor import from_numpy, manual_seed, no_grad, tensor

    (x, y), (xt, yt) = data
    manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = nn.CrossEntropyLoss()
    orders = epoch_orders(len(y), args.epochs)

    def train(epoch):
        order = orders[epoch]
        for i in range(0, len(order), args.batch_size):
            idx = order[i : i + args.batch_size]
            loss = loss_fn(model(from_numpy(x[idx])), from_numpy(y[idx]))  # the fancy index already copied
            opt.zero_grad()
            loss.backward()
            opt.step()

    def evaluate():
        with no_grad():
            return float((model(tensor(xt)).numpy().argmax(1) == yt).mean())

    return timed_epochs(train, evaluate, args.epochs)


def run_numpy(args, data):
    """The same network, written out by hand: forward, softmax-CE, backward, Adam."""
    (x, y), (xt, yt) = data
    x, xt = x.reshape(len(x), -1), xt.reshape(len(xt), -1)
    rng = np.random.default_rng(0)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / math.sqrt(fan_in)  # PyTorch's Linear default: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in))
        params += [rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32), rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = [0]
    orders = epoch_orders(len(y), args.epochs)

    def forward(inp):
        acts = [inp]
        h = inp
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i < len(params) - 2:
                h = np.maximum(h, 0)
            acts.append(h)
        return acts

    def train(epoch):
        order = orders[epoch]
        for start in range(0, len(order), args.batch_size):
            idx = order[start : start + args.batch_size]
            acts = forward(x[idx])
            logits = acts[-1]
            z = logits - logits.max(1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            g = p / len(idx)
            grads = [None] * len(params)
            for i in range(len(params) - 2, -1, -2):
                grads[i] = acts[i // 2].T @ g
                grads[i + 1] = g.sum(0)
                if i > 0:
                    g = (g @ params[i].T) * (acts[i // 2] > 0)
            step[0] += 1
            t = step[0]
            c1, c2 = 1 - BETAS[0] ** t, 1 - BETAS[1] ** t
            for p_, g_, m_, v_ in zip(params, grads, m, v):
                m_ *= BETAS[0]
                m_ += (1 - BETAS[0]) * g_
                v_ *= BETAS[1]
                v_ += (1 - BETAS[1]) * g_ * g_
                p_ -= (LR / c1) * m_ / (np.sqrt(v_ / c2) + EPS)

    def evaluate():
        return float((forward(xt)[-1].argmax(1) == yt).mean())

    return timed_epochs(train, evaluate, args.epochs)


def run_torch(args, data):
    import torch

    (x, y), (xt, yt) = data
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y, xt = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(xt)
    orders = epoch_orders(len(y), args.epochs)

    def train(epoch):
        order = torch.from_numpy(orders[epoch])
        for i in range(0, len(order), args.batch_size):
            idx = order[i : i + args.batch_size]
            loss = loss_fn(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

    def evaluate():
        with torch.no_grad():
            return float((model(xt).argmax(1).numpy() == yt).mean())

    return timed_epochs(train, evaluate, args.epochs)


CONTENDERS = {"minigrad": run_minigrad, "numpy": run_numpy, "torch": run_torch}


def main():
    compare(__file__, __doc__.splitlines()[0], CONTENDERS, lambda a: f"MNIST MLP 784-256-128-10, batch {a.batch_size}, Adam lr {LR}, {a.epochs} epochs", default_epochs=3, default_batch=128)


if __name__ == "__main__":
    main()
