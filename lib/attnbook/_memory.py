"""How much memory a function's own tensors occupy at once.

:func:`peak_memory` (forward only) and :func:`peak_training_memory` (forward
and backward) run a function under a ``TorchDispatchMode`` that sees every
tensor an operation creates and counts its storage until the last tensor
using it is freed. The chapter "Attention at Scale" measures the attention
functions of :mod:`attnbook.flash` with them (``flash`` re-exports both and
:class:`MemoryReport`); ``checks`` uses the tracker too.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _Tracker(TorchDispatchMode):
    """Counts the bytes of the storages that tensors created inside the mode occupy."""

    def __init__(self, external: set[int]) -> None:
        super().__init__()
        self.external = external  # storages that existed before (the inputs)
        self.refs: dict[int, int] = {}  # storage pointer -> live tensors using it
        self.sizes: dict[int, int] = {}
        self.watchers: dict[int, weakref.ref] = {}  # id of a watcher -> the watcher
        self.live = 0
        self.peak = 0
        self.largest = 0
        self.operators: set[str] = set()  # names of the operators called, e.g. "_softmax"

    def _released(self, ref: weakref.ref, key: int) -> None:
        del self.watchers[id(ref)]
        self._release(key)

    def _release(self, key: int) -> None:
        self.refs[key] -= 1
        if self.refs[key] == 0:
            del self.refs[key]
            self.live -= self.sizes.pop(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        self.operators.add(func.overloadpacket.__name__)
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for out in outputs:
            if not isinstance(out, torch.Tensor):
                continue
            storage = out.untyped_storage()
            key = storage.data_ptr()
            if key in self.external or storage.nbytes() == 0:
                continue
            if key not in self.refs:
                self.refs[key] = 0
                self.sizes[key] = storage.nbytes()
                self.live += storage.nbytes()
                self.peak = max(self.peak, self.live)
                self.largest = max(self.largest, storage.nbytes())
            self.refs[key] += 1
            # A weak reference whose callback runs when the tensor is freed (cheaper
            # than weakref.finalize); it is kept alive here until then.
            watcher = weakref.ref(out, lambda ref, key=key: self._released(ref, key))
            self.watchers[id(watcher)] = watcher
        return result


@dataclass(frozen=True)
class MemoryReport:
    """What :func:`peak_memory` measured, in bytes.

    Attributes:
        peak: the most bytes that tensors created by the function occupied at
            once (its result included; its inputs excluded).
        largest: the largest single tensor storage it created.
        operators: the names of the ATen operators it called (e.g.
            ``"_softmax"`` for ``torch.softmax``), to see which routes it took.
    """

    peak: int
    largest: int
    operators: frozenset[str] = frozenset()


def peak_memory(fn: Callable, *args, **kwargs) -> MemoryReport:
    """Run ``fn(*args, **kwargs)`` without gradients and measure the memory it allocates.

    Every tensor that an operation inside ``fn`` creates is seen as it is made
    (a ``TorchDispatchMode``), its storage is counted until the last tensor
    using it is freed, and the largest total is the peak. The sizes are those
    the operations ask for, so the measurement is the same on every run and
    every machine (unlike timings, or the process's resident memory). Memory
    inside a fused operator (its private scratch buffers) is not seen.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    external = {
        a.untyped_storage().data_ptr()
        for a in [*args, *kwargs.values()]
        if isinstance(a, torch.Tensor)
    }
    tracker = _Tracker(external)
    with torch.no_grad(), tracker:
        result = fn(*args, **kwargs)
    del result
    return MemoryReport(tracker.peak, tracker.largest, frozenset(tracker.operators))


def peak_training_memory(fn: Callable, *args, **kwargs) -> MemoryReport:
    """Like :func:`peak_memory`, for a forward *and* backward pass of ``fn``.

    Every floating-point tensor among ``args`` is replaced by a copy that
    requires gradients (made before the measurement, so it counts as an
    input); ``fn(*args, **kwargs)`` runs with autograd on, then the backward
    pass of ``fn(...).sum()``. The peak covers both passes: what autograd saves
    for the backward pass, the gradients and the backward's temporaries.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    leaves = [
        a.detach().clone().requires_grad_(True)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in args
    ]
    external = {
        a.untyped_storage().data_ptr()
        for a in [*leaves, *kwargs.values()]
        if isinstance(a, torch.Tensor)
    }
    tracker = _Tracker(external)
    with torch.enable_grad(), tracker:
        result = fn(*leaves, **kwargs)
        if not isinstance(result, torch.Tensor) or result.grad_fn is None:
            raise ValueError("fn must return a tensor that depends on its floating-point inputs")
        result.sum().backward()
    del result
    return MemoryReport(tracker.peak, tracker.largest, frozenset(tracker.operators))
