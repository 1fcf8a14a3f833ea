"""A tiny Vision Transformer for 8x8 digits, and its training.

An image becomes a sequence (Dosovitskiy et al., 2021): :func:`attnbook.patches.patchify`
cuts it into patches, a linear map embeds each patch as one token, a learned
position vector is added to each, and a learned [CLS] token is put in front.
Pre-LN :class:`attnbook.transformer.TransformerBlock` s mix the tokens; a final
LayerNorm and a linear head read the class from the [CLS] token's output.
After a forward call, ``attention_weights`` holds every block's weights.

* :class:`TinyViT`: the model; ``forward(images)`` (batch, C, H, W) -> logits
  (batch, classes).
* :func:`build_vit`: the chapter's model with the weights of a seed.
* :func:`build_cnn` and :func:`build_mlp`: a small convolutional network and
  an MLP for the same images, the baselines the chapter trains with the same
  recipe.
* :func:`train_vit`: AdamW with a one-cycle learning-rate schedule.
* :func:`accuracy` and :func:`predict_proba`: evaluation in batches.
* :func:`position_similarity`: the cosine similarity of the patches' learned
  position vectors, laid out on the patch grid (the ViT paper's Fig. 7, centre).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from .norms import LayerNorm
from .patches import patchify
from .transformer import TransformerBlock

__all__ = [
    "TinyViT",
    "build_vit",
    "build_cnn",
    "build_mlp",
    "train_vit",
    "predict_proba",
    "accuracy",
    "position_similarity",
]


class TinyViT(nn.Module):
    """A Vision Transformer: patch embedding, [CLS], learned positions, pre-LN blocks.

    Args:
        image_size: the side of the square input images (8 for the digits).
        patch_size: p, the side of a square patch; it must divide ``image_size``.
        channels: C, the number of colour channels (1 for the digits).
        num_classes: the number of classes the head predicts.
        num_hiddens: D, the width of every token.
        num_heads: heads per block; it must divide D.
        ffn_hiddens: the hidden width of each block's feed-forward network.
        num_layers: the number of blocks.

    The sequence has ``1 + (image_size // p) ** 2`` tokens: [CLS] at position 0,
    then the patches row by row. After a forward call, ``attention_weights`` is a
    list with one (batch, heads, tokens, tokens) tensor per block.
    """

    def __init__(
        self,
        image_size: int = 8,
        patch_size: int = 2,
        channels: int = 1,
        num_classes: int = 10,
        num_hiddens: int = 64,
        num_heads: int = 4,
        ffn_hiddens: int = 128,
        num_layers: int = 2,
    ) -> None:
        super().__init__()
        image_size = _validate.positive_int("image_size", image_size)
        patch_size = _validate.positive_int("patch_size", patch_size)
        if image_size % patch_size:
            raise ValueError(f"patch_size={patch_size} must divide image_size={image_size}")
        channels = _validate.positive_int("channels", channels)
        num_classes = _validate.positive_int("num_classes", num_classes)
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_layers = _validate.positive_int("num_layers", num_layers)
        self.image_size = image_size
        self.patch_size = patch_size
        self.channels = channels
        self.num_patches = (image_size // patch_size) ** 2
        self.embed = nn.Linear(channels * patch_size**2, num_hiddens)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, num_hiddens))
        self.positions = nn.Parameter(0.02 * torch.randn(1, 1 + self.num_patches, num_hiddens))
        self.blocks = nn.ModuleList(
            TransformerBlock(num_hiddens, num_heads, ffn_hiddens, norm_first=True)
            for _ in range(num_layers)
        )
        self.norm = LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, num_classes)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        """One (batch, heads, tokens, tokens) tensor per block, from the last forward call."""
        return [block.attention_weights for block in self.blocks]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """images (batch, C, H, W) -> logits (batch, num_classes)."""
        _validate.model_input("images", images, ndim=4, dtype=self.embed.weight.dtype)
        expected = (self.channels, self.image_size, self.image_size)
        if tuple(images.shape[1:]) != expected:
            raise ValueError(
                f"images must have shape (batch, {', '.join(map(str, expected))}), "
                f"got {tuple(images.shape)}"
            )
        tokens = self.embed(patchify(images, self.patch_size))  # (b, patches, D)
        cls = self.cls.expand(tokens.shape[0], -1, -1)  # (b, 1, D)
        X = torch.cat([cls, tokens], dim=1) + self.positions  # (b, 1 + patches, D)
        for block in self.blocks:
            X = block(X)
        return self.head(self.norm(X[:, 0]))  # (b, classes)


def build_vit(seed: int = 0, **sizes) -> TinyViT:
    """The chapter's :class:`TinyViT` (2x2 patches, 2 blocks, D 64, 4 heads, FFN 128)
    with weights drawn from ``seed``; ``sizes`` override the constructor's
    arguments. The global random state is left alone."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(seed))
        return TinyViT(**sizes)


def build_cnn(seed: int = 0, width: int = 32) -> nn.Sequential:
    """A small convolutional network for (batch, 1, 8, 8) digits, weights drawn from ``seed``.

    Three 3x3 convolutions (``width``, 32 and 64 channels, ReLU, a 2x2
    max-pool after the second), a global average over the positions and a
    linear head to 10 classes: 28,714 parameters with ``width`` 32, 23,946
    with 16. Its filters see 3x3 neighbourhoods (locality) and are the same at
    every position (translation equivariance), the two assumptions about
    images the ViT does not make.
    """
    width = _validate.positive_int("width", width)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(seed))
        return nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(width, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(64, 10),
        )


def build_mlp(seed: int = 0, hidden: int = 128) -> nn.Sequential:
    """An MLP on the 64 pixels of (batch, 1, 8, 8) digits: 64 -> ``hidden`` (ReLU) -> 10."""
    hidden = _validate.positive_int("hidden", hidden)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(seed))
        return nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if seed >= 2**64:  # torch's seeds are 64-bit
        raise ValueError(f"seed must be below 2**64, got {seed!r}")
    return seed


def _check_images(name: str, X: object) -> torch.Tensor:
    """(n, C, H, W) floating images without an empty channel or side, and without NaN."""
    _validate.model_input(name, X, ndim=4)
    return _validate.no_nan(name, X)


def train_vit(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    epochs: int = 40,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.05,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` on images X (n, C, H, W) and labels y (n,); return each epoch's mean loss.

    AdamW (``lr`` is the peak learning rate, ``weight_decay`` decoupled), a
    one-cycle schedule (the rate rises over the first 30 % of the steps and
    anneals to almost 0; ``torch.optim.lr_scheduler.OneCycleLR``), cross-entropy,
    minibatches of ``batch_size`` reshuffled each epoch from ``seed``. The
    model is left in eval mode. Runs on one thread (faster for a model this
    small; the result does not depend on the thread count).
    """
    _validate.module("model", model, nn.Module)
    _check_images("X", X)
    _validate.tensor("y", y, ndim=1)
    if len(X) != len(y):
        raise ValueError(f"X and y must hold as many examples, got {len(X)} and {len(y)}")
    if len(X) == 0:
        raise ValueError(f"X must hold at least one image to train on, got shape {tuple(X.shape)}")
    classes = _validate.classifier_classes(model, "X", X)
    _validate.labels("y", y, count=len(X), num_classes=classes)
    epochs = _validate.positive_int("epochs", epochs)
    batch_size = _validate.positive_int("batch_size", batch_size)
    lr = _validate.positive_number("lr", lr)
    weight_decay = _validate.finite_number("weight_decay", weight_decay)
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    generator = torch.Generator().manual_seed(_seed(seed))
    steps = (len(X) + batch_size - 1) // batch_size
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=epochs * steps)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    losses = []
    try:
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(X), generator=generator)
            total = 0.0
            for start in range(0, len(X), batch_size):
                batch = order[start : start + batch_size]
                loss = F.cross_entropy(model(X[batch]), y[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                total += loss.item() * len(batch)
            losses.append(total / len(X))
    finally:
        model.eval()
        torch.set_num_threads(threads)
    return losses


@torch.no_grad()
def predict_proba(model: nn.Module, X: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """Class probabilities (n, classes) of images X (n, C, H, W), in eval mode.

    ``model`` is any image classifier (a model that cannot take X is refused by
    name); X may be an empty batch, but not hold NaN."""
    _validate.module("model", model, nn.Module)
    _check_images("X", X)
    _validate.classifier_classes(model, "X", X)
    batch_size = _validate.positive_int("batch_size", batch_size)
    with _validate.eval_mode(model):
        if len(X) == 0:
            return torch.softmax(model(X), -1)
        parts = [
            torch.softmax(model(X[i : i + batch_size]), -1) for i in range(0, len(X), batch_size)
        ]
    return torch.cat(parts)


def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """The fraction of images X (n, C, H, W) whose most probable class is y (n,); n >= 1."""
    _validate.tensor("X", X, ndim=4, floating=True)
    if len(X) == 0:  # the mean over no images would be NaN
        raise ValueError(f"X must hold at least one image, got shape {tuple(X.shape)}")
    probs = predict_proba(model, X)
    y = _validate.labels("y", y, count=len(X), num_classes=probs.shape[-1])
    return float((probs.argmax(-1) == y.to(probs.device)).float().mean())


def position_similarity(model: TinyViT) -> torch.Tensor:
    """How alike the learned position vectors of every two patches are, on the patch grid.

    Returns S of shape (g, g, g, g), g = image_size // patch_size:
    ``S[r, c, r2, c2]`` is the cosine similarity of the position vector of
    the patch in row r, column c with that of the patch in row r2, column c2
    (rows and columns count from 0; [CLS]'s position is left out). So
    ``S[r, c]`` is a (g, g) map of one patch's similarity with every patch,
    1 at the patch itself, as in Fig. 7 (centre) of Dosovitskiy et al. (2021).
    A position vector of zeros has similarity 0 with every patch, itself included.
    """
    _validate.module("model", model, TinyViT)
    positions = model.positions.detach()[0, 1:]  # (patches, D), [CLS] left out
    unit = F.normalize(positions, dim=-1)
    g = model.image_size // model.patch_size
    return (unit @ unit.T).reshape(g, g, g, g)
