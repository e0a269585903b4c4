"""MNIST CNN conv(1->16,5)-relu-pool2-conv(16->32,5)-relu-pool2-linear(512->10), Adam, batch 64:
minigrad vs hand-written NumPy vs PyTorch CPU.

Each contender trains in its own process on the same data in the same order and
prints epoch time, test accuracy and peak memory; the table puts them side by side.

    python benchmarks/mnist_cnn.py [--epochs 2] [--batch-size 64] [--rounds 3] [--subset]
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from _mnist_common import compare, epoch_orders, timed_epochs

LR, BETAS, EPS = 2e-3, (0.9, 0.999), 1e-8


def _batches(order, batch_size):
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def run_minigrad(args, data):
    from minigrad import nn, optim
    from minigrad.tensor import from_numpy, manual_seed, no_grad, tensor

    (x, y), (xt, yt) = data
    manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(512, 10),
    )
    opt = optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = nn.CrossEntropyLoss()
    orders = epoch_orders(len(y), args.epochs)

    def train(epoch):
        for idx in _batches(orders[epoch], args.batch_size):
            loss = loss_fn(model(from_numpy(x[idx])), from_numpy(y[idx]))  # the fancy index already copied
            opt.zero_grad()
            loss.backward()
            opt.step()

    def evaluate():
        model.eval()
        with no_grad():
            return float(np.mean([(model(tensor(xt[i : i + 1000])).numpy().argmax(1) == yt[i : i + 1000]).mean() for i in range(0, len(yt), 1000)]))

    return timed_epochs(train, evaluate, args.epochs)


class NumpyCNN:
    """The same CNN by hand: im2col convolutions, 2x2 max-pool, linear, softmax-CE, Adam."""

    def __init__(self, rng):
        def uniform(shape, fan_in):
            bound = 1 / math.sqrt(fan_in)
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        self.params = {
            "w1": uniform((16, 1, 5, 5), 25), "b1": uniform(16, 25),
            "w2": uniform((32, 16, 5, 5), 400), "b2": uniform(32, 400),
            "w3": uniform((512, 10), 512), "b3": uniform(10, 512),
        }
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.t = 0

    @staticmethod
    def conv(x, w, b):
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        oh, ow = h - kh + 1, wd - kw + 1
        windows = sliding_window_view(x, (kh, kw), axis=(2, 3))  # (N, C, OH, OW, KH, KW), a view
        cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)  # im2col: one copy
        out = cols @ w.reshape(o, -1).T + b
        return out.reshape(n, oh, ow, o).transpose(0, 3, 1, 2), cols

    @staticmethod
    def conv_backward(g, x, cols, w):
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        oh, ow = g.shape[2:]
        g_mat = g.transpose(0, 2, 3, 1).reshape(-1, o)
        gw = (g_mat.T @ cols).reshape(w.shape)
        gcols = (g_mat @ w.reshape(o, -1)).reshape(n, oh, ow, c, kh, kw)
        gx = np.zeros_like(x)
        for i in range(kh):  # col2im: add each kernel offset's slice back where it came from
            for j in range(kw):
                gx[:, :, i : i + oh, j : j + ow] += gcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
        return gx, gw, g_mat.sum(0)

    @staticmethod
    def pool(x):
        n, c, h, w = x.shape
        windows = x.reshape(n, c, h // 2, 2, w // 2, 2)
        out = windows.max(axis=(3, 5))
        mask = windows == out[:, :, :, None, :, None]
        return out, mask

    @staticmethod
    def pool_backward(g, mask):
        n, c, h, _, w, _ = mask.shape
        # ties share the gradient in the hand-written version; they are measure-zero for real data
        return (mask * g[:, :, :, None, :, None]).reshape(n, c, h * 2, w * 2)

    def forward(self, x):
        p = self.params
        c1, cols1 = self.conv(x, p["w1"], p["b1"])
        r1 = np.maximum(c1, 0)
        p1, m1 = self.pool(r1)
        c2, cols2 = self.conv(p1, p["w2"], p["b2"])
        r2 = np.maximum(c2, 0)
        p2, m2 = self.pool(r2)
        flat = p2.reshape(len(x), -1)
        logits = flat @ p["w3"] + p["b3"]
        return logits, (x, cols1, r1, m1, p1, cols2, r2, m2, flat)

    def step(self, x, y):
        p = self.params
        logits, (x, cols1, r1, m1, p1, cols2, r2, m2, flat) = self.forward(x)
        z = logits - logits.max(1, keepdims=True)
        prob = np.exp(z)
        prob /= prob.sum(1, keepdims=True)
        prob[np.arange(len(y)), y] -= 1
        g = prob / len(y)
        grads = {"w3": flat.T @ g, "b3": g.sum(0)}
        g = (g @ p["w3"].T).reshape(r2.shape[0], 32, 4, 4)
        g = self.pool_backward(g, m2) * (r2 > 0)
        g, grads["w2"], grads["b2"] = self.conv_backward(g, p1, cols2, p["w2"])
        g = self.pool_backward(g, m1) * (r1 > 0)
        _, grads["w1"], grads["b1"] = self.conv_backward(g, x, cols1, p["w1"])
        self.t += 1
        c1, c2 = 1 - BETAS[0] ** self.t, 1 - BETAS[1] ** self.t
        for k, grad in grads.items():
            self.m[k] = BETAS[0] * self.m[k] + (1 - BETAS[0]) * grad
            self.v[k] = BETAS[1] * self.v[k] + (1 - BETAS[1]) * grad * grad
            p[k] -= (LR / c1) * self.m[k] / (np.sqrt(self.v[k] / c2) + EPS)


def run_numpy(args, data):
    (x, y), (xt, yt) = data
    net = NumpyCNN(np.random.default_rng(0))
    orders = epoch_orders(len(y), args.epochs)

    def train(epoch):
        for idx in _batches(orders[epoch], args.batch_size):
            net.step(x[idx], y[idx])

    def evaluate():
        return float(np.mean([(net.forward(xt[i : i + 1000])[0].argmax(1) == yt[i : i + 1000]).mean() for i in range(0, len(yt), 1000)]))

    return timed_epochs(train, evaluate, args.epochs)


def run_torch(args, data):
    import torch

    (x, y), (xt, yt) = data
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(512, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=EPS)
    loss_fn = nn.CrossEntropyLoss()
    x, y, xt = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(xt)
    orders = epoch_orders(len(y), args.epochs)

    def train(epoch):
        for idx in _batches(torch.from_numpy(orders[epoch]), args.batch_size):
            loss = loss_fn(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

    def evaluate():
        model.eval()
        with torch.no_grad():
            return float((model(xt).argmax(1).numpy() == yt).mean())

    return timed_epochs(train, evaluate, args.epochs)


CONTENDERS = {"minigrad": run_minigrad, "numpy": run_numpy, "torch": run_torch}


def main():
    compare(__file__, __doc__.splitlines()[0], CONTENDERS, lambda a: f"MNIST CNN conv16-pool-conv32-pool-linear, batch {a.batch_size}, Adam lr {LR}, {a.epochs} epochs", default_epochs=2, default_batch=64)


if __name__ == "__main__":
    main()
