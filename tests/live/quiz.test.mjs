// The concept questions' script (lib/attnbook/quiz/quiz.js): the pure parts.
// Its behaviour on a page (answering, feedback, predict-then-look) is tested in
// Chromium on the built site (tests/test_concept_questions_browser.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseNumber, readableTex } from "../../lib/attnbook/quiz/quiz.js";

test("a reader's number is read in the forms people type", () => {
  assert.equal(parseNumber("0.25"), 0.25);
  assert.equal(parseNumber(" 0,25 "), 0.25);
  assert.equal(parseNumber("\u22120.5"), -0.5);
  assert.equal(parseNumber("1/4"), 0.25);
  assert.equal(parseNumber("25%"), 0.25);
  assert.equal(parseNumber(".5"), 0.5);
  assert.equal(parseNumber("3"), 3);
  assert.equal(parseNumber("1e-3"), 0.001);
  assert.equal(parseNumber("1.67772e+07"), 16777200);
});

test("what is not a number is refused, not read as 0", () => {
  for (const text of ["", "abc", "1/0", "0.2.5", "--1", "1,000,000", "two"]) {
    assert.equal(parseNumber(text), null, text);
  }
});

test("TeX reads as Unicode where no MathJax is at hand", () => {
  assert.equal(readableTex(String.raw`\mathbf q^\top \mathbf k / \sqrt{d}`), "qᵀ k / √d");
  assert.equal(readableTex(String.raw`\frac{1}{\sqrt{d}}`), "(1)/(√d)");
  assert.equal(readableTex(String.raw`a \le b \cdot c \to \infty`), "a ≤ b · c → ∞");
  assert.equal(readableTex(String.raw`\mathrm{softmax}(x)_i`), "softmax(x)_i");
});

test("every macro the questions use reads as text (lib/tests/test_quiz_text.py's cases)", () => {
  const cases = {
    [String.raw`\bar{\boldsymbol\alpha}_l`]: "\u03b1\u0304_l",
    [String.raw`\tfrac12 (x + y)`]: "1/2 (x + y)",
    [String.raw`e / \sqrt d`]: "e / \u221ad",
    [String.raw`\log_2 n \ne \ln n`]: "log_2 n \u2260 ln n",
    [String.raw`x_0, \dots, x_{n-1}`]: "x_0, \u2026, x_n-1",
    [String.raw`\cos(i\omega) \big(\sin \phi\big) \pi`]: "cos(i\u03c9) (sin \u03c6) \u03c0",
  };
  for (const [tex, text] of Object.entries(cases)) assert.equal(readableTex(tex), text, tex);
});

test("functions keep their spaces and grouped exponents their brackets (lib/tests/test_quiz_text.py)", () => {
  assert.equal(
    readableTex(String.raw`(a\cos\phi - b\sin\phi,\ a\sin\phi + b\cos\phi)`),
    "(a cos φ - b sin φ, a sin φ + b cos φ)",
  );
  assert.equal(readableTex(String.raw`s_0 = 2^{-8/4} = 1/4`), "s_0 = 2^(-8/4) = 1/4");
});
