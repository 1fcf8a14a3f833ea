"""The HTML of the concept questions: the question as the page shows it, and its answer.

All text is written in a small Markdown (paragraphs, ```code```, ``**bold**``,
``*italic*``, ``$maths$``); :func:`markdown` turns it into HTML with the maths
in ``<span class="math">\\(...\\)</span>``, the form Sphinx gives MathJax, so the
website typesets it with the MathJax it already loads (Sphinx's MathJax looks
only inside elements of class ``math``).

:func:`question_html` is the whole question: the prompt, the options (native
radio buttons or check boxes, or a text box), the buttons, and every piece of
feedback, hidden until the reader answers. ``quiz.js`` only shows and hides:
with no JavaScript (GitHub, the PDF) the question and its options still read,
and the answers are in the appendix (:func:`answer_html`).
"""

from __future__ import annotations

import html
import re

from ._data import Question, load

LETTERS = "ABCDEF"
SITE = "https://attention-interactively.github.io/attention-interactively/book/"

_SPANS = re.compile(r"(`[^`]+`|\$[^$]+\$)")  # inline code and maths, kept as written
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_SENTENCE_END = re.compile(r"[.?!][\"”’)]*(?=\s|$)")
_ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\bcf|\bvs|\bet al|\bEq|\bFig)\.$")


def inline(text: str) -> str:
    """One paragraph of the small Markdown as HTML (escaped, no block elements)."""
    out = []
    for i, part in enumerate(_SPANS.split(text)):
        if i % 2:
            body = html.escape(part[1:-1], quote=False)
            if part[0] == "`":
                out.append(f"<code>{body}</code>")
            else:
                out.append(f'<span class="math notranslate nohighlight">\\({body}\\)</span>')
            continue
        part = html.escape(part, quote=False)
        part = _BOLD.sub(r"<strong>\1</strong>", part)
        part = _ITALIC.sub(r"<em>\1</em>", part)
        out.append(part)
    return "".join(out)


def one_line(text: str) -> str:
    """The small Markdown on one line (a list item, a table cell): every run of
    white space, line breaks and blank lines included, made one space."""
    return " ".join(text.split())


def first_sentence(text: str) -> str:
    """The first sentence of the small Markdown, bold and italic dropped, maths and
    code kept as written (``$...$``, backticks): its first paragraph up to the
    first '.', '?' or '!' that ends a sentence outside them ("e.g.", "et al." and
    the like do not). :func:`plain` would turn the maths into Unicode text; the
    instructor guide and the decks keep it for MathJax."""
    paragraph = one_line(re.split(r"\n\s*\n", text.strip())[0])
    done = ""
    for i, part in enumerate(_SPANS.split(paragraph)):
        if i % 2 == 0:
            part = _ITALIC.sub(r"\1", _BOLD.sub(r"\1", part))
            for end in _SENTENCE_END.finditer(part):
                if not _ABBREVIATION.search(done + part[: end.start() + 1]):
                    return (done + part[: end.end()]).strip()
        done += part
    return done.strip()


def spans(text: str) -> list[str]:
    """``text`` split at its inline code and maths: the even items are prose, the
    odd ones a ```code``` or ``$maths$`` span as written."""
    return _SPANS.split(text)


def markdown(text: str) -> str:
    """The small Markdown as HTML: one ``<p>`` per paragraph (blank-line separated)."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    return "".join(f"<p>{inline(' '.join(p.split()))}</p>" for p in paragraphs)


# TeX made readable in plain text: the same table as quiz.js's readableTex.
_TEX = [
    (r"\\(?:left|right|[bB]ig{1,2}[lr]?)(?![a-zA-Z])", ""),
    (r"(?<=\w)\\(cos|sin|tanh)(?![a-zA-Z])", r" \\\1"), (r"\\(cos|sin|tanh)\s*(?=[a-zA-Z\\])", r"\\\1 "),
    (r"\\bar\{([^{}]*)\}", "\\1\u0304"),
    (r"\\(?:mathbf|mathrm|text|operatorname)\{([^{}]*)\}", r"\1"),
    (r"\\(?:mathbf|mathrm|boldsymbol|mathcal)\s*", ""),
    (r"\\sqrt\{([^{}]*)\}", r"√(\1)"), (r"\\sqrt\s*(\w)", r"√\1"),
    (r"\\[td]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)"), (r"\\[td]?frac\s*(\w)(\w)", r"\1/\2"),
    (r"\^\{?\\top\}?", "ᵀ"), (r"\\top", "ᵀ"), (r"\\cdot(?![a-zA-Z])", "·"), (r"\\times", "×"),
    (r"\\approx", "≈"), (r"\\neq?(?![a-zA-Z])", "≠"), (r"\\le(q)?\b", "≤"), (r"\\ge(q)?\b", "≥"), (r"\\infty", "∞"),
    (r"\\to\b", "→"), (r"\\in\b", "∈"), (r"\\sum", "Σ"), (r"\\[lc]?dots", "…"),
    (r"\\alpha", "α"), (r"\\beta", "β"), (r"\\delta", "δ"), (r"\\theta", "θ"), (r"\\lambda", "λ"),
    (r"\\pi", "π"), (r"\\phi", "φ"), (r"\\omega", "ω"), (r"\\sigma", "σ"), (r"\\rho", "ρ"),
    (r"\^\{([^{}]{2,})\}", r"^(\1)"),
    (r"\\ell", "ℓ"), (r"\\(exp|log|ln|max|min|softmax|sin|cos|tanh)(?![a-zA-Z])", r"\1"),
    (r"\\[,;! ]", " "), (r"\\\{", "{"), (r"\\\}", "}"), (r"[{}]", ""),
]  # fmt: skip


def readable_tex(tex: str) -> str:
    """TeX as Unicode text, where no MathJax is at hand (``quiz.js`` has the same table)."""
    for pattern, replacement in _TEX:
        tex = re.sub(pattern, replacement, tex)
    return re.sub(r"√\((\w)\)", r"√\1", tex)


def plain(text: str) -> str:
    """The small Markdown as plain text (for ``text/plain`` and the slides' notes)."""
    text = re.sub(r"\$([^$]+)\$", lambda m: readable_tex(m.group(1)), text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()))


def link(target: str, site: str | None) -> str:
    """The URL of ``page#label``: relative on the website (``site=None``), else on ``site``."""
    page, label = target.split("#")
    return f"{site or ''}{page}.html#{label}"


def _reread(target: str, site: str | None) -> str:
    return (
        f'<p class="attnbook-quiz-reread"><a href="{html.escape(link(target, site))}">'
        "Reread the section</a></p>"
    )


def _feedback(kind: str, head: str, body: str, target: str, site: str | None, **data) -> str:
    attributes = "".join(
        f' data-{name}="{html.escape(str(value))}"' for name, value in data.items()
    )
    return (
        f'<div class="attnbook-quiz-fb" data-fb="{kind}"{attributes} hidden>'
        f'<p class="attnbook-quiz-head"><strong>{html.escape(head)}</strong></p>'
        f"{markdown(body)}{_reread(target, site)}</div>"
    )


def question_html(question: Question, site: str | None = None) -> str:
    """The question as the page shows it (see the module docstring).

    Links point at the section's page on ``site`` (the published website, from
    Jupyter and Colab) or, with ``site=None``, relative (the website itself).
    """
    q = question
    name = html.escape(q.key)
    kind_words = {
        "choice": "Select all that apply." if q.multiple else "",
        "numeric": "",
        "predict": "Predict first, then look.",
    }
    try:  # its place in the chapter (a question parsed from a string has none)
        number = next((i + 1 for i, o in enumerate(load(q.chapter)) if o.id == q.id), None)
    except ValueError:
        number = None
    head = (
        '<p class="attnbook-quiz-title"><strong>Check your understanding'
        + (f" {number}" if number else "")
        + "</strong>"
        + (
            f' <span class="attnbook-quiz-how">{kind_words[q.kind]}</span>'
            if kind_words[q.kind]
            else ""
        )
        + "</p>"
    )
    data = f'data-kind="{q.kind}" data-key="{name}"'
    parts = [f'<div class="attnbook-quiz" {data}>', head]
    prompt_id = f"attnbook-quiz-{q.chapter}-{q.id}"
    parts.append(f'<div class="attnbook-quiz-prompt" id="{prompt_id}">{markdown(q.prompt)}</div>')
    if q.kind == "numeric":
        parts.append(
            f'<div class="attnbook-quiz-number" data-answer="{q.answer!r}" data-tolerance="{q.tolerance!r}">'
            '<label>Your answer <input type="text" inputmode="decimal" autocomplete="off" '
            'spellcheck="false" size="10"></label>'
            + (f" <span>{inline(q.unit)}</span>" if q.unit else "")
            + "</div>"
        )
    else:
        kind = "checkbox" if q.multiple else "radio"
        parts.append(f'<fieldset class="attnbook-quiz-options" aria-labelledby="{prompt_id}">')
        for i, option in enumerate(q.options):
            parts.append(
                f'<label class="attnbook-quiz-option"><input type="{kind}" name="{name}" value="{i}">'
                f'<span class="attnbook-quiz-letter">{LETTERS[i]}.</span> '
                f"<span>{inline(' '.join(option.text.split()))}</span></label>"
            )
        parts.append("</fieldset>")
    button = "I predict this" if q.kind == "predict" else "Check"
    parts.append(
        '<p class="attnbook-quiz-buttons">'
        f'<button type="button" class="attnbook-quiz-check">{button}</button>'
        + (
            ' <button type="button" class="attnbook-quiz-reveal" hidden>Show the answer</button>'
            if q.kind == "predict"
            else ""
        )
        + "</p>"
    )
    if q.kind == "predict":
        parts.append(
            '<div class="attnbook-quiz-look" hidden><p><strong>Now look.</strong></p>'
            f"{markdown(q.look)}</div>"
        )
    parts.append('<div class="attnbook-quiz-result" role="status" aria-live="polite"></div>')
    parts.append(
        '<p class="attnbook-quiz-print" hidden>The answer, and why each option is right or '
        "wrong, is in the appendix “Answers to the concept questions”.</p>"
    )
    if q.kind == "numeric":
        parts.append(_feedback("right", "Right.", q.feedback, q.section, site))
        for wrong in q.wrong:
            parts.append(
                _feedback(
                    "wrong",
                    "Not quite.",
                    wrong.feedback,
                    wrong.reread,
                    site,
                    value=repr(wrong.value),
                    tolerance=repr(wrong.tolerance),
                )  # fmt: skip
            )
        parts.append(_feedback("otherwise", "Not quite.", q.otherwise, q.section, site))
    else:
        for i, option in enumerate(q.options):
            parts.append(
                _feedback(
                    "option",
                    f"{LETTERS[i]}: {'right' if option.correct else 'not right'}.",
                    option.feedback,
                    option.reread,
                    site,
                    option=i,
                    correct=int(option.correct),
                    letter=LETTERS[i],
                )  # fmt: skip
            )
    parts.append("</div>")
    return "".join(parts)


def key_text(question: Question) -> str:
    """The answer in a few words: the right letters, or the number and its tolerance."""
    if question.kind == "numeric":
        tol = f" (± {question.tolerance:g})" if question.tolerance else ""
        return f"{question.answer:g}{tol}" + (f" {question.unit}" if question.unit else "")
    return ", ".join(LETTERS[i] for i in question.right)


def answer_html(question: Question, number: str, site: str | None = None) -> str:
    """The appendix's entry for ``question``: its number, the key and every piece of feedback."""
    q = question
    parts = [
        f'<div class="attnbook-quiz-answer" id="answer-{html.escape(q.chapter)}-{html.escape(q.id)}">',
        f"<p><strong>{html.escape(number)}</strong> "
        f'<a href="{html.escape(link(q.section, site))}">(the question’s section)</a> '
        f"Answer: <strong>{inline(key_text(q))}</strong></p>",
    ]
    if q.kind == "numeric":
        parts.append(markdown(q.feedback))
        items = [
            f"<li>{html.escape(f'{w.value:g}')}: {inline(' '.join(w.feedback.split()))}</li>"
            for w in q.wrong
        ]
        items.append(f"<li>Any other number: {inline(' '.join(q.otherwise.split()))}</li>")
    else:
        items = [
            f"<li><strong>{LETTERS[i]}</strong> ({'right' if o.correct else 'wrong'}): "
            f"{inline(' '.join(o.feedback.split()))}</li>"
            for i, o in enumerate(q.options)
        ]
    parts.append(f"<ul>{''.join(items)}</ul></div>")
    return "".join(parts)


def question_text(question: Question) -> str:
    """The question as plain text: what a notebook shows before its widget runs."""
    q = question
    lines = ["Check your understanding", "", plain(q.prompt), ""]
    if q.kind == "numeric":
        lines.append("Your answer: ____" + (f" {q.unit}" if q.unit else ""))
    else:
        lines += [f"{LETTERS[i]}. {plain(o.text)}" for i, o in enumerate(q.options)]
    return "\n".join(lines)
