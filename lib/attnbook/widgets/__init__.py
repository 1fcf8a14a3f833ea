"""Explorers: controls that redraw attention pictures, live in a kernel, static on the website.

The machinery (renderer base class, controls, live widget, static HTML) lives in
:mod:`attnbook.widgets._core`, whose docstring says how to write a new
explorer; each explorer is one module of its own.
"""

from ._core import (
    STATIC_ENV,
    Control,
    Explorer,
    Renderer,
    menu_control,
    range_control,
    static_mode,
)
from .kernel_width import DEFAULT_WIDTHS, KernelWidthExplorer, kernel_width_explorer
from .training_steps import TrainingStepsExplorer, training_steps_explorer
from .valid_length import ValidLengthExplorer, valid_length_explorer

__all__ = [
    "DEFAULT_WIDTHS",
    "STATIC_ENV",
    "Control",
    "Explorer",
    "KernelWidthExplorer",
    "Renderer",
    "TrainingStepsExplorer",
    "ValidLengthExplorer",
    "kernel_width_explorer",
    "menu_control",
    "range_control",
    "static_mode",
    "training_steps_explorer",
    "valid_length_explorer",
]
