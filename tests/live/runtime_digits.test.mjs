// The runtime's operations for chapter 15's explorer (the block at the end of
// lib/attnbook/widgets/live/runtime.js) against PyTorch: ReLU, patchify,
// self-attention with biases, attention rollout and the [CLS] map
// (tests/live/fixtures/runtime_digits.json, tools/live_export.py digits-fixtures).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  attentionRollout, biasedSelfAttention, clsAttention, patchify, relu,
} from "../../lib/attnbook/widgets/live/runtime.js";

const f = JSON.parse(readFileSync(new URL("./fixtures/runtime_digits.json", import.meta.url)));

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("relu matches torch.relu", () => {
  assert.deepEqual(Array.from(relu(Float64Array.from(f.relu.x))), f.relu.expected);
});

test("patchify numbers patches and their pixels as attnbook.patches.patchify (2 channels, 6x4)", () => {
  const p = f.patchify;
  const out = patchify(Float64Array.from(p.pixels), p.channels, p.height, p.width, p.p);
  assert.deepEqual(Array.from(out), p.expected);
  assert.throws(() => patchify(new Float64Array(30), 1, 5, 6, 2), RangeError);
  assert.throws(() => patchify(new Float64Array(5), 1, 2, 2, 2), RangeError);
});

test("self-attention with biases matches MultiHeadAttention(bias=True): outputs 1e-6, weights 1e-7", () => {
  const a = f.attention;
  const W = { q: a.q, k: a.k, v: a.v, o: a.o, bq: a.bq, bk: a.bk, bv: a.bv, bo: a.bo };
  const { out, weights } = biasedSelfAttention(Float64Array.from(a.x), a.n, a.width, a.heads, W);
  assert.ok(maxDifference(out, a.out) < 1e-6, `outputs differ by ${maxDifference(out, a.out)}`);
  for (let h = 0; h < a.heads; h++) assert.ok(maxDifference(weights[h], a.weights[h]) < 1e-7);
  // Only the first query row: the same numbers for that row.
  const first = biasedSelfAttention(Float64Array.from(a.x), a.n, a.width, a.heads, W, 1);
  assert.ok(maxDifference(first.out, a.out.slice(0, a.width)) < 1e-6);
  assert.ok(maxDifference(first.weights[1], a.weights[1].slice(0, a.n)) < 1e-7);
});

test("the [CLS] row alone, without projecting keys and values, is the full pass's row 0 to 1e-12", () => {
  // biasedSelfAttention(..., 1) folds the key and value projections into the
  // query and the weighted average; large biases make a dropped term show.
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const [n, width, heads] = [9, 12, 3];
  const matrix = () => Float64Array.from({ length: width * width }, random);
  const vector = () => Float64Array.from({ length: width }, () => 3 * random());
  const W = { q: matrix(), k: matrix(), v: matrix(), o: matrix(), bq: vector(), bk: vector(), bv: vector(), bo: vector() };
  const x = Float64Array.from({ length: n * width }, random);
  const full = biasedSelfAttention(x, n, width, heads, W);
  const first = biasedSelfAttention(x, n, width, heads, W, 1);
  assert.ok(maxDifference(first.out, full.out.slice(0, width)) < 1e-12, `outputs differ by ${maxDifference(first.out, full.out.slice(0, width))}`);
  for (let h = 0; h < heads; h++) assert.ok(maxDifference(first.weights[h], full.weights[h].slice(0, n)) < 1e-12);
});

test("attention rollout and the [CLS] map match attnbook.explain to 1e-7", () => {
  const r = f.rollout;
  const layers = r.layers.map((heads) => heads.map((w) => Float64Array.from(w)));
  assert.ok(maxDifference(attentionRollout(layers, r.n), r.expected) < 1e-7);
  const last = layers[layers.length - 1];
  assert.ok(maxDifference(clsAttention(last, r.n), r.cls) < 1e-7);
});
