"""attnbook: the companion library of *Attention, Interactively*.

Import the submodules you need, for example ``from attnbook import masking``.
Plotting and widget modules are imported lazily so that the tensor code can be
used without matplotlib or ipywidgets being loaded.
"""

from importlib import import_module

# The release this tree is, or on main the next one with ".dev0" (CHANGELOG.md,
# "Versions"). Written here and in lib/pyproject.toml by tools/release.py;
# tests/test_release.py checks that the two agree.
__version__ = "2026.12.0.dev0"

_SUBMODULES = (
    "checks",
    "colab",
    "grading",
    "data",
    "kernels",
    "masking",
    "multihead",
    "plotting",
    "positional",
    "recall",
    "pooling",
    "scoring",
    "training",
    "widgets",
    "induction",
    "flash",
    "linear_attention",
    "mqar",
    "norms",
    "transformer",
    "lm",
    "corpus",
    "sampling",
    "rope",
    "alibi",
    "length_generalisation",
    "digits",
    "patches",
    "vit",
    "explain",
    "vit_study",
    "composition",
    "decoder",
    "seq2seq",
    "dates",
)

__all__ = [*_SUBMODULES, "__version__"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
