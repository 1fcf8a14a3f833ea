// The runtime's operations for chapter 10's explorer (runtime.js, the block
// "for chapter 10's explorer (lm)") against PyTorch (tools/live_export.py
// lm-fixtures): GELU in PyTorch's default erf form, erf against Python's
// math.erf, layer norm with a bias at PyTorch's eps, and the seeded generator
// against its Python mirror (attnbook.widgets.live.lm.seeded_uniforms).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { erf, gelu, layerNorm, linear, seededRandom } from "../../lib/attnbook/widgets/live/runtime.js";

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/runtime_lm.json", import.meta.url)));

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("erf matches Python's math.erf to 1e-12 on [-12, 12]", () => {
  const { x, expected } = fixtures.erf;
  assert.ok(maxDifference(x.map(erf), expected) < 1e-12);
});

test("gelu matches torch.nn.functional.gelu (approximate='none') to 1e-12", () => {
  const { x, expected } = fixtures.gelu;
  const d = maxDifference(gelu(Float64Array.from(x)), expected);
  assert.ok(d < 1e-12, `gelu differs by ${d}`);
});

test("layer norm with a bias matches torch at PyTorch's eps (1e-5), on rows of small variance", () => {
  const f = fixtures.layer_norm;
  const out = layerNorm(Float64Array.from(f.x), f.n, f.width, f.gamma, f.beta);
  assert.ok(maxDifference(out, f.expected) < 1e-5);
  // the eps matters here: 1e-6 would move the result past the tolerance
  const wrong = layerNorm(Float64Array.from(f.x), f.n, f.width, f.gamma, f.beta, 1e-6);
  assert.ok(maxDifference(wrong, f.expected) > 1e-3);
});

test("linear adds the bias of each output", () => {
  const y = linear(Float64Array.from([1, 2, 3, 4]), 2, 2, Float64Array.from([1, 1]), 1, Float64Array.from([10]));
  assert.deepEqual(Array.from(y), [13, 17]);
});

test("the seeded generator gives the stream Python's mirror gives, for every seed", () => {
  for (const [seed, expected] of Object.entries(fixtures.seeded)) {
    const rand = seededRandom(Number(seed));
    const got = expected.map(() => rand());
    assert.ok(maxDifference(got, expected) < 1e-15, `seed ${seed}`);
    assert.ok(got.every((u) => u >= 0 && u < 1));
  }
});
