"""Live explorers: the book's trained models run in the reader's browser.

Each explorer is an ES module in the anywidget format (``export default
{ render }``) beside this file, plus the shared runtime ``runtime.js`` (the
few operations the models need) and ``shim.js`` (the website's stand-in for a
widget model). No bundler and no build step: :func:`module_source` joins the
runtime and an explorer into one module by dropping the explorer's one
``import ... from "./runtime.js"`` line.

* In Jupyter, JupyterLab and Colab an explorer is an ``anywidget.AnyWidget``
  whose traitlets carry the weights (float16 bytes), the architecture and the
  input; the reader's own trained model can be handed to it.
* On the website (``ATTNBOOK_STATIC=1``) it emits a self-contained fragment
  (:mod:`attnbook.widgets.live._fragment`, one for the four): the same code,
  the shim and the weights inline, as one classic script
  (:func:`script_source`: the module's ``export`` keywords left out, so that
  it runs as soon as the page's parser reaches it) (see :mod:`attnbook.widgets.live.induction`
  for why inline), and a PNG of the default input drawn by Python, which is
  what shows without JavaScript, on GitHub, in nbval's stored outputs and in
  the PDF.
"""

from __future__ import annotations

from ._pack import find_heads, pack_attention_only, unpack_attention_only
from ._pack_dates import pack_gru_seq2seq, unpack_gru_seq2seq
from ._source import module_source, read_source, script_source
from .dates import DatesLive, dates_live
from .digits import DigitsLive, digits_live
from .induction import InductionLive, induction_live, load_chapter_weights
from .lm import LMLive, lm_live, load_lm_weights

__all__ = [
    "DatesLive",
    "DigitsLive",
    "digits_live",
    "InductionLive",
    "dates_live",
    "LMLive",
    "find_heads",
    "induction_live",
    "lm_live",
    "load_chapter_weights",
    "load_lm_weights",
    "module_source",
    "pack_attention_only",
    "pack_gru_seq2seq",
    "read_source",
    "script_source",
    "unpack_attention_only",
    "unpack_gru_seq2seq",
]
