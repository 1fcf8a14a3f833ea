"""attnbook.grading.wire: values go out and come back as data, and nothing else gets in."""

from __future__ import annotations

import base64
import io
import json
import math
import struct

import pytest
import torch

from attnbook.grading import wire


def roundtrip(value):
    stream = io.BytesIO()
    wire.send(stream, {"v": wire.encode(value)})
    stream.seek(0)
    return wire.decode(wire.receive(stream)["v"])


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.int64,
        torch.int32,
        torch.uint8,
        torch.bool,
    ],
)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 4)])
def test_tensors_come_back_bit_for_bit(dtype, shape):
    source = (torch.randn(shape, generator=torch.Generator().manual_seed(0)) * 50).to(dtype)
    back = roundtrip(source)
    assert back.dtype == dtype and back.shape == source.shape
    assert torch.equal(back.view(-1).view(torch.uint8), source.reshape(-1).view(torch.uint8))


def test_non_contiguous_and_special_values():
    x = torch.tensor([[1.0, math.nan], [math.inf, -math.inf]]).t()
    back = roundtrip(x)
    assert back.is_contiguous() and torch.equal(back.isnan(), x.isnan())
    assert back[0, 1] == math.inf and back[1, 1] == -math.inf


def test_containers_numbers_dtypes_and_errors():
    value = [
        1,
        2.5,
        math.nan,
        None,
        True,
        "s",
        (1, (2,)),
        {"a": torch.ones(2), 3: [4]},
        torch.int64,
    ]
    back = roundtrip(value)
    assert back[:2] == [1, 2.5] and math.isnan(back[2]) and back[3:6] == [None, True, "s"]
    assert back[6] == (1, (2,)) and back[8] is torch.int64
    assert torch.equal(back[7]["a"], torch.ones(2)) and back[7][3] == [4]
    error = roundtrip(ValueError("bad shape"))
    assert type(error) is ValueError and str(error) == "bad shape"


def test_foreign_objects_are_stand_ins_that_keep_their_type_name():
    import numpy as np

    back = roundtrip(np.zeros(3))
    assert type(back).__name__ == "ndarray" and isinstance(back, wire.Opaque)
    assert "array" in repr(back)


@pytest.mark.parametrize("name", ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "os.system"])
def test_an_error_named_like_an_exit_does_not_exit_the_grader(name):
    error = wire.decode({"$error": name, "message": "bye"})
    assert isinstance(error, RuntimeError) and not isinstance(
        error, (SystemExit, KeyboardInterrupt)
    )


@pytest.mark.parametrize(
    "data, words",
    [
        ({"$tensor": "float32", "shape": [2], "data": "AAAA"}, "bytes for shape"),
        ({"$tensor": "object", "shape": [1], "data": ""}, "unknown tensor dtype"),
        ({"$tensor": "float32", "shape": [-1], "data": ""}, "bad tensor shape"),
        ({"$tensor": "float32", "shape": [1], "data": "!!!!"}, "bad tensor data"),
        ({"$pickle": "gASVAAAA"}, "unknown tag"),
        ({"$dtype": "os"}, "unknown dtype"),
        ({}, "unexpected dict"),
        ({"$dict": [[[1], 2]]}, "cannot be a key"),
    ],
)
def test_malformed_data_is_refused_by_name(data, words):
    with pytest.raises(wire.WireError, match=words):
        wire.decode(data)


def test_deep_nesting_and_large_frames_are_refused():
    deep: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="deeper"):
        wire.encode(deep)
    with pytest.raises(wire.WireError, match="deeper"):
        wire.decode(json.loads(json.dumps(deep)))
    stream = io.BytesIO(struct.pack(">I", wire.MAX_FRAME + 1))
    with pytest.raises(wire.WireError, match="over the limit"):
        wire.receive(stream)
    for body in (b"[1, 2]", b"\xff\xfe", b"{nope"):
        with pytest.raises(wire.WireError):
            wire.receive(io.BytesIO(struct.pack(">I", len(body)) + body))
    with pytest.raises(EOFError):
        wire.receive(io.BytesIO(b"\x00\x00"))


def test_a_tensor_is_data_not_code():
    """The bytes of a tensor are never unpickled: a pickle's bytes are just numbers."""
    import pickle

    payload = base64.b64encode(pickle.dumps(print)).decode()
    size = len(base64.b64decode(payload))
    back = wire.decode({"$tensor": "uint8", "shape": [size], "data": payload})
    assert back.dtype == torch.uint8 and back.numel() == size


def test_colab_stand_in_for_otter_runs_the_books_cases(capsys):
    """attnbook.grading.colab: grader.check in Colab, where otter cannot run."""
    from attnbook.grading import colab

    grader = colab.Notebook({"q": ("check_causal_lengths", "causal_lengths")})
    env = {"causal_lengths": lambda b, q: torch.arange(1, q + 1).repeat(b, 1)}
    assert grader.check("q", env).passed
    env = {"causal_lengths": lambda b, q: torch.arange(q).repeat(b, 1)}
    report = grader.check("q", env)
    assert not report.passed and "Likely mistake" in repr(report)
    assert "no function causal_lengths yet" in repr(grader.check("q", {}))
    with pytest.raises(ValueError, match="question must be one of"):
        grader.check("nope", env)
    grader.export(pdf=False, run_tests=True)
    assert "Download .ipynb" in capsys.readouterr().out
