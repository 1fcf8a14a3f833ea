"""attnbook: the companion library of *Attention, Interactively*.

Import the submodules you need, for example ``from attnbook import masking``.
Plotting and widget modules are imported lazily so that the tensor code can be
used without matplotlib or ipywidgets being loaded.
"""

from importlib import import_module

__version__ = "0.1.0"

_SUBMODULES = (
    "checks",
    "colab",
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
