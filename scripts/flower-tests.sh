#!/usr/bin/env bash
# Federated training with Flower, end to end on this machine (called by scripts/test.sh):
# a small federation through an unmodified flwr 1.42 SuperLink — 2 headless Chromium tabs
# (webgpu, webgl) + 1 native node on non-IID digits shards, 4 rounds, the last tab closed
# mid-round 2 — over TLS (a throwaway CA every client verifies) with SuperLink node
# authentication on and client-side clipping (clip 50, noise multiplier 1e-4: training as without; the
# federation's epsilon from the server's noise reported
# after every round; every node's persistent key registered with `flwr supernode register`
# first; a node with an unregistered key refused), then the CLI's error for an unreachable
# SuperLink; then SecAgg+ (flwr's SecAggPlusWorkflow) with 2 tabs (webgpu, webgl), 2 native
# nodes and one of Flower's own Python SuperNodes (secaggplus_mod), one native node leaving
# after key sharing; then SecAgg+ below its threshold (round 1 halts cleanly, round 2 goes on);
# then distributed DP under SecAgg+ (a WebGPU tab, a CPU tab and a native node each adding their
# share of noise). The wire, fault, hostile-server and TLS/node-auth tests of crates/pixelgrad-flower
# run with the native tests (they need the venv made here).
# Usage: bash scripts/flower-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/flower-venv.sh >/dev/null
[ -d web/node_modules/playwright-core ] || (cd web && npm ci --silent)

echo "== the flower-app's Python ClientApp (NumPy training behind secaggplus_mod)"
target/flwr-venv/bin/python -B crates/pixelgrad-flower/flower-app/tests/test_client_app.py

echo "== a federation over TLS with node authentication: 4 rounds, 2 tabs + 1 native node, one tab closed mid-round 2, client clipping (server epsilon after every round)"
# The bytes check: request bodies per round at most 10 % over the parameter payload plus 16 KiB
# for Flower's fixed per-round object traffic (~8 KB: object pulls and pushes with their IDs,
# object heads, npy headers), which digits' small payload (77 KB) would not absorb alone.
# --debug-cli: the dev-profile CLI that the native tests already built (a release build with
# both GPU backends would add minutes on a fresh 2-core machine).
out=$(cargo xtask federated --rounds 4 --browsers 2 --native 1 --dataset digits --alpha 0.5 \
        --epochs 3 --lr 0.005 --drop-one --tls --node-auth --dp client-clip:50,0.0001 --debug-cli --json)
echo "$out" | tail -n 8 | grep -v '^{' || true
summary=$(echo "$out" | tail -n 1)
node -e '
  const s = JSON.parse(process.argv[1]);
  const fail = (m) => { console.error("federation check failed: " + m); process.exit(1); };
  if (s.rounds !== 4) fail(`rounds ${s.rounds}`);
  // Chance is 0.1; two non-IID digits shards after the drop reach ~0.8.
  if (!(s.final_accuracy >= 0.75)) fail(`final accuracy ${s.final_accuracy} < 0.75`);
  if (s.flwr_version !== "1.42.0") fail(`flwr ${s.flwr_version}`);
  const closed = s.clients.filter((c) => c.closed_mid_round);
  if (closed.length !== 1) fail("expected one tab closed mid-round");
  const last = s.per_round[3];
  if (last.train_replies !== 2) fail(`round 4 had ${last.train_replies} train replies, expected 2 after the tab closed`);
  if (!(s.bytes_up > 0 && s.bytes_down > 0)) fail("no traffic counted");
  for (const c of s.clients) if (c.other_requests) fail(`tab ${c.node} made non-Fleet requests`);
  if (!(s.tls && s.node_auth)) fail("the federation did not run with TLS and node authentication");
  if (!/is not registered/.test(s.unregistered_refused || "")) fail(`an unregistered node was not refused: ${s.unregistered_refused}`);
  // client-side clipping: the federation epsilon from the server noise, after every round
  const eps = s.per_round.map((r) => r.server_epsilon);
  if (!eps.every((e, i) => e > 0 && (i === 0 || e > eps[i - 1]))) fail(`server epsilon per round ${JSON.stringify(eps)} is not positive and growing`);
  if (s.server_epsilon !== eps[3]) fail(`server_epsilon ${s.server_epsilon} is not that of the last round, ${eps[3]}`);
  console.log(`federation ok (TLS, node authentication, client clipping: server epsilon ${eps.map((e) => e.toExponential(2)).join(", ")}): final accuracy ${s.final_accuracy.toFixed(4)}, ${s.clients.length} nodes, ${s.bytes_up} bytes up, ${s.bytes_down} down`);
' "$summary"

echo "== SecAgg+ through flwr's unmodified SecAggPlusWorkflow: 2 tabs + 2 native nodes + 1 Flower Python SuperNode, 5 shares, threshold 3, one native node leaving after key sharing"
out=$(cargo xtask federated --rounds 2 --browsers 2 --native 2 --python 1 --dataset digits --alpha 0.5 \
        --epochs 3 --lr 0.005 --secagg 5,3 --drop-one --debug-cli --no-build --json)
summary=$(echo "$out" | tail -n 1)
node -e '
  const s = JSON.parse(process.argv[1]);
  const fail = (m) => { console.error("SecAgg+ federation check failed: " + m); process.exit(1); };
  if (s.rounds !== 2) fail(`rounds ${s.rounds}`);
  if (!s.secagg || s.secagg.shares !== 5 || s.secagg.threshold !== 3) fail(`secagg ${JSON.stringify(s.secagg)}`);
  const left = s.clients.filter((c) => c.left_after_stage === "share_keys");
  if (left.length !== 1) fail("expected one node to leave after key sharing");
  // the 4 that stayed: 2 tabs, a native node and the Python SuperNode
  for (const r of s.per_round) if (r.train_replies !== 4) fail(`round ${r.round} unmasked ${r.train_replies} updates, expected the 4 remaining`);
  if (s.clients.filter((c) => c.kind === "python").length !== 1) fail("expected the Python SuperNode in the clients");
  // the nodes share minimal metrics (the default): no evaluation result reaches the server
  for (const r of s.per_round) if (r.evaluate || r.evaluate_replies) fail(`round ${r.round}: the server got evaluation results ${JSON.stringify(r.evaluate)}`);
  for (const c of s.clients.filter((c) => c.kind === "native" && !c.left_after_stage)) {
    if (c.rounds !== 2 || !c.secagg) fail(`node ${c.node}: ${c.rounds} rounds, secagg ${c.secagg}`);
  }
  const tabs = s.clients.filter((c) => c.kind === "browser");
  if (tabs.length !== 2 || tabs.some((c) => c.secagg !== true || c.other_requests)) fail(`tabs ${JSON.stringify(tabs)}`);
  // chance is 0.1; two non-IID digits shards after 2 rounds reach ~0.8
  if (!(s.final_accuracy >= 0.7)) fail(`final accuracy ${s.final_accuracy} < 0.7`);
  console.log(`SecAgg+ federation ok: 2 tabs, a native node and a Flower Python node unmasked together after a node left; final accuracy ${s.final_accuracy.toFixed(4)}`);
' "$summary"

echo "== SecAgg+ below the threshold: 4 native nodes, threshold 3, two leaving after key sharing in round 1 and coming back"
out=$(cargo xtask federated --rounds 2 --browsers 0 --native 4 --dataset digits --alpha 0.5 \
        --epochs 3 --lr 0.005 --secagg 4,3 --drop-below-threshold --debug-cli --no-build --json)
summary=$(echo "$out" | tail -n 1)
node -e '
  const s = JSON.parse(process.argv[1]);
  const fail = (m) => { console.error("below-threshold check failed: " + m); process.exit(1); };
  const [r1, r2] = s.per_round;
  // round 1: 2 of 4 nodes sent masked vectors, fewer than the threshold: Flower halts the
  // aggregation, nothing is unmasked and the global model stays as it was
  if (r1.secagg_halted_at !== "collect_masked_vectors" || r1.train_replies) fail(`round 1: ${JSON.stringify(r1)}`);
  if (!r1.initial_params_digest || r1.params_digest !== r1.initial_params_digest) fail("round 1 changed the global model");
  // round 2: the two that left are back as new nodes and all four are aggregated
  if (r2.train_replies !== 4 || r2.secagg_halted_at || r2.params_digest === r1.params_digest) fail(`round 2: ${JSON.stringify(r2)}`);
  if (s.clients.filter((c) => c.left_after_stage === "share_keys").length !== 2) fail("expected two nodes to leave");
  if (s.clients.filter((c) => c.rejoined && c.rounds === 1).length !== 2) fail("expected the two to come back for round 2");
  console.log(`below the threshold ok: round 1 halted with the model unchanged, round 2 aggregated 4 nodes; final accuracy ${s.final_accuracy.toFixed(4)}`);
' "$summary"

echo "== distributed DP under SecAgg+: a WebGPU tab, a CPU tab and a native node each add their share of the noise and report the same (epsilon, delta)"
out=$(cargo xtask federated --rounds 2 --browsers 2 --native 1 --backends webgpu,cpu --dataset digits --alpha 0.5 \
        --epochs 3 --lr 0.005 --secagg 3,2 --dp distributed:0.3,1.0,1e-5 --max-epsilon 100 --debug-cli --no-build --json)
summary=$(echo "$out" | tail -n 1)
node -e '
  const s = JSON.parse(process.argv[1]);
  const fail = (m) => { console.error("distributed DP check failed: " + m); process.exit(1); };
  for (const r of s.per_round) if (r.train_replies !== 3) fail(`round ${r.round}: ${r.train_replies} updates`);
  // every node accounts the same mechanism: the unmasked sum carries noise multiplier 0.3
  const eps = s.clients.map((c) => c.epsilon);
  if (!eps.every((e) => Number.isFinite(e) && e > 0 && Math.abs(e - eps[0]) < 1e-9)) fail(`epsilon per node ${JSON.stringify(eps)}`);
  const nat = s.clients.find((c) => c.kind === "native");
  if (!(nat.privacy.length === 2 && nat.privacy[0].epsilon < nat.privacy[1].epsilon && s.delta === 1e-5)) fail(`privacy ${JSON.stringify(nat.privacy)}`);
  if (!(s.epsilon <= 100)) fail(`epsilon ${s.epsilon} past --max-epsilon 100`);
  // every backend of the package takes part in SecAgg+: the CPU tab here, WebGPU and WebGL above
  const tabs = s.clients.filter((c) => c.kind === "browser");
  if (tabs.map((c) => c.backend).join() !== "webgpu,cpu" || tabs.some((c) => c.secagg !== true || c.other_requests)) fail(`tabs ${JSON.stringify(tabs)}`);
  console.log(`distributed DP ok (a WebGPU tab, a CPU tab, a native node): every node spent epsilon ${eps[0].toFixed(2)} at delta 1e-5 over 2 rounds; final accuracy ${s.final_accuracy.toFixed(4)} (3 nodes cannot hide a sum behind noise: DP needs many)`);
' "$summary"

echo "== the CLI node against an unreachable SuperLink"
set +e
msg=$(target/debug/pixelgrad federated --superlink http://127.0.0.1:9 --partition 0/2 2>&1 >/dev/null)
rc=$?
set -e
if [ "$rc" -ne 1 ] || ! echo "$msg" | grep -q '^error: cannot reach the SuperLink at http://127.0.0.1:9'; then
  echo "expected exit 1 and 'error: cannot reach the SuperLink ...', got $rc: $msg"; exit 1
fi
echo "unreachable SuperLink: $msg"
echo "6 passed, 0 failed"
