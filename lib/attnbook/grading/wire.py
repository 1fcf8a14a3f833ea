"""Values as data between the grader and a student's process: JSON, never pickle.

A call's arguments go to the student's process, and its result comes back, as
one JSON document (a *frame*, sent with its length in front). What a frame may
hold is closed: None, booleans, integers, floats (NaN and the infinities
included), strings, lists, and tagged objects for tuples, dicts, torch dtypes,
tensors (dtype, shape and their bytes in base64) and exceptions (type name and
message). Anything else becomes an *opaque* value, a stand-in that keeps the
original type's name and a short repr, so that a checker can still say "expected
a torch.Tensor, got ndarray". Decoding builds only those; it never imports,
calls or unpickles anything the frame names, and it refuses a frame that is too
large, too deep or malformed with :class:`WireError`.
"""

from __future__ import annotations

import base64
import builtins
import json
import struct
from typing import Any, BinaryIO

import torch

#: The largest frame either side accepts (bytes of JSON).
MAX_FRAME = 256 * 2**20
#: How deep lists, tuples and dicts may nest.
MAX_DEPTH = 32
_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    )
}


class WireError(ValueError):
    """A frame that is not what the protocol allows (too large, malformed, unknown tag)."""


class Opaque:
    """A value that cannot travel as data, by the name of its type and its repr."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return self.text


def _opaque_class(name: str) -> type:
    # A class of the original type's name, so that type(x).__name__ reads as it did.
    return type(name if name.isidentifier() else "object", (Opaque,), {})


def _exception_class(name: str) -> type[BaseException]:
    """The builtin exception of that name, else a RuntimeError of that name.

    SystemExit, KeyboardInterrupt and GeneratorExit are never rebuilt as
    themselves: the grader must not exit or stop because of a student's error.
    """
    found = getattr(builtins, name, None)
    if isinstance(found, type) and issubclass(found, Exception) and found.__module__ == "builtins":
        return found
    return type(name if name.isidentifier() else "Error", (RuntimeError,), {})


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data (see the module docstring)."""
    if depth > MAX_DEPTH:
        raise WireError(f"value nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        tensor = value.detach().to("cpu")
        if tensor.dtype not in _DTYPES.values():
            return {"$opaque": "Tensor", "repr": f"a tensor of dtype {tensor.dtype}"}
        flat = tensor.contiguous().reshape(-1)
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        return {
            "$tensor": str(tensor.dtype).removeprefix("torch."),
            "shape": list(tensor.shape),
            "data": base64.b64encode(raw).decode("ascii"),
            "grad": bool(value.requires_grad),
        }
    if isinstance(value, torch.dtype):
        return {"$dtype": str(value).removeprefix("torch.")}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):  # torch.Size too
        return {"$tuple": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, BaseException):
        return {"$error": type(value).__name__, "message": str(value)[:4000]}
    try:
        text = repr(value)[:200]
    except Exception:  # a student's object whose repr raises
        text = "<unprintable>"
    return {"$opaque": type(value).__name__, "repr": text}


def _tensor(item: dict) -> torch.Tensor:
    dtype = _DTYPES.get(item.get("$tensor"))
    shape = item.get("shape")
    if dtype is None:
        raise WireError(f"unknown tensor dtype {item.get('$tensor')!r}")
    if not isinstance(shape, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
    ):
        raise WireError(f"bad tensor shape {shape!r}")
    try:
        raw = base64.b64decode(item.get("data", ""), validate=True)
    except (ValueError, TypeError) as err:
        raise WireError(f"bad tensor data: {err}") from None
    numel = 1
    for s in shape:
        numel *= s
    size = torch.empty((), dtype=dtype).element_size()
    if len(raw) != numel * size:
        raise WireError(f"tensor data of {len(raw)} bytes for shape {shape} of {dtype}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def decode(data: Any, depth: int = 0) -> Any:
    """The value that :func:`encode` made ``data`` from (tensors and opaque stand-ins built afresh)."""
    if depth > MAX_DEPTH:
        raise WireError(f"value nests deeper than {MAX_DEPTH} levels")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise WireError(f"unexpected {type(data).__name__} in a frame")
    if "$tensor" in data:
        return _tensor(data)
    if "$dtype" in data:
        found = _DTYPES.get(data["$dtype"])
        if found is None:
            raise WireError(f"unknown dtype {data['$dtype']!r}")
        return found
    if "$tuple" in data and isinstance(data["$tuple"], list):
        return tuple(decode(v, depth + 1) for v in data["$tuple"])
    if "$dict" in data and isinstance(data["$dict"], list):
        out = {}
        for pair in data["$dict"]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("a dict entry is not a [key, value] pair")
            key = decode(pair[0], depth + 1)
            try:
                out[key] = decode(pair[1], depth + 1)
            except TypeError:  # an unhashable key
                raise WireError("a dict key that cannot be a key") from None
        return out
    if "$error" in data:
        kind = _exception_class(str(data["$error"]))
        return kind(str(data.get("message", "")))
    if "$opaque" in data:
        return _opaque_class(str(data["$opaque"]))(str(data["$opaque"]), str(data.get("repr", "")))
    raise WireError(f"unknown tag in a frame: {sorted(data)[:3]}")


def send(stream: BinaryIO, message: dict) -> None:
    """Write one frame: its length (4 bytes, big-endian), then its JSON."""
    body = json.dumps(message, allow_nan=True).encode("utf-8")
    if len(body) > MAX_FRAME:
        raise WireError(f"a frame of {len(body)} bytes is over the limit of {MAX_FRAME}")
    stream.write(struct.pack(">I", len(body)) + body)
    stream.flush()


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other side closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def receive(stream: BinaryIO) -> dict:
    """Read one frame (see :func:`send`); EOFError when the stream has ended."""
    (length,) = struct.unpack(">I", _read_exactly(stream, 4))
    if length > MAX_FRAME:
        raise WireError(f"a frame of {length} bytes is over the limit of {MAX_FRAME}")
    try:
        message = json.loads(_read_exactly(stream, length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise WireError(f"a frame that is not JSON: {type(err).__name__}") from None
    if not isinstance(message, dict):
        raise WireError("a frame that is not a JSON object")
    return message
