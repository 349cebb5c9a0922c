"""flwr's own classes as the oracle of tests/wire.rs (run with the venv's Python).

    python flwr_oracle.py emit [CHUNK [f32]] -> JSON: a train message deflated by flwr (objects,
                                           tree, the PullMessagesResponse a SuperLink sends)
    python flwr_oracle.py check < JSON   -> JSON: what flwr reads from pixelgrad's objects
                                           and PushMessagesRequest
    python flwr_oracle.py dp < JSON      -> JSON: flwr's fixedclipping_mod and LocalDpMod
                                           applied to the same update

CHUNK sets FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE (read when flwr is imported) to force
multi-chunk arrays.
"""

import base64
import json
import os
import sys

if len(sys.argv) > 2:
    os.environ["FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE"] = sys.argv[2]
# "f32" as a third argument leaves out the float64 array (pixelgrad writes float32 only), so
# pixelgrad can re-deflate the same content and must arrive at the same object IDs.
F32_ONLY = len(sys.argv) > 3 and sys.argv[3] == "f32"

import numpy as np  # noqa: E402

from flwr.app import (  # noqa: E402
    Array,
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)
from flwr.app.message import remove_content_from_message  # noqa: E402
from flwr.clientapp.mod import LocalDpMod, fixedclipping_mod  # noqa: E402
from flwr.common.serde import message_to_proto  # noqa: E402
from flwr.proto.fleet_pb2 import PullMessagesResponse, PushMessagesRequest  # noqa: E402
from flwr.proto.message_pb2 import ObjectTree  # noqa: E402
from flwr.supercore.differential_privacy import get_norm  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402
from flwr.supercore.inflatable.inflatable_object import (  # noqa: E402
    get_all_nested_objects,
    get_object_id,
    get_object_tree,
)
from flwr.supercore.inflatable.inflatable_utils import (  # noqa: E402
    inflate_object_from_contents,
    validate_object_content,
)

# The identity a ServerApp process has (the SuperLink node, run 77, task 9).
TaskIdentity.run_id = 77
TaskIdentity.node_id = 1
TaskIdentity.task_id = 9

b64 = lambda b: base64.b64encode(bytes(b)).decode()  # noqa: E731


def content() -> RecordDict:
    return RecordDict(
        {
            "arrays": ArrayRecord(
                {
                    "0.weight": Array(np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
                    "0.bias": Array(np.zeros(4, dtype=np.float32)),
                    "1.bias": Array(np.zeros(4, dtype=np.float32)),
                    "scalar": Array(np.array(2.5, dtype=np.float32)),
                    **({} if F32_ONLY else {"wide": Array(np.arange(10, dtype=np.float64))}),
                }
            ),
            "config": ConfigRecord(
                {
                    "server-round": 3,
                    "lr": 0.01,
                    "name": "é-ünïcode",
                    "flag": True,
                    "big": 2**63 + 5,
                    "neg": -4,
                    "floats": [1.0, 2.5],
                    "raw": b"\x00\x01\xff",
                    "strs": ["a", "b"],
                }
            ),
            "metrics": MetricRecord({"num-examples": 7, "acc": 0.5, "ints": [1, 2, 3]}),
        }
    )


def emit() -> None:
    msg = Message(content(), dst_node_id=1234, message_type="train", group_id="3")
    msg.metadata.__dict__["_message_id"] = msg.object_id
    objects = {oid: b64(o.deflate()) for oid, o in get_all_nested_objects(msg).items()}
    tree = get_object_tree(msg)
    resp = PullMessagesResponse(
        messages_list=[message_to_proto(remove_content_from_message(msg))],
        message_object_trees=[tree],
    )
    print(
        json.dumps(
            {
                "message_id": msg.object_id,
                "objects": objects,
                "pull_response": b64(resp.SerializeToString(deterministic=True)),
                "created_at": msg.metadata.created_at,
                "ttl": msg.metadata.ttl,
            }
        )
    )


def describe(value):
    if isinstance(value, bytes):
        return {"bytes": list(value)}
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return {"bytes_list": [list(v) for v in value]}
    return value


def check() -> None:
    req = json.load(sys.stdin)
    contents = {k: base64.b64decode(v) for k, v in req["objects"].items()}
    for oid, c in contents.items():
        validate_object_content(c)
        assert get_object_id(c) == oid, f"object {oid} does not hash to its id"
    msg = inflate_object_from_contents(req["message_id"], dict(contents), keep_object_contents=True)
    assert isinstance(msg, Message)
    push = PushMessagesRequest.FromString(base64.b64decode(req["push_request"]))
    pm = push.messages_list[0]
    tree = push.message_object_trees[0]

    def tree_ids(t: ObjectTree):
        out = []
        for c in t.children:
            out += tree_ids(c)
        return out + [t.object_id]

    out = {
        "message_id_matches_object": msg.object_id == req["message_id"],
        "metadata": {
            "run_id": msg.metadata.run_id,
            "src_node_id": msg.metadata.src_node_id,
            "dst_node_id": msg.metadata.dst_node_id,
            "reply_to_message_id": msg.metadata.reply_to_message_id,
            "group_id": msg.metadata.group_id,
            "message_type": msg.metadata.message_type,
            "ttl": msg.metadata.ttl,
            "created_at": msg.metadata.created_at,
        },
        "arrays": {
            name: {"dtype": a.dtype, "shape": list(a.shape), "values": a.numpy().ravel().tolist()}
            for name, a in msg.content.array_records["arrays"].items()
        },
        "metrics": {k: v for k, v in msg.content.metric_records["metrics"].items()},
        "config": {k: describe(v) for k, v in msg.content.config_records["config"].items()},
        "push": {
            "node_id": push.node.node_id,
            "message_id": pm.metadata.message_id,
            "has_content": pm.HasField("content"),
            "content_items": len(pm.content.items),
            "tree_ids": tree_ids(tree),
            "runtime": list(push.clientapp_runtime_list),
        },
    }
    print(json.dumps(out))


def dp() -> None:
    req = json.load(sys.stdin)
    old = [np.asarray(a, dtype=np.float32).reshape(s) for a, s in zip(req["old"], req["shapes"])]
    new = [np.asarray(a, dtype=np.float32).reshape(s) for a, s in zip(req["new"], req["shapes"])]
    names = [f"p{i}" for i in range(len(old))]
    ins = Message(
        RecordDict(
            {
                "arrays": ArrayRecord({n: Array(a) for n, a in zip(names, old)}),
                "config": ConfigRecord({"clipping_norm": req["clip"]}),
            }
        ),
        dst_node_id=5,
        message_type="train",
    )
    ctxt = Context(run_id=1, node_id=5, node_config={}, state=RecordDict(), run_config={})

    def call_next(msg, _ctxt):
        return Message(
            RecordDict(
                {
                    "arrays": ArrayRecord({n: Array(a.copy()) for n, a in zip(names, new)}),
                    "metrics": MetricRecord({"num-examples": 1}),
                }
            ),
            reply_to=msg,
        )

    clipped = fixedclipping_mod(ins, ctxt, call_next).content["arrays"]
    ldp = LocalDpMod(req["clip"], req["sensitivity"], req["epsilon"], req["delta"])
    noised = ldp(ins, ctxt, call_next).content["arrays"]
    std = req["sensitivity"] * np.sqrt(2 * np.log(1.25 / req["delta"])) / req["epsilon"]
    print(
        json.dumps(
            {
                "norm": get_norm([n - o for n, o in zip(new, old)]),
                "clipped": [clipped[n].numpy().ravel().tolist() for n in names],
                "noised": [noised[n].numpy().ravel().tolist() for n in names],
                "std": float(std),
            }
        )
    )


if __name__ == "__main__":
    {"emit": emit, "check": check, "dp": dp}[sys.argv[1]]()
