// Chapter 15's live explorer (lib/attnbook/widgets/live/digits.js): the tiny
// ViT's forward pass on the shipped float16 weights against PyTorch's on the
// same weights (tests/live/fixtures/digits.json, tools/live_export.py
// digits-fixtures): 1e-4 on logits, 1e-5 on every attention weight, on raw
// attention, rollout and occlusion (both fills), for a blank, a saturated, two
// test digits and a scribbled image.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { explain, forward, loadViT, occlusion, occlusionSlow } from "../../lib/attnbook/widgets/live/digits.js";

const here = (path) => new URL(path, import.meta.url);
const fixture = JSON.parse(readFileSync(here("./fixtures/digits.json")));
const weights = readFileSync(here(`../../lib/attnbook/widgets/live/${fixture.weights}`));
const stored = JSON.parse(readFileSync(here(`../../lib/attnbook/widgets/live/${fixture.arch}`)));
const net = loadViT(new Uint8Array(weights), stored);
const fills = { zero: new Float64Array(64), "mean image": Float64Array.from(stored.mean_image) };

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("the fixtures cover a blank, a saturated and a test image under both fills", () => {
  const names = new Set(fixture.cases.map((c) => `${c.name}/${c.fill}`));
  for (const name of ["blank", "saturated", "test digit", "scribble"]) {
    for (const fill of Object.keys(fills)) assert.ok(names.has(`${name}/${fill}`), `${name}/${fill}`);
  }
  assert.equal(stored.examples.length, 10);
  assert.deepEqual(stored.examples.map((e) => e.label), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

for (const c of fixture.cases) {
  test(`image "${c.name}", ${c.fill} fill: logits, attention, rollout and occlusion as PyTorch's`, (t) => {
    const out = explain(net, Float64Array.from(c.pixels), fills[c.fill]);
    const logitDiff = maxDifference(out.logits, c.logits);
    assert.ok(logitDiff < 1e-4, `logits differ by ${logitDiff}`);
    assert.equal(out.predicted, c.predicted);
    let attentionDiff = 0;
    out.attention.forEach((block, l) => block.forEach((w, h) => {
      attentionDiff = Math.max(attentionDiff, maxDifference(w, c.attention[l][h]));
    }));
    assert.ok(attentionDiff < 1e-5, `attention differs by ${attentionDiff}`);
    const diffs = [];
    for (const key of ["probs", "raw", "rollout", "occlusion"]) {
      const diff = maxDifference(out[key], c[key]);
      assert.ok(diff < 1e-5, `${key} differs by ${diff}`);
      diffs.push(`${key} ${diff.toExponential(1)}`);
    }
    t.diagnostic(`largest difference from PyTorch: logits ${logitDiff.toExponential(1)}, attention ${attentionDiff.toExponential(1)}, ${diffs.join(", ")}`);
  });
}

test("the [CLS]-only last block gives the full pass's logits (what occlusion runs)", () => {
  const pixels = Float64Array.from(fixture.cases.find((c) => c.name === "test digit").pixels);
  const full = forward(net, pixels);
  const short = forward(net, pixels, true);
  assert.ok(maxDifference(short.logits, full.logits) < 1e-12);
  assert.equal(short.attention[1][0].length, 17);
});

test("occlusion's shortened passes give the plain passes' numbers, under both fills", () => {
  for (const c of fixture.cases.filter((k) => k.name !== "blank")) {
    const pixels = Float64Array.from(c.pixels);
    const fast = occlusion(net, pixels, fills[c.fill], c.predicted);
    const slow = occlusionSlow(net, pixels, fills[c.fill], c.predicted);
    assert.ok(maxDifference(fast, slow) < 1e-12, `${c.name}: ${maxDifference(fast, slow)}`);
  }
});

test("occlusion with a fill equal to the image changes nothing; bad images are refused", () => {
  const pixels = Float64Array.from(fixture.cases.find((c) => c.name === "scribble").pixels);
  assert.ok(occlusion(net, pixels, pixels, 3).every((v) => v === 0));
  assert.throws(() => forward(net, new Float64Array(63)), RangeError);
  assert.throws(() => forward(net, Float64Array.from({ length: 64 }, () => NaN)), RangeError);
  assert.throws(() => occlusion(net, pixels, new Float64Array(4), 0), RangeError);
  assert.throws(() => loadViT(weights, { ...stored, model: "attention-only" }), TypeError);
});
