// The concept questions' behaviour: show and hide what the page already holds.
//
// The HTML (attnbook/quiz/_html.py) carries the question, its options and every
// piece of feedback, hidden; this module only reacts to the reader: it checks
// an answer, shows the feedback of what was picked, and for a "predict, then
// look" question it locks the prediction, says what to look at, and reveals
// the answer on request. Nothing is fetched. One file serves Jupyter and Colab
// (anywidget: `export default { render }`) and the website (a classic script,
// the `export` lines dropped, that calls `wire` on its own question).

const STYLE = `
.attnbook-quiz{border:1px solid #8a94a6;border-left:4px solid #3d5a99;border-radius:6px;
  padding:.6em .9em;margin:1.2em 0;max-width:46em;box-sizing:border-box;overflow-wrap:anywhere;
  background:#fff;color:#1b1b1b}
.attnbook-quiz a{color:#1a55b0}
html[data-theme=dark] .attnbook-quiz,body[data-jp-theme-light=false] .attnbook-quiz{
  background:#1d2125;color:#e8e8e8}
html[data-theme=dark] .attnbook-quiz a,body[data-jp-theme-light=false] .attnbook-quiz a{color:#8cb8ff}
.attnbook-quiz p{margin:.35em 0}
.attnbook-quiz-title{font-size:.95em}
.attnbook-quiz-how{font-style:italic;margin-left:.4em}
.attnbook-quiz fieldset{border:0;margin:.4em 0;padding:0;min-width:0}
.attnbook-quiz-option{display:flex;gap:.45em;align-items:baseline;padding:.3em .2em;
  border-radius:4px;cursor:pointer}
.attnbook-quiz-option:hover{background:rgba(61,90,153,.08)}
.attnbook-quiz-option input{flex:none;margin:0 .1em;width:1.1em;height:1.1em}
.attnbook-quiz-letter{font-weight:bold;flex:none}
.attnbook-quiz-number input{font:inherit;padding:.2em .3em;max-width:10em}
.attnbook-quiz button{font:inherit;padding:.3em .9em;margin:.2em .4em .2em 0;border-radius:4px;
  border:1px solid #3d5a99;background:#3d5a99;color:#fff;cursor:pointer;min-height:2.2em}
.attnbook-quiz button:focus-visible,.attnbook-quiz input:focus-visible{outline:3px solid #f0a000;
  outline-offset:2px}
.attnbook-quiz-result{font-weight:bold;min-height:1em}
.attnbook-quiz-result[data-verdict=right]{color:#17692f}
.attnbook-quiz-result[data-verdict=wrong],.attnbook-quiz-result[data-verdict=part]{color:#a8200d}
html[data-theme=dark] .attnbook-quiz-result[data-verdict=right],
body[data-jp-theme-light=false] .attnbook-quiz-result[data-verdict=right]{color:#7ddc95}
html[data-theme=dark] .attnbook-quiz-result[data-verdict=wrong],
html[data-theme=dark] .attnbook-quiz-result[data-verdict=part],
body[data-jp-theme-light=false] .attnbook-quiz-result[data-verdict=wrong],
body[data-jp-theme-light=false] .attnbook-quiz-result[data-verdict=part]{color:#ff9d8a}
.attnbook-quiz-fb{border-top:1px dashed #8a94a6;margin-top:.4em;padding-top:.2em}
.attnbook-quiz-look{background:rgba(240,160,0,.12);padding:.2em .6em;border-radius:4px}
@media print{.attnbook-quiz-buttons,.attnbook-quiz-result,.attnbook-quiz-fb,.attnbook-quiz-look,
  .attnbook-quiz-number input{display:none}.attnbook-quiz{break-inside:avoid}
  .attnbook-quiz-print{display:block!important;font-style:italic}}
`;

let counter = 0;

function addStyle(doc) {
  if (doc.getElementById("attnbook-quiz-style")) return;
  const style = doc.createElement("style");
  style.id = "attnbook-quiz-style";
  style.textContent = STYLE;
  doc.head.appendChild(style);
}

// A reader's number: "0.25", "0,25", "−0.5", "1/4", "25%"; null if none.
export function parseNumber(text) {
  let t = String(text).trim().replace(/\u2212/g, "-").replace(/\s+/g, "");
  if (/^-?\d*,\d+$/.test(t)) t = t.replace(",", ".");
  let scale = 1;
  if (t.endsWith("%")) { t = t.slice(0, -1); scale = 0.01; }
  const fraction = /^(-?\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(t);
  if (fraction) {
    const d = Number(fraction[2]);
    return d === 0 ? null : (Number(fraction[1]) / d) * scale;
  }
  if (!/^-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return null;
  return Number(t) * scale;
}

function near(x, target, tolerance) {
  return Math.abs(x - target) <= tolerance + 1e-9 * Math.max(1, Math.abs(target));
}

export function wire(root) {
  if (!root || root.dataset.wired) return;
  root.dataset.wired = "1";
  addStyle(root.ownerDocument);
  const uid = `attnbook-quiz-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
  // Ids and radio names of this copy (a notebook may show a question twice).
  const prompt = root.querySelector(".attnbook-quiz-prompt");
  prompt.id = `${uid}-prompt`;
  const group = root.querySelector("fieldset");
  if (group) group.setAttribute("aria-labelledby", prompt.id);
  const inputs = [...root.querySelectorAll(".attnbook-quiz-option input")];
  for (const input of inputs) input.name = uid;
  const result = root.querySelector(".attnbook-quiz-result");
  const notes = [...root.querySelectorAll(".attnbook-quiz-fb")];
  const check = root.querySelector(".attnbook-quiz-check");
  const kind = root.dataset.kind;

  const say = (text, verdict) => {
    result.textContent = text;
    result.dataset.verdict = verdict;
  };
  const hideNotes = () => { for (const note of notes) note.hidden = true; };
  const picked = () => inputs.filter((input) => input.checked).map((input) => Number(input.value));
  const optionNote = (i) => notes.find((note) => note.dataset.option === String(i));
  const rightOnes = notes.filter((n) => n.dataset.fb === "option" && n.dataset.correct === "1")
    .map((n) => Number(n.dataset.option));

  // Show the feedback of each pick; say whether the picks are the key.
  const judge = (picks, reveal) => {
    hideNotes();
    for (const i of picks) optionNote(i).hidden = false;
    const right = picks.length === rightOnes.length && picks.every((i) => rightOnes.includes(i));
    const inside = picks.every((i) => rightOnes.includes(i));
    if (right) say("Right.", "right");
    else if (inside) {
      const left = rightOnes.length - picks.length;
      say(`Right so far, but ${left} more option${left > 1 ? "s are" : " is"} right too.`, "part");
    } else say(rightOnes.length > 1 ? "Not quite: look at the feedback of each pick." : "Not quite.", "wrong");
    if (reveal && !right) {
      for (const i of rightOnes) optionNote(i).hidden = false;
      const letters = rightOnes.map((i) => optionNote(i).dataset.letter).join(" and ");
      say(`Not quite: the answer is ${letters}.`, "wrong");
    }
    return right;
  };

  if (kind === "numeric") {
    const box = root.querySelector(".attnbook-quiz-number input");
    const holder = root.querySelector(".attnbook-quiz-number");
    const answer = Number(holder.dataset.answer);
    const tolerance = Number(holder.dataset.tolerance);
    const go = () => {
      hideNotes();
      const x = parseNumber(box.value);
      if (x === null) return say("Type a number first (for example 0.25 or 1/4).", "none");
      if (near(x, answer, tolerance)) {
        notes.find((n) => n.dataset.fb === "right").hidden = false;
        return say("Right.", "right");
      }
      const slip = notes.find((n) => n.dataset.fb === "wrong"
        && near(x, Number(n.dataset.value), Number(n.dataset.tolerance)));
      (slip || notes.find((n) => n.dataset.fb === "otherwise")).hidden = false;
      say("Not quite.", "wrong");
    };
    check.addEventListener("click", go);
    box.addEventListener("keydown", (event) => { if (event.key === "Enter") go(); });
  } else if (kind === "choice") {
    check.addEventListener("click", () => {
      const picks = picked();
      if (!picks.length) { hideNotes(); return say("Pick an option first.", "none"); }
      judge(picks, false);
    });
  } else {
    const look = root.querySelector(".attnbook-quiz-look");
    const reveal = root.querySelector(".attnbook-quiz-reveal");
    let picks = [];
    check.addEventListener("click", () => {
      picks = picked();
      if (!picks.length) return say("Pick your prediction first.", "none");
      for (const input of inputs) input.disabled = true;
      check.hidden = true;
      look.hidden = false;
      reveal.hidden = false;
      const letters = picks.map((i) => optionNote(i).dataset.letter).join(" and ");
      say(`Your prediction: ${letters}. Now look, then show the answer.`, "none");
      reveal.focus();
    });
    reveal.addEventListener("click", () => {
      judge(picks, true);
      reveal.hidden = true;
    });
  }
}

// TeX made readable where no MathJax is at hand (Colab's and JupyterLab's
// outputs): the common macros as Unicode, braces and delimiters dropped.
const TEX = [
  [/\\(?:left|right|[bB]ig{1,2}[lr]?)(?![a-zA-Z])/g, ""],
  [/(?<=\w)\\(cos|sin|tanh)(?![a-zA-Z])/g, " \\$1"], [/\\(cos|sin|tanh)\s*(?=[a-zA-Z\\])/g, "\\$1 "],
  [/\\bar\{([^{}]*)\}/g, "$1\u0304"],
  [/\\mathbf\{([^{}]*)\}|\\mathrm\{([^{}]*)\}|\\text\{([^{}]*)\}|\\operatorname\{([^{}]*)\}/g,
    (m, a, b, c, d) => a || b || c || d],
  [/\\(?:mathbf|mathrm|boldsymbol|mathcal)\s*/g, ""],
  [/\\sqrt\{([^{}]*)\}/g, "√($1)"], [/\\sqrt\s*(\w)/g, "√$1"],
  [/\\[td]?frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)"], [/\\[td]?frac\s*(\w)(\w)/g, "$1/$2"],
  [/\^\{?\\top\}?/g, "ᵀ"], [/\\top/g, "ᵀ"], [/\\cdot(?![a-zA-Z])/g, "·"], [/\\times/g, "×"],
  [/\\approx/g, "≈"], [/\\neq?(?![a-zA-Z])/g, "≠"], [/\\le(q)?\b/g, "≤"], [/\\ge(q)?\b/g, "≥"], [/\\infty/g, "∞"],
  [/\\to\b/g, "→"], [/\\in\b/g, "∈"], [/\\sum/g, "Σ"], [/\\[lc]?dots/g, "…"],
  [/\\alpha/g, "α"], [/\\beta/g, "β"], [/\\delta/g, "δ"], [/\\theta/g, "θ"], [/\\lambda/g, "λ"],
  [/\\pi/g, "π"], [/\\phi/g, "φ"], [/\\omega/g, "ω"], [/\\sigma/g, "σ"], [/\\rho/g, "ρ"],
  [/\^\{([^{}]{2,})\}/g, "^($1)"],
  [/\\ell/g, "ℓ"], [/\\(exp|log|ln|max|min|softmax|sin|cos|tanh)(?![a-zA-Z])/g, "$1"],
  [/\\[,;! ]/g, " "], [/\\\{/g, "{"], [/\\\}/g, "}"], [/[{}]/g, ""],
];

export function readableTex(tex) {
  let out = tex;
  for (const [pattern, replacement] of TEX) out = out.replace(pattern, replacement);
  return out.replace(/√\((\w)\)/g, "√$1");
}

// MathJax, where the page has it; else the TeX made readable.
function typeset(el) {
  const mj = el.ownerDocument.defaultView && el.ownerDocument.defaultView.MathJax;
  if (mj && typeof mj.typesetPromise === "function") {
    mj.typesetPromise([el]).catch(() => {});
    return;
  }
  for (const span of el.querySelectorAll("span.math")) {
    const tex = span.textContent.replace(/^\\\(|\\\)$/g, "");
    span.textContent = readableTex(tex);
    span.classList.add("attnbook-quiz-tex");
  }
}

// anywidget: the question's HTML is the model's `html`.
export function render({ model, el }) {
  el.innerHTML = model.get("html");
  const root = el.querySelector(".attnbook-quiz");
  wire(root);
  typeset(root);
}

export default { render };
