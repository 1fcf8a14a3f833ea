"""Probes that reject the shortcuts an exercise forbids: a library function that
is the exercise's answer, an operator it replaces, a tensor as large as the one
it avoids."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._core import _Problem


class _Forbidden(_Problem):
    """The reader's function called what its exercise asks the reader to write."""


class _Refused(_Forbidden):
    """... and what it called was a Python function (the library's own answer, or
    another forbidden helper), caught by :func:`_refusing`. A type of its own, so
    that a known mistake caught this way is told apart from an ATen operator
    caught by :func:`_watched` in the same checker."""


class _TooLarge(_Problem):
    """The reader's function built a tensor as large as the one its exercise avoids."""


class _MaskTooLarge(_TooLarge):
    """... and that tensor was a boolean mask."""


class _Largest(TorchDispatchMode):
    """Records the largest storage a function creates, and the dtype of its tensor."""

    def __init__(self, external: set[int]) -> None:
        super().__init__()
        self.external = external
        self.size = 0
        self.dtype: torch.dtype | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for out in result if isinstance(result, (tuple, list)) else (result,):
            if isinstance(out, torch.Tensor):
                storage = out.untyped_storage()
                if storage.data_ptr() not in self.external and storage.nbytes() > self.size:
                    self.size, self.dtype = storage.nbytes(), out.dtype
        return result


def _watched(forbidden: tuple[str, ...], what: str, largest: int | None = None) -> Callable:
    """A probe that runs a function under the memory tracker of ``attnbook.flash``.

    It raises :class:`_Forbidden` if an ATen operator whose name contains one
    of ``forbidden`` was called (``what`` names the shortcut), and
    :class:`_TooLarge` if a single tensor of ``largest`` bytes or more was
    created.
    """
    from ..flash import _Tracker

    def probe(fn: Callable) -> Callable:
        def run(*args):
            external = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
            tracker, largest_seen = _Tracker(external), _Largest(external)
            with torch.no_grad(), tracker, largest_seen:
                result = fn(*args)
            called = sorted(op for op in tracker.operators if any(f in op for f in forbidden))
            if called:
                raise _Forbidden(f"it calls {what} (the operator {called[0]})")
            if largest is not None and max(tracker.largest, largest_seen.size) >= largest:
                size = max(tracker.largest, largest_seen.size)
                if largest_seen.dtype == torch.bool:
                    raise _MaskTooLarge(
                        f"it created a boolean tensor of {size} bytes, as large as the whole "
                        f"n x n mask ({largest} bytes here): the exercise never holds anything "
                        "of the n x n size, the mask included; build each diagonal tile's "
                        "mask from that tile's own rows and columns"
                    )
                raise _TooLarge(
                    f"it created a tensor of {size} bytes, at least as large as an n x n "
                    f"boolean mask ({largest} bytes here; the scores would take 4 times "
                    "more): the exercise computes attention one tile at a time without it"
                )
            return result

        return run

    return probe


def _refusing(functions: Sequence[Callable], what: str) -> Callable:
    """A probe that rejects a function calling any of ``functions`` (the library's
    own answer to the exercise), however the reader imported it.

    It watches Python calls with :func:`sys.setprofile` while the function runs
    and raises :class:`_Refused` naming ``what``.
    """
    codes = {inspect.unwrap(f).__code__: f for f in functions}

    def probe(fn: Callable) -> Callable:
        def run(*args):
            called: list[str] = []

            def watch(frame, event, arg):
                if event == "call" and frame.f_code in codes:
                    called.append(codes[frame.f_code].__qualname__)

            previous = sys.getprofile()
            sys.setprofile(watch)
            try:
                result = fn(*args)
            finally:
                sys.setprofile(previous)
            if called:
                raise _Refused(f"it calls {what} ({called[0]})")
            return result

        return run

    return probe


def _chain(*probes: Callable | None) -> Callable:
    """Several probes as one: the first given wraps outermost."""

    def probe(fn: Callable) -> Callable:
        for p in reversed([p for p in probes if p is not None]):
            fn = p(fn)
        return fn

    return probe
