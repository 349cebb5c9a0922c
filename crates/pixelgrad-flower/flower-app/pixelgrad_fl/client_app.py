"""ClientApp: a Flower Python SuperNode as one more node of a pixelgrad federation.

The federation's own clients are pixelgrad nodes that speak the Fleet API themselves
(`pixelgrad federated`, `pg.flower.join` in the browser). This ClientApp lets Flower's own
Python SuperNode join the same federation, with Flower's `secaggplus_mod`, so that pixelgrad's
SecAgg+ client is shown to interoperate with Flower's in one round (`cargo xtask federated
--python K`).

The node trains the federation's dense model (pixelgrad's `mlp`/`seed-mlp` presets: weights
`[in, out]` and biases alternating, ReLU between layers, softmax cross-entropy) in NumPy with
Adam, on the shard `pixelgrad federated --write-shard DIR` wrote for its partition (so its data
is the same split every other node makes). Its node config names that folder: `data-dir=DIR`.
Like pixelgrad's default `--share-metrics minimal`, it keeps evaluations of the server's
weights to itself. Without `data-dir` it refuses to train, as before.
"""

import os

import numpy as np

from flwr.app import Context
from flwr.client import NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp


def _layers(params: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs (weight [in, out], bias [out]) of a dense chain, or a clear error."""
    if len(params) % 2:
        raise ValueError(f"expected weight/bias pairs of a dense model, got {len(params)} arrays")
    pairs = []
    for w, b in zip(params[0::2], params[1::2]):
        if w.ndim != 2 or b.ndim != 1 or w.shape[1] != b.shape[0]:
            raise ValueError(f"not a dense layer: weight {w.shape}, bias {b.shape} (dense models only)")
        if pairs and pairs[-1][0].shape[1] != w.shape[0]:
            raise ValueError(f"layer widths do not chain: {pairs[-1][0].shape} then {w.shape}")
        pairs.append((w.astype(np.float32).copy(), b.astype(np.float32).copy()))
    return pairs


def _forward(layers, x):
    acts = [x]
    for i, (w, b) in enumerate(layers):
        z = acts[-1] @ w + b
        acts.append(np.maximum(z, 0.0) if i + 1 < len(layers) else z)
    return acts


def _grads(layers, x, y):
    """Mean softmax cross-entropy and its gradients for one batch."""
    acts = _forward(layers, x)
    logits = acts[-1]
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = float(-np.log(p[np.arange(n), y] + 1e-12).mean())
    d = p
    d[np.arange(n), y] -= 1.0
    d /= n
    grads = []
    for i in range(len(layers) - 1, -1, -1):
        w, _ = layers[i]
        grads.append((acts[i].T @ d, d.sum(axis=0)))
        if i > 0:
            d = (d @ w.T) * (acts[i] > 0)
    return loss, grads[::-1]


class ShardClient(NumPyClient):
    def __init__(self, data_dir: str, seed: int):
        self.x = np.load(os.path.join(data_dir, "train_x.npy")).astype(np.float32)
        self.y = np.load(os.path.join(data_dir, "train_y.npy")).astype(np.int64)
        self.x = self.x.reshape(self.x.shape[0], -1)
        self.seed = seed

    def fit(self, parameters, config):
        layers = _layers(parameters)
        epochs = int(config.get("local-epochs", 1))
        batch = int(config.get("batch-size", 32))
        lr = float(config.get("lr", 1e-3))
        rnd = int(config.get("server-round", 0))
        rng = np.random.default_rng(self.seed + rnd)
        m = [(np.zeros_like(w), np.zeros_like(b)) for w, b in layers]
        v = [(np.zeros_like(w), np.zeros_like(b)) for w, b in layers]
        b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
        for _ in range(epochs):
            order = rng.permutation(len(self.y))
            for s in range(0, len(order), batch):
                idx = order[s : s + batch]
                _, grads = _grads(layers, self.x[idx], self.y[idx])
                t += 1
                for k, ((w, b), (gw, gb)) in enumerate(zip(layers, grads)):
                    for j, (param, g) in enumerate(((w, gw), (b, gb))):
                        mk, vk = m[k][j], v[k][j]
                        mk *= b1
                        mk += (1 - b1) * g
                        vk *= b2
                        vk += (1 - b2) * g * g
                        param -= lr * (mk / (1 - b1**t)) / (np.sqrt(vk / (1 - b2**t)) + eps)
        out = [a for pair in layers for a in pair]
        return out, len(self.y), {}

    def evaluate(self, parameters, config):
        raise RuntimeError("evaluation of the server's weights is kept local (as pixelgrad's --share-metrics minimal)")


def _client_fn(context: Context):
    cfg = context.node_config
    data_dir = str(cfg.get("data-dir", ""))
    if not data_dir:
        raise RuntimeError(
            "this Flower App trains pixelgrad models: join with `pixelgrad federated` or pg.flower.join, "
            "or give this SuperNode --node-config data-dir=DIR (from `pixelgrad federated --write-shard DIR`)"
        )
    return ShardClient(data_dir, int(cfg.get("seed", 0))).to_client()


app = ClientApp(client_fn=_client_fn, mods=[secaggplus_mod])
