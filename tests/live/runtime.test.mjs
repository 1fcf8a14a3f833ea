// The live explorers' runtime (lib/attnbook/widgets/live/runtime.js) against
// fixtures exported from PyTorch and numpy (tools/live_export.py fixtures).
// Run: node --test tests/live/   (make test-live-js)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  LAYER_NORM_EPS, asBytes, causal, decodeFloat16, embedding, layerNorm, linear, maskedSoftmax, unpack,
} from "../../lib/attnbook/widgets/live/runtime.js";

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/runtime.json", import.meta.url)));

export function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("float16 decoding gives numpy's values, subnormals and infinities included", () => {
  const { bytes, values } = fixtures.float16;
  const decoded = decodeFloat16(Uint8Array.from(bytes));
  const expected = values.map((v) => (v === "inf" ? Infinity : v === "-inf" ? -Infinity : v));
  assert.deepEqual(Array.from(decoded), expected);
  assert.ok(Object.is(decoded[1], -0), "negative zero keeps its sign");
});

test("layer norm matches torch.nn.functional.layer_norm (PyTorch's eps) to 1e-5", () => {
  const f = fixtures.layer_norm;
  assert.equal(LAYER_NORM_EPS, 1e-5);
  
  const out = layerNorm(Float64Array.from(f.x), f.n, f.width, f.gamma, f.beta);
  assert.ok(maxDifference(out, f.expected) < 1e-5);
});

test("causal softmax matches PyTorch's masked_fill(-inf) then softmax", () => {
  const f = fixtures.causal_softmax;
  const out = maskedSoftmax(Float64Array.from(f.scores), f.n, f.n, causal);
  assert.ok(maxDifference(out, f.expected) < 1e-6);
  for (let i = 0; i < f.n; i++) for (let j = i + 1; j < f.n; j++) assert.equal(out[i * f.n + j], 0);
});

test("linear uses PyTorch's (out, in) layout, with a bias", () => {
  // x (1, 2) = [1, 2]; W (3, 2); b (3)
  const y = linear(Float64Array.from([1, 2]), 1, 2, Float64Array.from([1, 0, 0, 1, 1, 1]), 3, [0.5, 0, -1]);
  assert.deepEqual(Array.from(y), [1.5, 2, 2]);
});

test("linear gives the plain sums bit for bit, for every count of rows and outputs", () => {
  // linear sums two rows and four outputs at a time; the odd last row and the
  // last outputs past a multiple of four take other loops. Each sum is the
  // bias, then the products in order of k, as this reference adds them.
  let seed = 1;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  for (const n of [1, 2, 3, 5]) {
    for (const outF of [1, 3, 4, 6, 9]) {
      for (const inF of [1, 7]) {
        const x = Float64Array.from({ length: n * inF }, random);
        const w = Float64Array.from({ length: outF * inF }, random);
        const b = Float64Array.from({ length: outF }, random);
        for (const bias of [null, b]) {
          const expected = new Float64Array(n * outF);
          for (let i = 0; i < n; i++) {
            for (let o = 0; o < outF; o++) {
              let sum = bias ? bias[o] : 0;
              for (let k = 0; k < inF; k++) sum += x[i * inF + k] * w[o * inF + k];
              expected[i * outF + o] = sum;
            }
          }
          assert.deepEqual(linear(x, n, inF, w, outF, bias), expected, `n=${n} in=${inF} out=${outF} bias=${!!bias}`);
        }
      }
    }
  }
});

test("embedding picks rows and refuses an id outside the table", () => {
  const table = Float64Array.from([0, 1, 10, 11, 20, 21]);
  assert.deepEqual(Array.from(embedding(table, 2, [2, 0])), [20, 21, 0, 1]);
  assert.throws(() => embedding(table, 2, [3]), RangeError);
});

test("unpack refuses weights of the wrong size; asBytes reads every form of bytes", () => {
  const bytes = new Uint8Array(8);
  assert.throws(() => unpack(bytes, [["a", [3]]]), RangeError);
  assert.equal(unpack(bytes, [["a", [2, 2]]]).a.data.length, 4);
  assert.deepEqual(Array.from(asBytes("AAE=")), [0, 1]);
  assert.deepEqual(Array.from(asBytes(new DataView(Uint8Array.from([1, 2, 3]).buffer, 1))), [2, 3]);
  assert.throws(() => asBytes(42), TypeError);
});
