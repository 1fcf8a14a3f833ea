"""Checkers of Part III: the Transformer block."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._draws import _draws
from ._explain import explainer
from ._probes import _chain, _refusing, _watched
from ._source import Shortcut
from .part2 import _count

#: Caught at run time in this process; read in the source a grader's proxy hands over.
_LAYER_NORM_SHORTCUT = Shortcut(
    "a library layer norm",
    (
        "torch.nn.functional.layer_norm",
        "torch.layer_norm",
        "torch.nn.LayerNorm",
        "torch.nn.functional.group_norm",
        "torch.nn.GroupNorm",
        "attnbook.norms.layer_norm",
        "attnbook.norms.LayerNorm",
    ),
    "a ready-made layer norm, which the exercise asks you to write from scratch",
    remote=True,
)

_BLOCK = "The Transformer Block"


def _centred(X: torch.Tensor, dim: int | None = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """X minus its mean, and the biased variance, over ``dim`` (None: the whole tensor)."""
    if dim is None:
        mean = X.mean()
        return X - mean, ((X - mean) ** 2).mean()
    mean = X.mean(dim=dim, keepdim=True)
    return X - mean, ((X - mean) ** 2).mean(dim=dim, keepdim=True)


def _ln_with(denominator: Callable, dim: int | None = -1) -> Callable:
    """A layer norm whose division is ``denominator(var, eps)``, over ``dim``."""

    def layer_norm(X, gamma, beta, eps):
        centred, var = _centred(X, dim)
        return gamma * centred / denominator(var, eps) + beta

    return layer_norm


def _ln_unbiased(X, gamma, beta, eps):
    centred = X - X.mean(dim=-1, keepdim=True)
    return gamma * centred / torch.sqrt(X.var(dim=-1, keepdim=True) + eps) + beta


def _ln_rms(X, gamma, beta, eps):
    return gamma * X / torch.sqrt((X * X).mean(dim=-1, keepdim=True) + eps) + beta


def _ln_no_affine(X, gamma, beta, eps):
    return _ln_with(lambda var, e: torch.sqrt(var + e))(X, 1.0, 0.0, eps)


def _ln_swapped(X, gamma, beta, eps):
    return _ln_with(lambda var, e: torch.sqrt(var + e))(X, beta, gamma, eps)


_LN_SECTION = _see("Layer normalisation from scratch", _BLOCK)


def _ln_library(X, gamma, beta, eps):
    from ..norms import layer_norm

    return layer_norm(X, gamma, beta, eps)


@knows(
    Mistake(
        "F.layer_norm",
        lambda X, gamma, beta, eps: torch.nn.functional.layer_norm(
            X, (X.shape[-1],), gamma, beta, eps
        ),
        "this calls nn.functional.layer_norm (or nn.LayerNorm), which the exercise asks you "
        "to write: take the mean and the biased variance over the last axis yourself; "
        + _LN_SECTION,
    ),
    Mistake(
        "attnbook.norms.layer_norm",
        _ln_library,
        "this calls the library's attnbook.norms.layer_norm (or its norms.LayerNorm), which "
        "the exercise asks you to write: take the mean and the biased variance over the last "
        "axis yourself; " + _LN_SECTION,
    ),
    Mistake(
        "divides by D - 1",
        _ln_unbiased,
        "this looks like the unbiased variance, divided by D - 1 (the default of "
        "torch.var and X.std): layer normalisation divides by D, so pass "
        "unbiased=False (correction=0) or take the mean of the squared deviations; " + _LN_SECTION,
    ),
    Mistake(
        "eps outside the square root",
        _ln_with(lambda var, eps: torch.sqrt(var) + eps),
        "this looks like (x - mean) / (sqrt(var) + eps): eps belongs inside the square "
        "root, sqrt(var + eps); the two differ when the variance is comparable to eps; "
        + _LN_SECTION,
    ),
    Mistake(
        "no eps",
        _ln_with(lambda var, eps: torch.sqrt(var)),
        "this looks like a division by sqrt(var) with no eps: a constant row then gives "
        "0 / 0 = NaN; add eps to the variance inside the square root; " + _LN_SECTION,
    ),
    Mistake(
        "eps squared",
        _ln_with(lambda var, eps: torch.sqrt(var + eps * eps)),
        "this looks like sqrt(var + eps**2): eps is added to the variance as it is, "
        "sqrt(var + eps), not squared; " + _LN_SECTION,
    ),
    Mistake(
        "no square root",
        _ln_with(lambda var, eps: var + eps),
        "this looks like a division by the variance (var + eps) instead of its square "
        "root, the standard deviation: the output's variance is then not 1; " + _LN_SECTION,
    ),
    Mistake(
        "over the first axis",
        _ln_with(lambda var, eps: torch.sqrt(var + eps), dim=0),
        "this looks like a mean and variance over the first axis (dim=0), across tokens: "
        "layer normalisation takes them over the last axis, one token's D features, "
        "dim=-1 with keepdim=True; " + _LN_SECTION,
    ),
    Mistake(
        "over the whole tensor",
        _ln_with(lambda var, eps: torch.sqrt(var + eps), dim=None),
        "this looks like one mean and one variance for the whole tensor (X.mean()): "
        "each token gets its own, over the last axis, dim=-1 with keepdim=True; " + _LN_SECTION,
    ),
    Mistake(
        "no centring (RMSNorm)",
        _ln_rms,
        "this looks like RMSNorm: it divides by the root mean square without subtracting "
        "the mean first; layer normalisation centres each token's features on their mean; "
        + _see("RMSNorm", _BLOCK),
    ),
    Mistake(
        "no gain or shift",
        _ln_no_affine,
        "this looks like a layer norm that leaves out the learned gain and shift: "
        "multiply by gamma and add beta after normalising; " + _LN_SECTION,
    ),
    Mistake(
        "gain and shift swapped",
        _ln_swapped,
        "this looks like gamma and beta swapped: the normalised value is multiplied by "
        "the gain gamma, then the shift beta is added; " + _LN_SECTION,
    ),
)
def check_layer_norm(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, gamma, beta, eps)``: layer normalisation of X (..., D) over its last axis.

    ``gamma`` and ``beta`` are (D,); the answer is
    ``gamma * (X - mean) / sqrt(var + eps) + beta`` with the mean and the
    biased variance (divided by D) taken over the last axis, as
    ``torch.nn.functional.layer_norm`` computes it, but without calling it or
    the library's ``attnbook.norms.layer_norm``, however imported (the exercise
    forbids both; a function that calls either is rejected). Each case is built
    to catch one mistake (its hint says which), and every known mistake is named.
    """
    from ..norms import layer_norm

    g = _generator(9)
    where = _LN_SECTION
    cases = []

    def case(description, X, gamma, beta, eps, hint):
        expected = torch.nn.functional.layer_norm(X, (X.shape[-1],), gamma, beta, eps)
        cases.append((description, (X, gamma, beta, eps), expected, hint + "; " + where))

    D = 6
    case(
        "X (4, 6), gain 1 and shift 0",
        3 * torch.randn(4, D, generator=g) + 2,
        torch.ones(D),
        torch.zeros(D),
        1e-5,
        "each row (one token's features) gets mean 0 and variance 1: mean and variance "
        "over the last axis, keepdim=True",
    )
    case(
        "X (5, 5), square: the axis matters",
        torch.randn(5, 5, generator=g) * torch.arange(1.0, 6.0),
        torch.ones(5),
        torch.zeros(5),
        1e-5,
        "normalise over the last axis (the features of one token), not over the rows",
    )
    case(
        "X (2, 3, 6) with a gain and a shift",
        torch.randn(2, 3, D, generator=g),
        torch.randn(D, generator=g),
        torch.randn(D, generator=g),
        1e-5,
        "multiply by gamma and add beta after normalising, feature by feature",
    )
    # Rows of two well-separated features: the variance (at least 1) dwarfs eps,
    # so only the divisor of the variance, D or D - 1, matters here.
    case(
        "X (3, 2), rows of two features",
        torch.tensor([[1.0, 3.0], [-2.0, 0.5], [4.0, -4.0]]),
        torch.ones(2),
        torch.zeros(2),
        1e-5,
        "the variance divides by D, not D - 1 (torch.var defaults to D - 1: pass "
        "unbiased=False, or correction=0)",
    )
    case(
        "a constant row: variance 0",
        torch.tensor([[2.0, 2.0, 2.0, 2.0], [1.0, -1.0, 0.5, 0.0]]),
        torch.ones(4),
        torch.full((4,), 0.5),
        1e-5,
        "add eps to the variance inside the square root, so a constant row gives beta "
        "instead of 0/0",
    )
    case(
        "tiny features, eps = 0.01",
        0.05 * torch.randn(3, D, generator=g),
        torch.ones(D),
        torch.zeros(D),
        1e-2,
        "eps goes inside the square root, sqrt(var + eps), not after it",
    )
    return _run(
        "check_layer_norm",
        fn,
        cases,
        mistakes=check_layer_norm.mistakes,
        probe=_chain(
            _watched(
                ("layer_norm", "group_norm"),
                "nn.functional.layer_norm (or nn.LayerNorm), which the exercise replaces",
            ),
            _refusing(
                [layer_norm], "the library's attnbook.norms.layer_norm, which the exercise replaces"
            ),
        ),
        refuse=(_LAYER_NORM_SHORTCUT,),
    )


def _count_without(minus: Callable[[int, int], int]) -> Callable[[int, int], int]:
    def count(num_hiddens, ffn_hiddens):
        D, F = num_hiddens, ffn_hiddens
        return 4 * D * D + 2 * D * F + 9 * D + F - minus(D, F)

    return count


_COST = _see("What a block costs", _BLOCK)


def _block_built(num_hiddens: int, ffn_hiddens: int) -> int:
    from ..transformer import TransformerBlock

    block = TransformerBlock(num_hiddens, 1, ffn_hiddens)
    return sum(p.numel() for p in block.parameters())


@knows(
    Mistake(
        "builds the block",
        _block_built,
        "this builds a TransformerBlock and counts its parameters: the exercise asks for "
        "the formula, from the shapes of its matrices and vectors; " + _COST,
    ),
    Mistake(
        "4D short",
        _count_without(lambda D, F: 4 * D),
        "this count is 4D short: the two LayerNorms each have a gain and a shift of D "
        "numbers (4D in all), and the attention has four bias vectors of D (4D); one of "
        "the two is missing; " + _COST,
    ),
    Mistake(
        "one norm, or norms without a shift",
        _count_without(lambda D, F: 2 * D),
        "this count is 2D short: there are two LayerNorms, each with a gain and a shift "
        "of D numbers, 4D in all; " + _COST,
    ),
    Mistake(
        "no biases",
        lambda D, F: 4 * D * D + 2 * D * F + 4 * D,
        "this looks like a count without the biases of the linear maps: attention has four "
        "bias vectors of D, the FFN one of F and one of D; " + _COST,
    ),
    Mistake(
        "assumes F = 4D",
        lambda D, F: 12 * D * D + 13 * D,
        "this looks like 12 D^2 + 13 D, which holds only when ffn_hiddens = 4D: write the "
        "FFN with its own width F, 2DF + F + D; " + _COST,
    ),
    Mistake(
        "12 D^2",
        lambda D, F: 12 * D * D,
        "this looks like the rule of thumb 12 D^2: it assumes F = 4D and leaves out every "
        "bias and norm; count the vectors too, and use F; " + _COST,
    ),
    Mistake(
        "FFN counted once",
        _count_without(lambda D, F: D * F + D),
        "this count misses one of the FFN's two matrices (D x F and F x D) and its bias; " + _COST,
    ),
)
def check_block_parameter_count(fn: Callable[[int, int], int]) -> CheckReport:
    """Check ``fn(num_hiddens, ffn_hiddens)``: the number of learnable parameters of
    ``attnbook.transformer.TransformerBlock(num_hiddens, num_heads, ffn_hiddens)``.

    The expected answers come from building the block and counting its entries
    (the number of heads does not change the count). Every case has fewer than
    10,000 parameters, so any wrong count fails.
    """
    from ..transformer import TransformerBlock

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    sizes = [(8, 2, 32), (12, 3, 48), (16, 4, 24), (10, 1, 10)]
    draw = _draws(907)
    if draw is not None:  # a hidden test: other widths (fewer than 10,000 parameters)
        widths = [draw.int(4, 20, avoid=(8, 12)), draw.int(4, 20, avoid=(8, 12))]
        widths += [draw.int(4, 24, avoid=(16,)), draw.int(4, 24, avoid=(10,))]
        ffns = [4 * widths[0], 4 * widths[1], draw.int(4, 64, avoid=(4 * widths[2],)), widths[3]]
        sizes = [
            (D, draw.choice([h for h in range(1, D + 1) if D % h == 0]), F)
            for D, F in zip(widths, ffns)
        ]
    cases = []
    for hiddens, heads, ffn in sizes:
        with torch.random.fork_rng(devices=[]):  # building a block draws random weights
            block = TransformerBlock(hiddens, heads, ffn)
        total = sum(p.numel() for p in block.parameters())
        hint = (
            "attention: four D x D matrices and four bias vectors; FFN: D x F and F x D "
            "matrices with biases of F and D; two LayerNorms, each with a gain and a shift "
            "of D; " + _see("What a block costs", _BLOCK)
        )
        cases.append(
            (
                f"num_hiddens={hiddens}, ffn_hiddens={ffn}",
                (hiddens, ffn),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run(
        "check_block_parameter_count",
        _count(fn),
        cases,
        mistakes=check_block_parameter_count.mistakes,
        probe=_refusing(
            [TransformerBlock.__init__],
            "TransformerBlock(...) to count its parameters; the exercise asks for a formula",
        ),
        explain=explainer(()),
    )
