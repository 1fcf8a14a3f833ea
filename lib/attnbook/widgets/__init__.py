"""Explorers: controls that redraw attention pictures, live in a kernel, static on the website.

The machinery lives in modules of one idea each (the renderer base class in
``_renderer``, the controls in ``_controls``, the live widget in
``_live_widget``, the static HTML in ``_static``); :mod:`attnbook.widgets._core`
puts them together in ``Explorer``, and its docstring says how to write a new
explorer. Each explorer is one module of its own.
"""

from ._core import (
    STATIC_ENV,
    STATIC_MARKER,
    Control,
    Explorer,
    Renderer,
    menu_control,
    range_control,
    static_mode,
)
from .alignment import AlignmentExplorer, alignment_explorer
from .decoding import DecodingExplorer, decoding_explorer
from .dimension import DEFAULT_DIMS, DimensionExplorer, dimension_explorer
from .heads import DEFAULT_HEADS, HeadsExplorer, heads_explorer
from .induction_steps import InductionStepsExplorer, induction_steps_explorer
from .kernel_width import DEFAULT_WIDTHS, KernelWidthExplorer, kernel_width_explorer
from .norm_placement import NormPlacementExplorer, norm_placement_explorer
from .offset import DEFAULT_OFFSETS, OffsetExplorer, offset_explorer
from .query_position import DEFAULT_VALUES, QueryPositionExplorer, query_position_explorer
from .rope_dial import DEFAULT_SHIFTS, DIAL_SCHEMES, RopeDialExplorer, rope_dial_explorer
from .tiles import TilesExplorer, tiles_explorer
from .training_steps import TrainingStepsExplorer, training_steps_explorer
from .valid_length import ValidLengthExplorer, valid_length_explorer
from .vit_maps import VitMapsExplorer, vit_maps_explorer

__all__ = [
    "DEFAULT_DIMS",
    "DEFAULT_VALUES",
    "DimensionExplorer",
    "DEFAULT_OFFSETS",
    "OffsetExplorer",
    "offset_explorer",
    "QueryPositionExplorer",
    "dimension_explorer",
    "query_position_explorer",
    "DEFAULT_WIDTHS",
    "STATIC_ENV",
    "STATIC_MARKER",
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
    "InductionStepsExplorer",
    "induction_steps_explorer",
    "TilesExplorer",
    "tiles_explorer",
    "DEFAULT_HEADS",
    "HeadsExplorer",
    "heads_explorer",
    "NormPlacementExplorer",
    "norm_placement_explorer",
    "DecodingExplorer",
    "decoding_explorer",
    "AlignmentExplorer",
    "alignment_explorer",
    "DEFAULT_SHIFTS",
    "DIAL_SCHEMES",
    "RopeDialExplorer",
    "rope_dial_explorer",
    "VitMapsExplorer",
    "vit_maps_explorer",
]
