"""A job spec written the way a Lightning script is: ``Trainer`` keyword
arguments, a model, a data module. The result is the plain JSON object
``POST /v1/jobs`` takes (its schema: ``GET /openapi.json``, JobSpec); the
service checks it."""

import copy
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

Layer = Dict[str, Any]


def linear(out: int, bias: bool = True, tie: Optional[int] = None) -> Layer:
    """A ``torch.nn.Linear`` to ``out`` features (``tie``: reuse, transposed, the
    weight of the linear layer at that index)."""
    layer: Layer = {"type": "linear", "out": out}
    if not bias:
        layer["bias"] = False
    if tie is not None:
        layer["tie"] = str(tie)
    return layer


def relu() -> Layer:
    return {"type": "relu"}


def gelu() -> Layer:
    return {"type": "gelu"}


def tanh() -> Layer:
    return {"type": "tanh"}


def sigmoid() -> Layer:
    return {"type": "sigmoid"}


def layernorm() -> Layer:
    return {"type": "layernorm"}


def dropout(p: float) -> Layer:
    return {"type": "dropout", "p": p}


def mlp(hidden: Sequence[int], classes: int, activation: str = "relu") -> Dict[str, Any]:
    """A classifier: a linear layer and an activation per hidden width, then
    ``classes`` outputs, with cross-entropy."""
    layers: List[Layer] = []
    for width in hidden:
        layers += [linear(width), {"type": activation}]
    layers.append(linear(classes))
    return {"layers": layers, "loss": "cross_entropy"}


def _model(model: Union[None, Mapping[str, Any], Sequence[Layer]]) -> Optional[Dict[str, Any]]:
    if model is None:
        return None
    if isinstance(model, Mapping):
        return dict(model)
    return {"layers": list(model), "loss": "cross_entropy"}


def _data(data: Union[None, str, Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    if data is None:
        return None
    if isinstance(data, str):
        return {"dataset": data}
    return dict(data)


def spec(trainer: Optional[Mapping[str, Any]] = None,
         model: Union[None, Mapping[str, Any], Sequence[Layer]] = None,
         data: Union[None, str, Mapping[str, Any]] = None,
         optimizer: Optional[Mapping[str, Any]] = None,
         name: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
         expect: Optional[Mapping[str, Any]] = None,
         sweep: Optional[Mapping[str, Sequence[Any]]] = None,
         **fields: Any) -> Dict[str, Any]:
    """A job spec. ``trainer`` holds ``lightning.Trainer``'s keyword arguments
    (``accelerator="tpu", devices=8, precision="bf16-true", max_epochs=5``);
    ``model`` a ``{"layers": [...], "loss": ...}`` object or just the layer list
    (cross-entropy); ``data`` a dataset name (``"digits"``) or the data object;
    ``expect`` the quality gates (``{"val_accuracy": {"min": 0.9}}``); ``sweep``
    a map of dotted spec paths to value lists (one child job per combination).
    Any other top-level field (``priority``, ``timeout``, ``depends_on``,
    ``lightning_version``, ``environment``, ``resources``, ``notify``, ...) is
    passed as given. Fields left None are left out: the service's defaults hold.
    """
    out: Dict[str, Any] = {}
    parts = {"name": name, "labels": dict(labels) if labels else None,
             "trainer": dict(trainer) if trainer is not None else None,
             "model": _model(model), "data": _data(data),
             "optimizer": dict(optimizer) if optimizer is not None else None,
             "expect": dict(expect) if expect is not None else None,
             "sweep": {k: list(v) for k, v in sweep.items()} if sweep else None}
    for key, value in list(parts.items()) + list(fields.items()):
        if value is not None:
            out[key] = copy.deepcopy(value)
    return out


def with_values(base: Mapping[str, Any], **dotted: Any) -> Dict[str, Any]:
    """A copy of ``base`` with fields set by dotted path:
    ``with_values(s, **{"optimizer.lr": 0.01})``."""
    out = copy.deepcopy(dict(base))
    for path, value in dotted.items():
        node = out
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return out
