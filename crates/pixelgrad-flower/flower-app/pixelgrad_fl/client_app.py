"""Placeholder ClientApp.

Flower Apps must name one; this federation's clients are pixelgrad nodes that speak the Fleet
API themselves (`pixelgrad federated`, `pg.flower.join` in the browser). A Python SuperNode that
joins anyway gets a clear error reply instead of silently training nothing.
"""

from flwr.app import Context, Message
from flwr.clientapp import ClientApp

app = ClientApp()


def _refuse(msg: Message, context: Context) -> Message:
    raise RuntimeError(
        "this Flower App trains pixelgrad models; join with `pixelgrad federated` or pg.flower.join"
    )


app.train()(_refuse)
app.evaluate()(_refuse)
