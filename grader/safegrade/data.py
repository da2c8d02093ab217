"""Plain data between the sandbox and the trusted checks.

Probes (sandbox side) return Python values; ``encode`` turns them into JSON: scalars as they are,
everything else tagged (``{"tuple": [...]}``, ``{"tensor": {...}}``, ...). Tensors travel as raw
bytes with a dtype from an allow-list, so decoding one executes nothing. ``decode`` (trusted side)
rebuilds plain values under size and depth caps; an object it does not know stays an ``Opaque``
(its type name and repr), which equals nothing but another ``Opaque`` with the same text.
Sub-classes of int, float and str come back as ``Typed*`` values that remember the type's name,
so a check sees what ``type(x) is float`` would have seen.
"""

from __future__ import annotations

import base64
import math
import sys
from dataclasses import dataclass

from .grading_limits import LIMITS
from .wording import _

DTYPES = (
    "float16 bfloat16 float32 float64 complex64 complex128 int8 int16 int32 int64 uint8 bool"
).split()


class DataError(ValueError):
    """A value that cannot travel (too large, too deep, malformed)."""


@dataclass(frozen=True)
class Opaque:
    type: str
    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Ref:
    """A reference to a graph node by its position (see ``probing.describe``)."""

    position: int


class TypedInt(int):
    type_name = "int"


class TypedFloat(float):
    type_name = "float"


class TypedStr(str):
    type_name = "str"


def type_name(value: object) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def safe_repr(value: object) -> str:
    try:
        return clean_text(repr(value), LIMITS.repr_chars)
    except BaseException as exc:  # noqa: BLE001 - a learner's __repr__ may raise anything
        return f"<{type_name(value)} whose repr raised {type(exc).__name__}>"


def clean_text(text: str, cap: int) -> str:
    """text made safe to store anywhere: lone surrogates replaced, at most cap characters."""
    text = str.__str__(text) if isinstance(text, str) else repr(text)
    if len(text) > cap:
        text = text[:cap] + f"... [{len(text) - cap} more characters]"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def inert_text(text: str, cap: int) -> str:
    """text made inert for a terminal or a log: clean_text, then every character that is not
    printable (control characters, terminal escapes, line breaks, bidirectional overrides)
    shown as its code (\\x1b, \\u202e), so a learner's string cannot move the cursor, recolour
    or rewrite what an instructor reads."""
    text = clean_text(text, cap)
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def spreadsheet_cell(value: object) -> object:
    """A CSV cell that a spreadsheet cannot take for a formula: text starting with =, +, -, @,
    a tab or a carriage return gets a leading apostrophe (OWASP's advice). Numbers are kept."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


# ----------------------------------------------------------------------------- encoding


def encode(value: object) -> object:
    """A JSON-ready form of value (sandbox side); raises DataError when it is too large."""
    budget = [LIMITS.data_items]
    return _encode(value, 0, budget)


def _encode(value, depth: int, budget: list[int]):
    budget[0] -= 1
    if budget[0] < 0 or depth > LIMITS.data_depth:
        said = _("the value has over {items} parts or is nested over {depth} deep")
        raise DataError(said.format(items=LIMITS.data_items, depth=LIMITS.data_depth))
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return {"tensor": _encode_tensor(value, torch)}
    if torch is not None and isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, Ref):
        return {"ref": value.position}
    scalar = _encode_number(value)
    if scalar is not None:
        return scalar
    if isinstance(value, dict):
        pairs = value.items()
        return {
            "dict": [
                [_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in pairs
            ]
        }
    for tag, kind in (("tuple", tuple), ("list", list), ("slice", slice)):
        if isinstance(value, kind):
            items = (value.start, value.stop, value.step) if kind is slice else value
            return {tag: [_encode(item, depth + 1, budget) for item in items]}
    return {"other": {"type": type_name(value), "repr": safe_repr(value)}}


def _encode_number(value):
    """int, float and str subclasses and other real numbers, with their type's name."""
    import numbers

    name = type_name(value)
    if isinstance(value, str):
        return {"str": str.__str__(value), "type": name}
    if isinstance(value, numbers.Integral):
        return {"int": int(value), "type": name}
    if isinstance(value, numbers.Real):
        number = float(value)
        return {"real": number if math.isfinite(number) else repr(number), "type": name}
    return None


def _plain(tensor, torch):
    """The tensor's data as a plain strided tensor in memory, or DataError: a sparse, nested or
    meta tensor cannot be sent (each fails in torch's own way at one step or another)."""
    said = _("a tensor of {dtype} / {layout} cannot be sent")
    layout = "nested" if tensor.is_nested else "meta" if tensor.is_meta else tensor.layout
    try:
        plain = torch.Tensor.as_subclass(tensor, torch.Tensor).detach()
    except Exception:
        plain = None
    if layout != torch.strided or plain is None or plain_dtype(plain) not in DTYPES:
        raise DataError(said.format(dtype=tensor.dtype, layout=layout))
    return plain


def plain_dtype(tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _encode_tensor(tensor, torch) -> dict:
    plain = _plain(tensor, torch)
    dtype = plain_dtype(plain)
    size = plain.numel() * plain.element_size()
    if size > LIMITS.tensor_bytes:
        said = _("a tensor of {size} bytes is over the {cap} byte limit")
        raise DataError(said.format(size=size, cap=LIMITS.tensor_bytes))
    flat = plain.cpu().resolve_conj().resolve_neg().contiguous().reshape(-1)
    raw = base64.b64encode(flat.view(torch.uint8).numpy().tobytes()).decode("ascii")
    return {"dtype": dtype, "shape": list(plain.shape), "data": raw, "type": type_name(tensor)}


# ----------------------------------------------------------------------------- decoding


def decode(data: object) -> object:
    """Plain Python values from encode's output (trusted side); raises DataError."""
    budget = [LIMITS.data_items]
    return _decode(data, 0, budget)


def _decode(data, depth: int, budget: list[int]):
    budget[0] -= 1
    if budget[0] < 0 or depth > LIMITS.data_depth:
        raise DataError(_("the data is too large or too deeply nested"))
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is not dict or len(data) not in (1, 2):
        raise DataError(_("unexpected data of type {kind}").format(kind=type(data).__name__))
    tag, body = next(iter(data.items()))
    if tag in ("tuple", "list", "slice") and type(body) is list:
        items = [_decode(item, depth + 1, budget) for item in body]
        if tag == "slice" and len(items) == 3:
            return slice(*items)
        return tuple(items) if tag == "tuple" else items
    if tag == "dict" and type(body) is list:
        pairs = [_decode_pair(pair, depth, budget) for pair in body]
        return dict(pairs)
    if tag in ("int", "real", "str"):
        return _decode_typed(tag, body, data.get("type"))
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "ref" and type(body) is int:
        return Ref(body)
    if tag == "dtype" and body in DTYPES:
        import torch

        return getattr(torch, body)
    if tag == "tensor" and type(body) is dict:
        return decode_tensor(body)
    if tag == "other" and type(body) is dict:
        return Opaque(str(body.get("type")), str(body.get("repr")))
    raise DataError(_("unexpected tag {tag}").format(tag=repr(tag)))


def _decode_pair(pair, depth: int, budget: list[int]) -> tuple:
    if type(pair) is not list or len(pair) != 2:
        raise DataError(_("a dict item is not a key and a value"))
    key = _decode(pair[0], depth + 1, budget)
    try:
        hash(key)
    except TypeError:
        raise DataError(_("a dict key is not hashable")) from None
    return key, _decode(pair[1], depth + 1, budget)


def _decode_typed(tag: str, body, name) -> object:
    kind = {"int": TypedInt, "real": TypedFloat, "str": TypedStr}[tag]
    if tag == "real" and body in ("nan", "inf", "-inf"):
        body = float(body)
    expected = {"int": int, "real": (int, float), "str": str}[tag]
    if not isinstance(body, expected) or isinstance(body, bool):
        raise DataError(_("malformed {tag} value").format(tag=tag))
    value = kind(body)
    value.type_name = str(name)
    return value


def decode_tensor(body: dict):
    import torch

    dtype, shape = body.get("dtype"), body.get("shape")
    if dtype not in DTYPES or type(shape) is not list or len(shape) > LIMITS.tensor_dims:
        raise DataError(_("malformed tensor"))
    if not all(type(n) is int and 0 <= n <= LIMITS.tensor_bytes for n in shape):
        raise DataError(_("malformed tensor shape"))
    kind = getattr(torch, dtype)
    count = math.prod(shape)
    size = count * kind.itemsize
    text = body.get("data")
    if type(text) is not str or size > LIMITS.tensor_bytes or len(text) > 4 * size // 3 + 4:
        raise DataError(_("malformed tensor data"))
    raw = base64.b64decode(text, validate=True)
    if len(raw) != size:
        raise DataError(_("the tensor's data does not match its shape"))
    if count == 0:
        return torch.empty(shape, dtype=kind)
    return torch.frombuffer(bytearray(raw), dtype=kind).reshape(shape)
