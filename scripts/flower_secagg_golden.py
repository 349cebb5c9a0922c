#!/usr/bin/env python3
"""Golden vectors of Flower's SecAgg+ (flwr 1.42) for pixelgrad's own implementation.

Run with the venv of scripts/flower-venv.sh:

    target/flwr-venv/bin/python scripts/flower_secagg_golden.py \
        crates/pixelgrad-flower/tests/golden/secagg.json

Everything random in Flower's code is fed from fixed seeds here, so every value below is
reproducible and the Rust tests (crates/pixelgrad-flower/tests/secagg_golden.rs) can replay it
stage by stage:

- `prg`: `pseudo_rand_gen` (numpy's legacy `RandomState` seeded with the XOR of the seed's
  little-endian 32-bit words, `randint(0, mod_range - 1)` per array) for several seeds, moduli
  and shapes, plus the SHA-256 of a long stream that crosses MT19937's 624-word refills;
- `uniform`: `np.random.rand` after `np.random.seed(s)` (stochastic rounding draws from it);
- `quantize`: `quantize(...)` after `np.random.seed(s)`;
- `keys`: P-384 keys from fixed scalars (PKCS#8 and SubjectPublicKeyInfo PEM, as
  `private_key_to_bytes` / `public_key_to_bytes` write them) and `generate_shared_key` for
  pairs (ECDH, HKDF-SHA256, urlsafe base64);
- `fernet`: Fernet tokens for a fixed IV and time (`Fernet._encrypt_from_parts`);
- `shamir`: `create_shares` with PyCryptodome's coefficients drawn from a fixed byte stream,
  and `combine_shares` of a subset;
- `protocol`: a whole round of flwr's unmodified `SecAggPlusWorkflow` driving flwr's
  unmodified `secaggplus_mod` on four nodes through an in-process grid (one scenario without
  dropout, one where a node fails after sharing its keys), with every ConfigRecord in and out
  of every node as the protobuf bytes Flower sends, the entropy each node consumed, and the
  aggregate the server computed.

The byte streams are SHA-256 in counter mode: block i of stream `label` is
SHA-256(label || i as 8 little-endian bytes); bytes are taken in order.
"""

import base64
import hashlib
import importlib
import json
import random
import sys
from concurrent.futures import Executor

import numpy as np
from cryptography.hazmat.primitives.asymmetric import ec
import cryptography.fernet as cfernet

import Crypto.Protocol.SecretSharing as pycryptodome_sss
import flwr
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.app.error import Error
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.secure_aggregation.crypto import shamir
from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
    decrypt,
    encrypt,
    generate_shared_key,
)
from flwr.common.secure_aggregation.quantization import quantize
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen
from flwr.common.serde import config_record_to_proto
from flwr.compat.common import recorddict_compat as compat
from flwr.server import ServerConfig
from flwr.server.client_manager import SimpleClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.compat.legacy_context import LegacyContext
from flwr.server.strategy import FedAvg
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD, MAIN_PARAMS_RECORD, Key
from flwr.supercore.primitives.asymmetric import private_key_to_bytes, public_key_to_bytes
from flwr.supercore.task_identity import TaskIdentity

assert flwr.__version__ == "1.42.0", flwr.__version__
# the ServerApp's identity (messages it creates read it)
TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 1, 1

# the module (its package re-exports the function under the same name)
mod = importlib.import_module("flwr.client.mod.secure_aggregation.secaggplus_mod")
b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
P384_ORDER = int(
    "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
    16,
)


class Stream:
    """SHA-256 counter-mode bytes: block i = SHA-256(label || i as u64 LE)."""

    def __init__(self, label: str):
        self.label = label.encode()
        self.counter = 0
        self.buf = b""
        self.taken = 0

    def take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.buf += hashlib.sha256(self.label + self.counter.to_bytes(8, "little")).digest()
            self.counter += 1
        out, self.buf = self.buf[:n], self.buf[n:]
        self.taken += n
        return out


def scalar_from(stream: Stream) -> int:
    """A P-384 secret scalar in 1..n-1 from 48 stream bytes (the Rust test reads the scalars)."""
    return int.from_bytes(stream.take(48), "big") % (P384_ORDER - 1) + 1


class SerialExecutor(Executor):
    """Runs `map` in order, so Shamir's coefficient draws happen chunk after chunk."""

    def __init__(self, max_workers=None):
        pass

    def map(self, fn, *iterables, **_):
        return list(map(fn, *iterables))

    def __exit__(self, *a):
        return False


# Shamir's chunks are split in a thread pool; in order here (the draws then follow the chunks).
shamir.ThreadPoolExecutor = SerialExecutor

# Every random byte Flower's client takes goes through here (os.urandom in the mod, Fernet's
# IV, PyCryptodome's Shamir coefficients), from the stream of the node being run.
CURRENT = {"stream": None, "time": 1_700_000_000}


def _urandom(n: int) -> bytes:
    return CURRENT["stream"].take(n)


class _Os:
    urandom = staticmethod(_urandom)


mod.os = _Os
cfernet.os = _Os
pycryptodome_sss.rng = _urandom


class _Time:
    @staticmethod
    def time():
        return CURRENT["time"]


cfernet.time = _Time


def cfg_bytes(record: ConfigRecord) -> str:
    return b64(config_record_to_proto(record).SerializeToString())


# ---------------------------------------------------------------------------------------------


def golden_prg():
    out = []
    seeds = [
        bytes(range(32)),
        hashlib.sha256(b"private mask seed").digest(),
        # a pairwise seed is the 44-byte urlsafe base64 text of the HKDF output
        base64.urlsafe_b64encode(hashlib.sha256(b"pairwise").digest()),
    ]
    for seed in seeds:
        for mod_range in [1 << 32, 1 << 20, 1000]:
            shapes = [(1,), (2, 3), (), (7,)]
            arrs = pseudo_rand_gen(seed, mod_range, shapes)
            out.append(
                {
                    "seed": b64(seed),
                    "mod_range": mod_range,
                    "shapes": [list(s) for s in shapes],
                    "values": [a.reshape(-1).tolist() for a in arrs],
                }
            )
    # a long stream: several refills of the 624-word state, rejection included
    seed = hashlib.sha256(b"long").digest()
    (long,) = pseudo_rand_gen(seed, 1 << 32, [(5000,)])
    (long_small,) = pseudo_rand_gen(seed, 3, [(5000,)])
    return {
        "cases": out,
        "long": {
            "seed": b64(seed),
            "mod_range": 1 << 32,
            "n": 5000,
            "head": long[:8].tolist(),
            "sha256_i64le": hashlib.sha256(long.astype("<i8").tobytes()).hexdigest(),
        },
        "long_mod3": {
            "seed": b64(seed),
            "mod_range": 3,
            "n": 5000,
            "sha256_i64le": hashlib.sha256(long_small.astype("<i8").tobytes()).hexdigest(),
        },
    }


def golden_uniform():
    np.random.seed(12345)
    u = np.random.rand(1000)
    return {"seed": 12345, "head_f64le": u[:8].astype("<f8").tobytes().hex(), "sha256_f64le": hashlib.sha256(u.astype("<f8").tobytes()).hexdigest()}


def golden_quantize():
    cases = []
    rs = np.random.RandomState(7)
    for (clip, target, seed) in [(8.0, 1 << 22, 3), (1.0, 1 << 16, 4), (0.5, 100, 5)]:
        arrs = [
            (rs.standard_normal((3, 4)) * clip * 0.8).astype(np.float32),
            np.array([clip * 3, -clip * 3, 0.0, clip, -clip], dtype=np.float32),
            np.array(0.123, dtype=np.float32),
        ]
        np.random.seed(seed)
        q = quantize(arrs, clip, target)
        cases.append(
            {
                "clipping_range": clip,
                "target_range": target,
                "np_seed": seed,
                "inputs": [{"shape": list(a.shape), "values": a.reshape(-1).tolist()} for a in arrs],
                "outputs": [np.asarray(x).reshape(-1).tolist() for x in q],
            }
        )
    return cases


def key_pair(scalar: int):
    sk = ec.derive_private_key(scalar, ec.SECP384R1())
    return sk, sk.public_key()


def golden_keys():
    st = Stream("keys")
    scalars = [scalar_from(st) for _ in range(3)]
    keys = []
    for s in scalars:
        sk, pk = key_pair(s)
        keys.append(
            {
                "scalar": format(s, "096x"),
                "sk_pem": private_key_to_bytes(sk).decode(),
                "pk_pem": public_key_to_bytes(pk).decode(),
            }
        )
    shared = []
    for i in range(3):
        for j in range(3):
            if i != j:
                sk, _ = key_pair(scalars[i])
                _, pk = key_pair(scalars[j])
                shared.append({"sk": i, "pk": j, "key": generate_shared_key(sk, pk).decode()})
    return {"keys": keys, "shared": shared}


def golden_fernet():
    key = base64.urlsafe_b64encode(hashlib.sha256(b"fernet key").digest())
    f = cfernet.Fernet(key)
    cases = []
    for n in [0, 1, 15, 16, 17, 100]:
        pt = hashlib.sha256(b"pt%d" % n).digest() * 4
        pt = pt[:n]
        iv = hashlib.sha256(b"iv%d" % n).digest()[:16]
        t = 1_700_000_000 + n
        token = f._encrypt_from_parts(pt, t, iv)
        assert decrypt(key, token) == pt
        cases.append({"plaintext": b64(pt), "iv": b64(iv), "time": t, "token": token.decode()})
    return {"key": key.decode(), "cases": cases}


def golden_shamir():
    cases = []
    for secret, t, n in [(bytes(range(32)), 2, 3), (b"x" * 5, 3, 5), (hashlib.sha256(b"s").digest() * 9 + b"tail", 4, 7)]:
        CURRENT["stream"] = st = Stream("shamir-%d-%d-%d" % (len(secret), t, n))
        shares = shamir.create_shares(secret, t, n)
        subset = [shares[i] for i in range(n - t, n)]
        assert shamir.combine_shares(subset) == secret
        cases.append(
            {
                "secret": b64(secret),
                "threshold": t,
                "num": n,
                "stream": st.label.decode(),
                "stream_bytes": st.taken,
                "shares": [b64(s) for s in shares],
                "combine_from": list(range(n - t, n)),
            }
        )
    return cases


# ---- a whole round through SecAggPlusWorkflow and secaggplus_mod ----------------------------


class Proxy(ClientProxy):
    def get_properties(self, *a, **k):
        raise NotImplementedError

    def get_parameters(self, *a, **k):
        raise NotImplementedError

    def fit(self, *a, **k):
        raise NotImplementedError

    def evaluate(self, *a, **k):
        raise NotImplementedError

    def reconnect(self, *a, **k):
        raise NotImplementedError


class FakeGrid:
    """Delivers each message to the node's `secaggplus_mod` in-process and records the configs."""

    def __init__(self, nodes, fail_at=None):
        self.nodes = nodes  # nid -> dict(state=Context, stream, scalars, params, num_examples, np_seed)
        self.fail_at = fail_at or {}  # nid -> stage at which the node fails (an error reply)
        self.log = {nid: [] for nid in nodes}

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for m in messages:
            nid = m.metadata.dst_node_id
            node = self.nodes[nid]
            # what the node receives (the workflow mutates the content later; copy the bytes now)
            cfg = m.content.config_records[RECORD_KEY_CONFIGS]
            stage = cfg["stage"]
            entry = {"stage": stage, "in": cfg_bytes(cfg), "group_id": m.metadata.group_id}
            m.metadata.__dict__["_message_id"] = hashlib.sha256(f"{nid}{stage}".encode()).hexdigest()
            m.metadata.__dict__["_src_node_id"] = 1
            if self.fail_at.get(nid) == stage:
                reply = Message(Error(code=0, reason="node gone"), reply_to=m)
                entry["out"] = None
            else:
                CURRENT["stream"] = node["stream"]
                node["pending_scalars"] = list(node["scalars"])
                content = RecordDict()
                for k, r in m.content.config_records.items():
                    content.config_records[k] = ConfigRecord(dict(r))
                for k, r in m.content.array_records.items():
                    content.array_records[k] = r

                def train(msg, ctxt, node=node):
                    np.random.seed(node["np_seed"])
                    fitres = FitRes(
                        status=Status(code=Code.OK, message="Success"),
                        parameters=ndarrays_to_parameters(node["params"]),
                        num_examples=node["num_examples"],
                        metrics={},
                    )
                    return Message(compat.fitres_to_recorddict(fitres, True), reply_to=msg)

                msg_in = Message(content=content, dst_node_id=nid, message_type=m.metadata.message_type, group_id=m.metadata.group_id)
                msg_in.metadata.__dict__["_message_id"] = m.metadata.message_id
                msg_in.metadata.__dict__["_src_node_id"] = 1
                reply = mod.secaggplus_mod(msg_in, node["context"], train)
                out = reply.content.config_records[RECORD_KEY_CONFIGS]
                entry["out"] = cfg_bytes(out)
                if stage == "collect_masked_vectors":
                    entry["fitres_num_examples"] = int(reply.content.metric_records["fitres.num_examples"]["num_examples"])
            self.log[nid].append(entry)
            replies.append(reply)
        return replies


def run_round(label: str, fail_at=None, num_shares=4, threshold=3):
    random.seed(2024)  # the workflow shuffles the sampled node IDs with `random`
    nids = [101, 202, 303, (1 << 63) + 404]  # one ID above i64::MAX (Flower sends it as uint64)
    shapes = [(2, 3), (3,), ()]
    rs = np.random.RandomState(11)
    nodes = {}
    for k, nid in enumerate(nids):
        st = Stream(f"{label}-node-{nid}")
        scalars = [scalar_from(st), scalar_from(st)]
        params = [(rs.standard_normal(s) * 0.5).astype(np.float32) for s in shapes]
        nodes[nid] = {
            "context": Context(run_id=1, node_id=nid, node_config={}, state=RecordDict(), run_config={}),
            "stream": Stream(f"{label}-node-{nid}-bytes"),
            "scalars": scalars,
            "params": params,
            "num_examples": [120, 75, 300, 42][k],
            "np_seed": 1000 + k,
        }

    def gen_keys():
        # the node being run is the one whose stream is current
        node = next(n for n in nodes.values() if n["stream"] is CURRENT["stream"])
        sk, pk = key_pair(node["pending_scalars"].pop(0))
        return sk, pk

    mod.generate_key_pairs = gen_keys
    grid = FakeGrid(nodes, fail_at)
    cm = SimpleClientManager()
    for nid in nids:
        cm.register(_proxy(nid))
    init = [np.zeros(s, dtype=np.float32) for s in shapes]
    captured = {}

    class Capture(FedAvg):
        """FedAvg that keeps what SecAggPlusWorkflow hands it (the unmasked mean)."""

        def aggregate_fit(self, server_round, results, failures):
            captured["params"] = parameters_to_ndarrays(results[0][1].parameters)
            return super().aggregate_fit(server_round, results, failures)

    strategy = Capture(min_fit_clients=4, min_available_clients=4, initial_parameters=ndarrays_to_parameters(init))
    ctx = LegacyContext(
        Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}),
        config=ServerConfig(num_rounds=1),
        strategy=strategy,
        client_manager=cm,
    )
    ctx.state.array_records[MAIN_PARAMS_RECORD] = compat.parameters_to_arrayrecord(ndarrays_to_parameters(init), True)
    cfg = ConfigRecord()
    cfg[Key.CURRENT_ROUND] = 1
    cfg[Key.START_TIME] = 0.0
    ctx.state.config_records[MAIN_CONFIGS_RECORD] = cfg
    workflow = SecAggPlusWorkflow(num_shares=num_shares, reconstruction_threshold=threshold, max_weight=400.0, clipping_range=4.0, quantization_range=1 << 20, modulus_range=1 << 32)
    workflow(grid, ctx)
    agg = captured["params"]
    # what the weighted average would be in clear (over the nodes that sent masked vectors)
    alive = [nid for nid in nids if not (fail_at or {}).get(nid)]
    w = np.array([nodes[n]["num_examples"] for n in alive], dtype=np.float64)
    plain = [sum(nodes[n]["params"][i].astype(np.float64) * w[k] for k, n in enumerate(alive)) / w.sum() for i in range(len(shapes))]
    return {
        "num_shares": num_shares,
        "threshold": threshold,
        "fail_at": {str(k): v for k, v in (fail_at or {}).items()},
        "nodes": [
            {
                "nid": str(nid),
                "scalars": [format(s, "096x") for s in nodes[nid]["scalars"]],
                "stream": nodes[nid]["stream"].label.decode(),
                "stream_bytes": nodes[nid]["stream"].taken,
                "np_seed": nodes[nid]["np_seed"],
                "num_examples": nodes[nid]["num_examples"],
                "params": [{"shape": list(a.shape), "values": a.reshape(-1).tolist()} for a in nodes[nid]["params"]],
                "stages": grid.log[nid],
            }
            for nid in nids
        ],
        # the workflow's unmasked mean, as exact doubles in little-endian hex (JSON readers
        # need not round-trip floats)
        "aggregate": [
            {"shape": list(a.shape), "f64le": np.asarray(a, dtype="<f8").reshape(-1).tobytes().hex()} for a in agg
        ],
        "plain_weighted_mean": [np.asarray(a).reshape(-1).tolist() for a in plain],
    }


def _proxy(nid):
    p = Proxy(str(nid))
    p.node_id = nid
    return p


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "secagg.json"
    golden = {
        "flwr_version": flwr.__version__,
        "numpy_version": np.__version__,
        "prg": golden_prg(),
        "uniform": golden_uniform(),
        "quantize": golden_quantize(),
        "keys": golden_keys(),
        "fernet": golden_fernet(),
        "shamir": golden_shamir(),
        "protocol": {
            "no_dropout": run_round("round-a"),
            "dropout_after_share_keys": run_round("round-b", fail_at={303: "collect_masked_vectors"}),
        },
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
