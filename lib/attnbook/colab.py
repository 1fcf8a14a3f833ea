"""What the Colab install cell needs: detecting Colab and enabling its widgets."""

from __future__ import annotations

import sys

__all__ = [
    "in_colab",
]


def in_colab() -> bool:
    """True when running inside Google Colab."""
    return "google.colab" in sys.modules
