"""Readings of the exceptions the reader's code raises: the message's first line,
and what such a message usually means in an exercise (split from ``_core``)."""

from __future__ import annotations

import re

# Readings of the messages that torch raises most often in the exercises: a
# pattern of the message and what it usually means in the reader's code.
_READINGS: tuple[tuple[str, str], ...] = (
    (
        r"Expected size for first two dimensions of batch2 tensor|batch1 and batch2 must",
        "torch.bmm multiplies (batch, n, m) by (batch, m, p): the batch sizes or the inner "
        "sizes of your two tensors disagree; on a batch, K.T reverses all three axes, "
        "while K.transpose(-2, -1) swaps only the last two",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch, got input|"
        r"shapes cannot be multiplied",
        "the two matrices of a product do not fit: the last size of the first must equal "
        "the first size of the second; print the shapes of both",
    ),
    (
        r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
        "two tensors were combined elementwise but their shapes do not broadcast: line up "
        "their shapes from the right; a reduction without keepdim=True drops an axis",
    ),
    (
        r"Dimension out of range|dimension specified as .* but tensor has no dimensions",
        "an axis index is larger than the tensor has axes; the last axis is dim=-1",
    ),
    (
        r"expected scalar type|expected .*dtype|result type .* can't be cast|"
        r"must have the same dtype|Found dtype",
        "two tensors of different dtypes met in one operation (for example float32 and "
        "float64, or a float and an integer tensor); convert one with .to(other.dtype)",
    ),
    (
        r"a leaf Variable that requires grad|modified by an inplace operation",
        "an in-place operation (a method ending in _, or x[...] = ...) changed a tensor "
        "that autograd still needs; build a new tensor instead",
    ),
    (
        r"not implemented for 'Half'|not implemented for 'BFloat16'",
        "this operation has no float16/bfloat16 version on the CPU; compute in float32 "
        "and convert the result back with .to(X.dtype)",
    ),
    (
        r"index .* is out of bounds|out of bounds for dimension|index out of range",
        "an index reached past the end of an axis: positions run from 0 to size - 1",
    ),
    (
        r"torch\.return_types",
        "X.max(dim=...) and X.min(dim=...) return a pair (values, indices), not a tensor: "
        "take its .values",
    ),
    (
        r"could not infer output dtype|Got: Bool|Got: Long",
        "mean() needs a floating-point tensor, and a comparison such as a == b gives a "
        "tensor of booleans: convert it first with .float()",
    ),
    (
        r"can't convert|Can't call numpy\(\) on Tensor that requires grad",
        "the tensor went through NumPy or Python numbers; stay with torch operations",
    ),
)


def _read_exception(err: BaseException) -> str:
    """The reader's exception, as its type, its first line and a one-line reading."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    line = f"raised {type(err).__name__}: {message}" if message else f"raised {type(err).__name__}"
    for pattern, reading in _READINGS:
        if re.search(pattern, str(err)):
            return f"{line} (this usually means: {reading})"
    return line
