"""Grading students' notebooks where their code cannot touch the verdict.

A student's notebook runs in a process of its own (:mod:`.worker`), inside a
sandbox (:mod:`.sandbox`: bubblewrap, its own scratch folder, no network, limits
on memory and time). The grader's process calls the student's functions through
proxies (:mod:`.remote`): arguments go out and results come back as data
(:mod:`.wire`: JSON and raw tensor bytes, never pickle). The checkers of
:mod:`attnbook.checks` run in the grader's process on those proxies, and
:mod:`.score` turns their reports into points. The answers to the concept
questions come back as data too, and :mod:`.concepts` judges them here. Nothing
the student wrote is imported or run where the grade is decided.

``make grade`` (tools/grade.py) and the autograder zip's ``run_autograder`` both
grade this way.
"""

from importlib import import_module

__all__ = ["colab", "concepts", "gradescope", "remote", "sandbox", "score", "wire", "worker"]


def __getattr__(name: str):
    if name in __all__:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
