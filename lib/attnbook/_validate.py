"""Argument checks shared by the library (internal).

Every public function validates its input here first, so that bad input fails
with a ``TypeError`` or ``ValueError`` naming the argument and its value
instead of an obscure error from deep inside torch.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence

import torch


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def tensor(
    name: str,
    value: object,
    *,
    ndim: int | tuple[int, ...] | None = None,
    floating: bool = False,
) -> torch.Tensor:
    """Check that ``value`` is a tensor with the given number of axes."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {_describe(value)}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if value.dim() not in allowed:
            wanted = " or ".join(f"{n}-D" for n in allowed)
            raise ValueError(f"{name} must be {wanted}, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
    return value


def as_float_tensor(
    name: str, value: object, *, ndim: int | tuple[int, ...] | None = None
) -> torch.Tensor:
    """Check a tensor of inputs, promoting integer dtypes to the default float."""
    value = tensor(name, value, ndim=ndim)
    if value.dtype == torch.bool or value.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
    if not value.is_floating_point():
        value = value.to(torch.get_default_dtype())
    return value


def positive_number(name: str, value: object) -> float:
    """Check a finite real number > 0 (a Python number or a 0-d tensor)."""
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def probability(name: str, value: object) -> float:
    """Check a dropout-style probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def positive_int(name: str, value: object) -> int:
    """Check an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    _below_int64(name, value)
    return int(value)


def _below_int64(name: str, value: numbers.Integral) -> None:
    """Refuse a count or size that torch cannot even hold (it would overflow inside torch)."""
    if value >= 2**63:
        raise ValueError(f"{name} must be below 2**63, got {value!r}")


def seed_int(name: str, value: object, *, negative: bool = False) -> int:
    """Check an integer seed that torch's 64-bit generators take: in [0, 2**64)
    (with ``negative``, in [-2**63, 2**64), as ``torch.Generator.manual_seed`` allows)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    low = -(2**63) if negative else 0
    if not low <= value < 2**64:
        lowest = "-2**63" if negative else "0"
        raise ValueError(f"{name} must lie in [{lowest}, 2**64), got {value!r}")
    return int(value)


def generator(name: str, value: object) -> torch.Generator:
    """Check a seed: an integer (a new CPU generator seeded with it) or a torch.Generator."""
    if isinstance(value, torch.Generator):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer seed or a torch.Generator, got {value!r}")
    return torch.Generator().manual_seed(seed_int(name, value, negative=True))


def torch_generator(name: str, value: object, *, optional: bool = False) -> torch.Generator | None:
    """Check a ``torch.Generator`` (or None, with ``optional``: the global generator)."""
    if value is None and optional:
        return None
    if not isinstance(value, torch.Generator):
        wanted = "a torch.Generator or None" if optional else "a torch.Generator"
        raise TypeError(f"{name} must be {wanted}, got {_describe(value)}")
    return value


def device(name: str, value: object) -> torch.device | None:
    """Check a device (None, a name such as "cpu", or a torch.device) that this machine has."""
    if value is None:
        return None
    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be None, a device name or a torch.device, got {value!r}")
    try:
        value = torch.device(value)
        torch.empty(0, device=value)  # a device this machine does not have fails here
    except (RuntimeError, AssertionError) as err:  # AssertionError: torch built without CUDA
        raise ValueError(f"{name} must be a device of this machine, got {value!r}: {err}") from err
    return value


def heads_divide(num_hiddens: int, num_heads: int) -> None:
    """Check that ``num_heads`` divides ``num_hiddens`` (both already positive integers)."""
    if num_hiddens % num_heads:
        raise ValueError(
            f"num_heads must divide num_hiddens, got num_hiddens={num_hiddens}, "
            f"num_heads={num_heads}"
        )


def lengths(name: str, value: object, *, upper: int, device: torch.device) -> torch.Tensor:
    """Check valid lengths: integral values in [0, upper]; returns an int64 tensor.

    Accepts an integer tensor, a floating tensor holding whole numbers, or a
    (nested) Python sequence of ints.
    """
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(
                f"{name} must be a tensor or a list of integers, got {_describe(value)}"
            ) from err
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of integer lengths, got {_describe(value)}")
    if value.dtype == torch.bool or value.is_complex():
        raise TypeError(f"{name} must hold integer lengths, got dtype {value.dtype}")
    if value.is_floating_point():
        finite = torch.isfinite(value)
        if not bool(finite.all()) or not bool((value == value.round()).all()):
            bad = value[~finite | (value != value.round())].flatten()[0].item()
            raise ValueError(f"{name} must hold whole numbers, got the non-integral value {bad!r}")
    # Check the range before converting: a huge float would overflow int64.
    if value.numel() and (bool((value < 0).any()) or bool((value > upper).any())):
        bad = value[(value < 0) | (value > upper)].flatten()[0].item()
        raise ValueError(f"{name} must lie in [0, {upper}] (the number of keys), got {bad}")
    return value.to(device=device, dtype=torch.long)


def sequence_lengths(name: str, value: object, *, batch: int, upper: int, device) -> torch.Tensor:
    """One valid length per sequence of a batch of ``batch`` sources of ``upper``
    positions: ``lengths``, and then shape ``(batch,)``."""
    lens = lengths(name, value, upper=upper, device=device)
    if lens.shape != (batch,):
        raise ValueError(
            f"{name} must have shape ({batch},), one length per source, "
            f"got shape {tuple(lens.shape)}"
        )
    return lens


def real_number(name: str, value: object) -> float:
    """Check a real number (not a bool); returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    return float(value)


def same_dtype(**tensors: torch.Tensor) -> None:
    """Check that the named tensors share one dtype."""
    dtypes = {name: t.dtype for name, t in tensors.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name} {dtype}" for name, dtype in dtypes.items())
        raise TypeError(f"{', '.join(dtypes)} must have the same dtype, got {listed}")


def flag(name: str, value: object) -> bool:
    """Check a real bool (the string "False" is not a false flag)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_describe(value)}")
    return value


def nonnegative_int(name: str, value: object) -> int:
    """Check an integer >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    _below_int64(name, value)
    return int(value)


def finite_number(name: str, value: object) -> float:
    """Check a finite real number (not a bool, not NaN or infinite)."""
    value = real_number(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def module(name: str, value: object, kind: type | tuple[type, ...]) -> object:
    """Check that ``value`` is a model of the given class (or classes)."""
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"{name} must be a {wanted}, got {_describe(value)}")
    return value


def no_nan(name: str, value: torch.Tensor) -> torch.Tensor:
    """Refuse a tensor holding NaN (a NaN would silently change the result)."""
    if value.device.type == "meta":  # no values to look at
        return value
    if value.is_floating_point() and bool(torch.isnan(value).any()):
        raise ValueError(f"{name} must not contain NaN, got {_describe(value)} with NaN")
    return value


def ids(
    name: str,
    value: object,
    *,
    upper: int,
    ndim: int | tuple[int, ...] | None = None,
    allow: tuple[int, ...] = (),
) -> torch.Tensor:
    """Check an integer tensor of ids in [0, upper) (values in ``allow`` pass too)."""
    value = tensor(name, value, ndim=ndim)
    if value.dtype == torch.bool or value.is_floating_point() or value.is_complex():
        raise TypeError(f"{name} must have an integer dtype, got {value.dtype}")
    if value.numel() and value.device.type != "meta":
        bad = (value < 0) | (value >= upper)
        for ok in allow:
            bad &= value != ok
        if bool(bad.any()):
            raise ValueError(
                f"{name} must hold ids in [0, {upper - 1}], got {value[bad].flatten()[0].item()}"
            )
    return value


def labels(name: str, value: object, *, count: int, num_classes: int) -> torch.Tensor:
    """Check class labels: a 1-D integer tensor of ``count`` ids in [0, num_classes)."""
    value = ids(name, value, upper=num_classes, ndim=1)
    if value.shape[0] != count:
        raise ValueError(
            f"{name} must hold one label per example ({count}), got shape {tuple(value.shape)}"
        )
    return value


def eval_mode(model: torch.nn.Module):
    """Context manager: ``model`` in eval mode inside, the caller's mode restored after."""
    return _EvalMode(model)


class _EvalMode:
    def __init__(self, model: torch.nn.Module, train: bool = False) -> None:
        self.model, self.train = model, train

    def __enter__(self) -> torch.nn.Module:
        self.modes = [(m, m.training) for m in self.model.modules()]
        self.model.train(self.train)
        return self.model

    def __exit__(self, *exc) -> None:
        for m, mode in self.modes:
            m.training = mode


def train_mode(model: torch.nn.Module):
    """Context manager: ``model`` in train mode inside, the caller's mode restored after."""
    return _EvalMode(model, train=True)


def device_of(model: torch.nn.Module) -> torch.device:
    """The device of a model's parameters (the CPU for a model without any)."""
    for parameter in model.parameters():
        return parameter.device
    return torch.device("cpu")


def batch_to(batch, device: torch.device):
    """A copy of a batch dataclass with every tensor field moved to ``device``.

    Functions that draw their own data (on a seeded CPU generator, the same
    numbers everywhere) move it to the model's device with this."""
    changes = {
        f.name: getattr(batch, f.name).to(device)
        for f in dataclasses.fields(batch)
        if isinstance(getattr(batch, f.name), torch.Tensor)
    }
    return dataclasses.replace(batch, **changes)


def model_input(
    name: str,
    value: object,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: torch.dtype | None = None,
    width: int | None = None,
    width_name: str | None = None,
    batch_axes: int | None = 1,
) -> torch.Tensor:
    """Check a floating input of a model from its metadata alone (no scan of the values).

    ``value`` must be a floating tensor with ``ndim`` axes, of ``dtype`` (the
    model's parameters'; None: any floating dtype), with ``width`` features in
    its last axis (reported as ``width_name=width`` when named), and with no
    empty axis after the first ``batch_axes`` (None: only the last axis may not
    be empty): no positions, no keys or no features leave nothing to attend
    to, and would give NaN or an empty result instead of an error.
    """
    value = tensor(name, value, ndim=ndim, floating=True)
    if dtype is not None and value.dtype != dtype:
        raise TypeError(
            f"{name} must have the model's dtype {dtype}, got {value.dtype} "
            f"(convert the input with .to({dtype}) or the model with .to({value.dtype}))"
        )
    if ndim is None and value.dim() == 0:
        raise ValueError(f"{name} must have at least one axis, got a 0-d tensor")
    if width is not None and value.shape[-1] != width:
        wanted = f"{width_name}={width}" if width_name else f"{width}"
        raise ValueError(f"{name} must have {wanted} features, got shape {tuple(value.shape)}")
    if value.numel() == 0:  # only then look at each axis (this runs on every forward)
        shape = tuple(value.shape)
        first = len(shape) - 1 if batch_axes is None else batch_axes
        if 0 in shape[first:]:
            raise ValueError(
                f"{name} must not have an empty axis after the batch (no positions, keys or "
                f"features), got shape {shape}"
            )
    return value


def some_positions(name: str, value: torch.Tensor) -> torch.Tensor:
    """Refuse (batch, n) token ids with n = 0: a model has nothing to predict from."""
    if value.dim() >= 2 and value.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one position, got shape {tuple(value.shape)}")
    return value


def param_dtype(model: torch.nn.Module) -> torch.dtype | None:
    """The dtype of a model's first parameter (None for a model without any)."""
    for parameter in model.parameters():
        return parameter.dtype
    return None


def model_images(model: torch.nn.Module, name: str, images: torch.Tensor) -> None:
    """Check 4-D images against a classifier: its parameters' dtype, and for a model
    that names its ``channels`` and ``image_size`` (a TinyViT), their shape."""
    channels, size = getattr(model, "channels", None), getattr(model, "image_size", None)
    sized = isinstance(channels, int) and isinstance(size, int)
    if sized and tuple(images.shape[1:]) != (channels, size, size):
        raise ValueError(
            f"model takes images of shape (batch, {channels}, {size}, {size}), "
            f"got {name} of shape {tuple(images.shape)}"
        )
    dtype = param_dtype(model)
    if dtype is not None and images.dtype != dtype:
        raise TypeError(
            f"{name} must have the model's dtype {dtype}, got {images.dtype} "
            f"(convert the images with .to({dtype}) or the model with .to({images.dtype}))"
        )


def tokens_fit(name: str, tokens: torch.Tensor, *, vocab: int, max_len: int | None) -> None:
    """Check a function's batch of (batch, n) token ids against the model it is given:
    ids below the model's ``vocab`` and n at most its ``max_len`` (None: any n)."""
    n = tokens.shape[-1]
    if max_len is not None and n > max_len:
        raise ValueError(
            f"model sees at most max_len={max_len} positions, got {name} of {n} positions "
            "(a model of another shape?)"
        )
    if tokens.numel() and tokens.device.type != "meta":
        top = int(tokens.max())  # one scan per call of a function, not per forward
        if top >= vocab:
            raise ValueError(
                f"model has a vocabulary of {vocab} tokens (ids 0 to {vocab - 1}), got {name} "
                f"holding the id {top} (a model of another shape?)"
            )


def classifier_classes(model: torch.nn.Module, name: str, images: torch.Tensor) -> int | None:
    """Check 4-D floating ``images`` against an image classifier; return its number of classes.

    A model that names its ``channels``, ``image_size`` and ``head`` (a TinyViT)
    is checked from them (:func:`model_images`). Any other model runs once on
    the first image (eval mode, no gradients, its own mode restored), so that
    a model of another kind or shape is refused here by name instead of deep
    inside torch, and must return (1, classes) logits. None for an empty batch
    of a model that does not name its classes.
    """
    model_images(model, name, images)
    classes = getattr(getattr(model, "head", None), "out_features", None)
    sized = all(isinstance(getattr(model, a, None), int) for a in ("channels", "image_size"))
    if sized and isinstance(classes, int):
        return classes
    if len(images) == 0:
        return None
    try:
        with torch.no_grad(), eval_mode(model):
            logits = model(images[:1])
    except (RuntimeError, TypeError, ValueError, IndexError) as err:
        raise ValueError(
            f"model cannot classify {name} of shape {tuple(images.shape)} (a model of another "
            f"kind or shape?): {err}"
        ) from err
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.shape[0] != 1:
        raise ValueError(
            f"model must return (batch, classes) logits for {name}, got {_describe(logits)} "
            "for one image"
        )
    return int(logits.shape[1])
