"""tpujobs: the Python client of the tpujobs REST API.

    import tpujobs
    client = tpujobs.Client()          # $TPUJOBS_URL, $TPUJOBS_TOKEN
    job = client.submit(tpujobs.spec(
        trainer=dict(accelerator="tpu", devices=8, precision="bf16-true", max_epochs=5),
        model=tpujobs.mlp([128], classes=10), data="digits"))
    job.wait(timeout=600)
"""

from .client import Client
from .errors import (BadRequest, CheckUnavailable, Conflict, FieldError, Forbidden, NotFound,
                     ServerError, SpecRejected, Timeout, TooManyRequests, TpujobsError,
                     Unauthorized, Unavailable)
from .job import TERMINAL_STATES, Job, LogLine
from .spec import (dropout, gelu, layernorm, linear, mlp, relu, sigmoid, spec, tanh,
                   with_values)

__version__ = "0.1.0"

__all__ = [
    "BadRequest", "CheckUnavailable", "Client", "Conflict", "FieldError", "Forbidden", "Job",
    "LogLine", "NotFound", "ServerError", "SpecRejected", "TERMINAL_STATES", "Timeout",
    "TooManyRequests", "TpujobsError", "Unauthorized", "Unavailable", "dropout", "gelu",
    "layernorm", "linear", "mlp", "relu", "sigmoid", "spec", "tanh", "with_values"
]
