"""The Python ClientApp's NumPy training (run by scripts/flower-tests.sh with the flwr venv):
its gradients against central finite differences, its refusal of models that are not dense
chains, and a fit on a synthetic shard that lowers the loss and returns the arrays in order."""

import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pixelgrad_fl.client_app import ShardClient, _grads, _layers  # noqa: E402


class ClientAppTest(unittest.TestCase):
    def test_gradients_match_finite_differences(self):
        rng = np.random.default_rng(0)
        layers = [(rng.normal(size=(5, 4)), rng.normal(size=4)), (rng.normal(size=(4, 3)), rng.normal(size=3))]
        x, y = rng.normal(size=(6, 5)), rng.integers(0, 3, 6)
        _, g = _grads(layers, x, y)
        h, worst = 1e-6, 0.0
        for k, pair in enumerate(layers):
            for j, p in enumerate(pair):
                for i in np.ndindex(p.shape):
                    old = p[i]
                    p[i] = old + h
                    lp, _ = _grads(layers, x, y)
                    p[i] = old - h
                    lm, _ = _grads(layers, x, y)
                    p[i] = old
                    worst = max(worst, abs((lp - lm) / (2 * h) - g[k][j][i]))
        self.assertLess(worst, 1e-6)

    def test_refuses_what_is_not_a_dense_chain(self):
        with self.assertRaisesRegex(ValueError, "weight/bias pairs"):
            _layers([np.zeros((2, 3))])
        with self.assertRaisesRegex(ValueError, "not a dense layer"):
            _layers([np.zeros((3, 3, 3, 3)), np.zeros(3)])
        with self.assertRaisesRegex(ValueError, "do not chain"):
            _layers([np.zeros((4, 3)), np.zeros(3), np.zeros((5, 2)), np.zeros(2)])

    def test_fit_lowers_the_loss_and_keeps_the_order(self):
        rng = np.random.default_rng(1)
        x = rng.normal(size=(64, 1, 2, 4)).astype(np.float32)
        y = (x.reshape(64, -1).sum(axis=1) > 0).astype(np.int64)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "train_x.npy"), x)
            np.save(os.path.join(d, "train_y.npy"), y)
            client = ShardClient(d, seed=3)
            params = [rng.normal(size=(8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32),
                      rng.normal(size=(16, 2)).astype(np.float32) * 0.3, np.zeros(2, np.float32)]
            before, _ = _grads(_layers(params), client.x, client.y)
            out, n, metrics = client.fit(params, {"local-epochs": 20, "batch-size": 16, "lr": 0.01, "server-round": 1})
            after, _ = _grads(_layers(out), client.x, client.y)
        self.assertEqual(n, 64)
        self.assertEqual(metrics, {})
        self.assertEqual([a.shape for a in out], [a.shape for a in params])
        self.assertLess(after, 0.5 * before)


if __name__ == "__main__":
    unittest.main()
