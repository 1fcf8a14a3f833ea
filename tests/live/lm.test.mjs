// Chapter 10's live explorer (lib/attnbook/widgets/live/lm.js): the forward
// pass on the shipped float16 weights against PyTorch's on the same weights
// (tests/live/fixtures/lm.json, tools/live_export.py lm-fixtures): 1e-4 on
// logits, 1e-5 on attention weights; the reading of the prompt (unknown
// characters, empty, the longest, beyond the context); the filtered
// distribution against attnbook.sampling.next_token_probs; greedy
// continuations equal to lm.generate's; sampled ones equal to PyTorch's draws
// with the page's seeded numbers.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  continueFrom, describeChar, drawToken, encodePrompt, forward, loadTinyLM, newCache, nextTokenProbs, readTopK, step,
} from "../../lib/attnbook/widgets/live/lm.js";

const here = (path) => new URL(path, import.meta.url);
const fixture = JSON.parse(readFileSync(here("./fixtures/lm.json")));
const weights = readFileSync(here(`../../lib/attnbook/widgets/live/${fixture.weights}`));
const arch = JSON.parse(readFileSync(here("../../lib/attnbook/widgets/live/lm.json")));
const net = loadTinyLM(new Uint8Array(weights), arch);
const V = arch.vocab_size;

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

const pickRows = (values, width, rows) => rows.flatMap((r) => Array.from(values.subarray(r * width, (r + 1) * width)));

test("the fixtures cover the empty prompt, unknown characters, the longest and beyond the context", () => {
  const byName = Object.fromEntries(fixture.cases.map((c) => [c.name, c]));
  for (const name of ["empty", "only unknown", "unknown", "longest", "beyond the context", "one character"]) assert.ok(byName[name], name);
  assert.equal(byName.longest.ids.length, arch.max_len);
  assert.equal(byName.longest.dropped, 0);
  assert.equal(byName["beyond the context"].ids.length, arch.max_len);
  assert.ok(byName["beyond the context"].dropped > 0);
  assert.ok(byName.unknown.unknown.length >= 4);
  assert.deepEqual(fixture.arch, Object.fromEntries(Object.entries(arch).filter(([k]) => k !== "source")));
});

test("a prompt is read in composed form (NFC), as encode_prompt reads it", () => {
  // "e" + a combining acute accent is one "é" (not in the vocabulary), not an "e" and a lone accent
  const decomposed = encodePrompt("cafe\u0301 ", arch.chars, arch.max_len);
  assert.deepEqual(decomposed, encodePrompt("caf\u00e9 ", arch.chars, arch.max_len));
  assert.deepEqual(decomposed.unknown, ["\u00e9"]);
  assert.deepEqual(decomposed.ids, Array.from("caf ", (c) => arch.chars.indexOf(c)));
});

test("the note names a non-printing character by its code point", () => {
  assert.equal(describeChar("\t"), "the invisible character U+0009");
  assert.equal(describeChar("\u0301"), "the invisible character U+0301");
  assert.equal(describeChar("\u200b"), "the invisible character U+200B");
  assert.equal(describeChar("\u00a0"), "the invisible character U+00A0");
  assert.equal(describeChar(" "), "a space");
  assert.equal(describeChar("\n"), "a line break");
  assert.equal(describeChar("\u00e9"), "“\u00e9”");
  assert.equal(describeChar("—"), "“—”");
});

test("an empty top-k box means no top-k (k = the vocabulary), not k = 1", () => {
  assert.equal(readTopK("", V), null);
  assert.equal(readTopK("  ", V), null);
  assert.equal(readTopK(String(V), V), null);
  assert.equal(readTopK(String(V + 5), V), null);
  assert.equal(readTopK("5", V), 5);
  assert.equal(readTopK("4.6", V), 5);
  assert.equal(readTopK("0", V), 1);
  assert.equal(readTopK("-3", V), 1);
});

for (const c of fixture.cases) {
  test(`prompt "${c.name}": characters read as Python reads them, logits and attention as PyTorch's`, (t) => {
    const parsed = encodePrompt(c.text, arch.chars, arch.max_len);
    assert.deepEqual(parsed, { ids: c.ids, unknown: c.unknown, dropped: c.dropped });
    const { logits, attention } = forward(net, parsed.ids);
    if (!c.ids.length) {
      assert.equal(logits.length, 0);
      assert.deepEqual(attention, []);
      return;
    }
    const n = c.ids.length;
    const logitDiff = maxDifference(pickRows(logits, V, c.rows), c.logits);
    assert.ok(logitDiff < 1e-4, `logits differ by ${logitDiff}`);
    let attentionDiff = 0;
    assert.equal(attention.length, arch.num_layers);
    for (let l = 0; l < arch.num_layers; l++) {
      assert.equal(attention[l].length, arch.num_heads);
      for (let h = 0; h < arch.num_heads; h++) {
        const d = maxDifference(pickRows(attention[l][h], n, c.rows), c.attention[l][h]);
        assert.ok(d < 1e-5, `block ${l} head ${h}: attention differs by ${d}`);
        attentionDiff = Math.max(attentionDiff, d);
      }
    }
    // Greedy continuation: exactly lm.generate's characters.
    const steps = Math.min(fixture.continue, arch.max_len - n);
    const cache = newCache(net);
    const last = step(net, c.ids, cache).logits.slice((n - 1) * V);
    assert.deepEqual(continueFrom(net, cache, last, steps).ids, c.greedy);
    t.diagnostic(`largest difference from PyTorch: logits ${logitDiff.toExponential(1)}, attention ${attentionDiff.toExponential(1)}`);
  });
}

test("a cache fed one character at a time gives the whole prompt's logits", () => {
  const c = fixture.cases.find((x) => x.name === "attention");
  const whole = forward(net, c.ids).logits;
  const cache = newCache(net);
  let last;
  for (const id of c.ids) last = step(net, [id], cache).logits;
  assert.ok(maxDifference(last, whole.slice((c.ids.length - 1) * V)) < 1e-9);
});

test("temperature, top-k and top-p give attnbook.sampling.next_token_probs's distribution", () => {
  const logits = Float64Array.from(fixture.filters.logits);
  for (const f of fixture.filters.cases) {
    const probs = nextTokenProbs(logits, f.temperature, f.top_k, f.top_p);
    const label = `T=${f.temperature} k=${f.top_k} p=${f.top_p}`;
    assert.ok(maxDifference(probs, f.expected) < 1e-12, label);
    assert.deepEqual(Array.from(probs, (p) => p > 0), f.expected.map((p) => p > 0), `${label}: the kept set`);
  }
  // On the page's own logits (1e-4 from PyTorch's) the distribution stays within 1e-4.
  const c = fixture.cases.find((x) => x.name === "attention");
  const own = forward(net, c.ids).logits.slice((c.ids.length - 1) * V);
  for (const f of fixture.filters.cases.filter((x) => x.temperature >= 0.5)) {
    assert.ok(maxDifference(nextTokenProbs(own, f.temperature, f.top_k, f.top_p), f.expected) < 1e-4);
  }
  // A tie at the nucleus boundary keeps the lower indices, as attnbook.sampling does.
  for (const [vocab, p, kept] of [[4, 0.5, [0, 1]], [6, 0.4, [0, 1, 2]], [64, 0.1, [0, 1, 2, 3, 4, 5, 6]]]) {
    const tied = nextTokenProbs(new Float64Array(vocab), 1, null, p);
    assert.deepEqual(Array.from(tied.keys()).filter((i) => tied[i] > 0), kept, `${vocab} tied tokens, p=${p}`);
  }
  assert.throws(() => nextTokenProbs(logits, 0), RangeError);
  assert.throws(() => nextTokenProbs(logits, 1, 0), RangeError);
  assert.throws(() => nextTokenProbs(logits, 1, null, 1.5), RangeError);
});

test("a draw inverts the cumulative distribution as sampling.draw does", () => {
  const probs = Float64Array.from([0.2, 0, 0.5, 0.3]);
  assert.equal(drawToken(probs, 0.2), 0);
  assert.equal(drawToken(probs, 0.2000001), 2);
  assert.equal(drawToken(probs, 1), 3);
});

for (const s of fixture.sampled) {
  test(`sampled continuation of "${s.text}" (T=${s.temperature}, k=${s.top_k}, p=${s.top_p}, seed ${s.seed}) equals PyTorch's draws`, () => {
    const cache = newCache(net);
    const n = s.ids.length;
    const last = step(net, s.ids, cache).logits.slice((n - 1) * V);
    const out = continueFrom(net, cache, last, fixture.continue, {
      greedy: false, temperature: s.temperature, topK: s.top_k, topP: s.top_p, seed: s.seed,
    });
    assert.ok(maxDifference(out.uniforms, s.uniforms) < 1e-15);
    assert.deepEqual(out.ids, s.expected);
  });
}

test("forward refuses characters outside the vocabulary and positions past max_len", () => {
  assert.throws(() => forward(net, [V]), RangeError);
  assert.throws(() => forward(net, [-1]), RangeError);
  assert.throws(() => forward(net, new Array(arch.max_len + 1).fill(0)), RangeError);
});

test("the last position alone (lastOnly) gives the whole forward's last logits and attention rows", () => {
  for (const name of ["longest", "attention", "one character"]) {
    const c = fixture.cases.find((x) => x.name === name);
    const n = c.ids.length;
    const whole = forward(net, c.ids);
    // from scratch, and after a cache that holds all but the last three positions
    for (const kept of [0, Math.max(0, n - 3)]) {
      const cache = newCache(net);
      if (kept) step(net, c.ids.slice(0, kept), cache);
      const part = step(net, c.ids.slice(kept), cache, true);
      assert.equal(part.logits.length, V);
      assert.ok(maxDifference(part.logits, whole.logits.slice((n - 1) * V)) < 1e-9);
      for (let l = 0; l < arch.num_layers; l++) {
        for (let h = 0; h < arch.num_heads; h++) {
          const w = part.attention[l][h];
          assert.ok(maxDifference(w.slice(w.length - n), whole.attention[l][h].slice((n - 1) * n)) < 1e-12);
        }
      }
    }
  }
});
