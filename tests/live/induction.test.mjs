// Chapter 11's live explorer (lib/attnbook/widgets/live/induction.js): the
// forward pass on the shipped float16 weights against PyTorch's on the same
// weights (tests/live/fixtures/induction.json, tools/live_export.py): 1e-4 on
// logits, 1e-5 on every attention weight; and the reading of the text box.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { forward, loadAttentionOnly, parseTokens, repeatSequence } from "../../lib/attnbook/widgets/live/induction.js";

const here = (path) => new URL(path, import.meta.url);
const fixture = JSON.parse(readFileSync(here("./fixtures/induction.json")));
const weights = readFileSync(here(`../../lib/attnbook/widgets/live/${fixture.weights}`));
const arch = JSON.parse(readFileSync(here("../../lib/attnbook/widgets/live/induction.json")));
const net = loadAttentionOnly(new Uint8Array(weights), arch);

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("the fixtures cover the empty, the longest, unknown and too many tokens", () => {
  const names = fixture.cases.map((c) => c.name);
  for (const name of ["empty", "longest", "unknown tokens", "too long", "one token"]) assert.ok(names.includes(name), name);
  const longest = fixture.cases.find((c) => c.name === "longest");
  assert.equal(longest.tokens.length, arch.max_len);
  assert.deepEqual(fixture.arch, Object.fromEntries(Object.entries(arch).filter(([k]) => !["heads", "source"].includes(k))));
});

for (const c of fixture.cases) {
  test(`input "${c.name}": tokens as Python reads them, logits and every attention matrix as PyTorch's`, (t) => {
    const parsed = parseTokens(c.text, arch.vocab, arch.max_len);
    assert.deepEqual(parsed, { tokens: c.tokens, unknown: c.unknown, dropped: c.dropped });
    const { logits, attention } = forward(net, parsed.tokens);
    const logitDiff = maxDifference(logits, c.logits);
    assert.ok(logitDiff < 1e-4, `logits differ by ${logitDiff}`);
    let attentionDiff = 0;
    if (!c.tokens.length) {
      assert.equal(logits.length, 0);
      return;
    }
    assert.equal(attention.length, arch.num_layers);
    for (let l = 0; l < arch.num_layers; l++) {
      assert.equal(attention[l].length, arch.num_heads);
      for (let h = 0; h < arch.num_heads; h++) {
        const d = maxDifference(attention[l][h], c.attention[l][h]);
        assert.ok(d < 1e-5, `layer ${l} head ${h}: attention differs by ${d}`);
        attentionDiff = Math.max(attentionDiff, d);
      }
    }
    t.diagnostic(`largest difference from PyTorch: logits ${logitDiff.toExponential(1)}, attention ${attentionDiff.toExponential(1)}`);
  });
}

test("forward refuses tokens outside the vocabulary or past max_len", () => {
  assert.throws(() => forward(net, [arch.vocab]), RangeError);
  assert.throws(() => forward(net, [-1]), RangeError);
  assert.throws(() => forward(net, new Array(arch.max_len + 1).fill(0)), RangeError);
});

test("a random sequence holds its segment twice, and the same seed draws it again", () => {
  const a = repeatSequence(3, 40, 64);
  assert.deepEqual(a, repeatSequence(3, 40, 64));
  assert.equal(a.tokens.length, 40);
  const first = a.tokens.slice(a.first, a.first + a.segment);
  assert.deepEqual(a.tokens.slice(a.second, a.second + a.segment), first);
  assert.equal(new Set(first).size, a.segment);
  assert.ok(a.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < 64));
});

test("the model copies: on the default input most second-copy tokens are predicted", () => {
  const c = fixture.cases.find((x) => x.name === "default");
  const { logits } = forward(net, c.tokens);
  let right = 0;
  for (let i = 0; i + 1 < c.tokens.length; i++) {
    let best = 0;
    for (let v = 1; v < arch.vocab; v++) if (logits[i * arch.vocab + v] > logits[i * arch.vocab + best]) best = v;
    if (best === c.tokens[i + 1]) right++;
  }
  assert.ok(right >= 8, `only ${right} positions predicted`);
});
