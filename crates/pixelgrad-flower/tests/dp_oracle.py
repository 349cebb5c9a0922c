"""Google's dp-accounting (pinned in the venv of scripts/flower-venv.sh; the backend of flwr's
own `flwr[dp]` accountant) as the oracle of tests/accountant.rs.

    python dp_oracle.py < JSON [{"q", "z", "steps", "delta"}, ...]  ->  JSON [epsilon, ...]

Each case composes `steps` Poisson-sampled Gaussian events (q = 1: the plain Gaussian) in
dp-accounting's RdpAccountant (default orders, add-or-remove-one) and reports epsilon at delta.
The last line also gives flwr's own RdpAccountant (NO_AMPLIFICATION) for the first case with
q = 1, to show flwr's wrapper reports the same.
"""

import json
import sys

from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp

cases = json.load(sys.stdin)
out = []
for c in cases:
    acc = rdp.RdpAccountant()
    g = dp_event.GaussianDpEvent(c["z"])
    ev = g if c["q"] == 1 else dp_event.PoissonSampledDpEvent(c["q"], g)
    acc.compose(ev, c["steps"])
    out.append(acc.get_epsilon(c["delta"]))

flwr_eps = None
first = next((c for c in cases if c["q"] == 1), None)
if first is not None:
    from flwr.serverapp import GaussianPrivacyEvent, NeighboringRelation, PrivacyConfig, RdpAccountant, SamplingMethod

    cfg = PrivacyConfig(
        target_delta=first["delta"],
        population_size=10,
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        sampling_method=SamplingMethod.NO_AMPLIFICATION,
    )
    acc = RdpAccountant(cfg)
    acc.compose(GaussianPrivacyEvent(noise_multiplier=first["z"], sample_size=10, population_size=10), first["steps"])
    flwr_eps = acc.get_privacy_spent().epsilon
print(json.dumps({"epsilons": out, "flwr_first_q1": flwr_eps}))
