"""ServerApp: Flower's strategies (FedAvg, FedAdam; optional client-side-clipping central DP)
driving pixelgrad nodes; with `secagg-shares` > 0, Flower's unmodified `SecAggPlusWorkflow`
(legacy FedAvg under `DefaultWorkflow`, which SecAgg+ needs) so that the server only learns the
sum of the nodes' updates.

Run config (see pyproject.toml): the initial parameters come from a pixelgrad safetensors file
whose metadata "pixelgrad.order" lists the parameter names in the model's order; every round's
aggregated evaluation metrics are appended to `results-file` as one JSON line, and the final
global parameters are written to `final-file` (loadable by `pixelgrad eval`).
"""

import hashlib
import json
import time

import numpy as np

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, MetricRecord, RecordDict
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import (
    DifferentialPrivacyClientSideFixedClipping,
    FedAdam,
    FedAvg,
)
from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords

from . import safetensors_io

app = ServerApp()


def _initial_arrays(path: str) -> tuple[ArrayRecord, dict[str, str]]:
    tensors, meta = safetensors_io.read(path)
    order = [n for n in meta.get("pixelgrad.order", "").split(",") if n]
    if sorted(order) != sorted(tensors):
        raise ValueError(f"{path}: metadata 'pixelgrad.order' does not list the file's tensors")
    return ArrayRecord({name: Array(tensors[name]) for name in order}), meta


def _wait_for_nodes(grid: Grid, expected: int, timeout: float) -> int:
    t0 = time.time()
    while True:
        n = len(list(grid.get_node_ids()))
        if n >= expected:
            return n
        if time.time() - t0 > timeout:
            raise RuntimeError(f"only {n} of {expected} nodes connected within {timeout:.0f} s")
        time.sleep(0.5)


def _secagg_main(grid: Grid, context: Context) -> None:
    """FedAvg through SecAggPlusWorkflow; one JSON row per round as in the Message API path."""
    from flwr.common import ndarrays_to_parameters
    from flwr.server import ServerConfig
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.strategy import FedAvg as LegacyFedAvg
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow

    cfg = context.run_config
    rounds = int(cfg["num-server-rounds"])
    expected = int(cfg["expected-nodes"])
    results_file = str(cfg.get("results-file", ""))
    arrays, meta = _initial_arrays(str(cfg["init-file"]))
    names = list(arrays.keys())
    t_start = time.time()
    pending: dict = {}

    def fit_metrics(results):
        # SecAggPlusWorkflow hands the strategy one result per node that sent a masked vector
        pending["train_replies"] = len(results)
        return {}

    def evaluate_metrics(results):
        total = sum(n for n, _ in results)
        if total:
            acc = sum(n * float(m.get("accuracy", 0.0)) for n, m in results) / total
            pending["evaluate"] = {"accuracy": acc}
        pending["evaluate_replies"] = len(results)
        return {}

    def digest(ndarrays):
        h = hashlib.sha256()
        for a in ndarrays:
            h.update(np.ascontiguousarray(a, dtype=np.float32).tobytes())
        return h.hexdigest()[:16]

    def after_fit(server_round, ndarrays, _config):
        # DefaultWorkflow calls this after every fit round with the current global parameters
        # (and once before the first, round 0); a round SecAgg+ halted leaves them as they were
        if server_round == 0:
            pending["initial_params_digest"] = digest(ndarrays)
            return None
        initial = pending.pop("initial_params_digest", None)
        row = {"round": server_round, "seconds": round(time.time() - t_start, 3), "secagg": True, **pending}
        row["params_digest"] = digest(ndarrays)
        if initial:
            row["initial_params_digest"] = initial
        pending.clear()
        print("pixelgrad-round " + json.dumps(row), flush=True)
        if results_file:
            with open(results_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        if server_round == rounds and cfg.get("final-file"):
            tensors = {n: np.asarray(a, dtype=np.float32) for n, a in zip(names, ndarrays)}
            safetensors_io.write(str(cfg["final-file"]), tensors, meta)
        return None

    def fit_config(server_round):
        return {
            "server-round": server_round,
            "local-epochs": int(cfg["local-epochs"]),
            "batch-size": int(cfg["batch-size"]),
            "lr": float(cfg["lr"]),
        }

    strategy = LegacyFedAvg(
        fraction_fit=1.0,
        fraction_evaluate=1.0,
        min_fit_clients=1,
        min_evaluate_clients=1,
        min_available_clients=1,  # _wait_for_nodes waited for them all; a node may leave
        initial_parameters=ndarrays_to_parameters([a.numpy() for a in arrays.values()]),
        on_fit_config_fn=fit_config,
        on_evaluate_config_fn=lambda r: {"server-round": r},
        fit_metrics_aggregation_fn=fit_metrics,
        evaluate_metrics_aggregation_fn=evaluate_metrics,
        evaluate_fn=after_fit,
    )
    connected = _wait_for_nodes(grid, expected, float(cfg["connect-timeout"]))
    shares, threshold = int(cfg["secagg-shares"]), int(cfg["secagg-threshold"])
    print(
        f"pixelgrad: {connected} nodes connected; {rounds} rounds of fedavg through SecAgg+ "
        f"({shares} shares, threshold {threshold})",
        flush=True,
    )
    class TimedSecAggPlus(SecAggPlusWorkflow):
        """Flower's workflow unchanged, with each stage's wall time on the server (sending its
        messages, waiting for the replies and the server's own work) in the round's row."""

        def _timed(self, name, stage, *args):
            t = time.perf_counter()
            ok = stage(*args)
            pending.setdefault("server_stage_seconds", {})[name] = round(time.perf_counter() - t, 4)
            if not ok:
                pending["secagg_halted_at"] = name
            return ok

        def setup_stage(self, *a):
            return self._timed("setup", super().setup_stage, *a)

        def share_keys_stage(self, *a):
            return self._timed("share_keys", super().share_keys_stage, *a)

        def collect_masked_vectors_stage(self, *a):
            return self._timed("collect_masked_vectors", super().collect_masked_vectors_stage, *a)

        def unmask_stage(self, *a):
            return self._timed("unmask", super().unmask_stage, *a)

    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy)
    workflow = DefaultWorkflow(
        fit_workflow=TimedSecAggPlus(
            num_shares=shares,
            reconstruction_threshold=threshold,
            max_weight=float(cfg.get("secagg-max-weight", 1000.0)),
            timeout=float(cfg["round-timeout"]),
        )
    )
    workflow(grid, legacy)


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    if int(cfg.get("secagg-shares", 0)) > 0:
        if str(cfg["dp"]) != "off" or str(cfg["strategy"]) != "fedavg":
            raise ValueError("secagg runs FedAvg without server-side DP (use the nodes' own DP)")
        _secagg_main(grid, context)
        return
    rounds = int(cfg["num-server-rounds"])
    expected = int(cfg["expected-nodes"])
    results_file = str(cfg.get("results-file", ""))
    arrays, meta = _initial_arrays(str(cfg["init-file"]))

    # Aggregated metrics of the round in progress; `after_round` (Flower calls it after the
    # round's train and evaluate steps) writes them out. A round whose aggregation was skipped
    # (no valid replies) has no entry for that step.
    pending: dict = {}
    t_start = time.time()

    def train_aggr(records: list[RecordDict], weight_key: str) -> MetricRecord:
        m = aggregate_metricrecords(records, weight_key)
        pending["train"] = {k: float(v) for k, v in m.items()}
        pending["train_replies"] = len(records)
        return m

    def eval_aggr(records: list[RecordDict], weight_key: str) -> MetricRecord:
        m = aggregate_metricrecords(records, weight_key)
        pending["evaluate"] = {k: float(v) for k, v in m.items()}
        pending["evaluate_replies"] = len(records)
        return m

    def after_round(server_round: int, current: ArrayRecord) -> MetricRecord | None:
        if server_round == 0:
            return None
        row = {"round": server_round, "seconds": round(time.time() - t_start, 3), **pending}
        pending.clear()
        print("pixelgrad-round " + json.dumps(row), flush=True)
        if results_file:
            with open(results_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        if server_round == rounds and cfg.get("final-file"):
            tensors = {k: v.numpy() for k, v in current.items()}
            safetensors_io.write(str(cfg["final-file"]), tensors, meta)
        return None

    common = dict(
        fraction_train=1.0,
        fraction_evaluate=1.0,
        min_train_nodes=1,
        min_evaluate_nodes=1,
        min_available_nodes=1,
        train_metrics_aggr_fn=train_aggr,
        evaluate_metrics_aggr_fn=eval_aggr,
    )
    name = str(cfg["strategy"])
    if name == "fedavg":
        strategy = FedAvg(**common)
    elif name == "fedadam":
        strategy = FedAdam(**common, eta=0.01, eta_l=float(cfg["lr"]), tau=1e-3)
    else:
        raise ValueError(f"unknown strategy '{name}' (fedavg, fedadam)")
    if str(cfg["dp"]) == "client-clip":
        strategy = DifferentialPrivacyClientSideFixedClipping(
            strategy,
            noise_multiplier=float(cfg["noise-multiplier"]),
            clipping_norm=float(cfg["clipping-norm"]),
            num_sampled_clients=expected,
        )
    elif str(cfg["dp"]) != "off":
        raise ValueError(f"unknown dp '{cfg['dp']}' (off, client-clip)")

    connected = _wait_for_nodes(grid, expected, float(cfg["connect-timeout"]))
    print(f"pixelgrad: {connected} nodes connected; {rounds} rounds of {name}", flush=True)
    train_config = ConfigRecord(
        {
            "local-epochs": int(cfg["local-epochs"]),
            "batch-size": int(cfg["batch-size"]),
            "lr": float(cfg["lr"]),
        }
    )
    strategy.start(
        grid=grid,
        initial_arrays=arrays,
        num_rounds=rounds,
        timeout=float(cfg["round-timeout"]),
        train_config=train_config,
        evaluate_fn=after_round,
    )
