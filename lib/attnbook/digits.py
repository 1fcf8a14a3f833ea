"""The 8x8 handwritten digits of chapter 15, split into training and test images.

The images are scikit-learn's bundled ``load_digits`` (1,797 digits of 8x8
pixels, ink 0-16 per pixel), which ship inside scikit-learn itself: nothing is
downloaded. scikit-learn is imported only inside :func:`load_digits_split`, so
the rest of the library works without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "DigitsSplit",
    "load_digits_split",
]

_INSTALL = (
    "load_digits_split needs scikit-learn, which holds the digits: "
    "install it with `pip install scikit-learn` (Colab already has it)"
)


@dataclass(frozen=True)
class DigitsSplit:
    """Training and test digits as tensors.

    ``X_train`` (1347, 1, 8, 8) and ``X_test`` (450, 1, 8, 8) are float32
    pixels in [0, 1] (one channel, channels first); ``y_train`` and
    ``y_test`` are int64 labels 0-9.
    """

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor


def load_digits_split() -> DigitsSplit:
    """scikit-learn's 8x8 digits, pixels / 16, a stratified 75/25 split.

    The split is ``train_test_split(test_size=0.25, random_state=0,
    stratify=y)``: 1,347 training and 450 test images, every digit in the same
    proportion in both. Raises ``ModuleNotFoundError`` naming the package and
    how to install it when scikit-learn is missing.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError(_INSTALL, name="sklearn") from err
    digits = load_digits()
    X = digits.images.reshape(-1, 1, 8, 8) / 16.0  # (1797, 1, 8, 8)
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    return DigitsSplit(
        torch.tensor(X_train, dtype=torch.float32),
        torch.tensor(y_train, dtype=torch.int64),
        torch.tensor(X_test, dtype=torch.float32),
        torch.tensor(y_test, dtype=torch.int64),
    )
