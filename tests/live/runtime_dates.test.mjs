// The runtime's operations for chapter 13's explorer (the end of
// lib/attnbook/widgets/live/runtime.js): a GRU cell in PyTorch's gate order
// r, z, n, a bidirectional GRU, additive (Bahdanau) attention, the bridge and
// greedy decoding, against PyTorch (tests/live/fixtures/runtime_dates.json,
// tools/live_export.py dates-fixtures).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  additiveAttention, bidirectionalGru, bridgeState, greedyDecode, gruCell, linear, sigmoid,
} from "../../lib/attnbook/widgets/live/runtime.js";

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/runtime_dates.json", import.meta.url)));
const f64 = (values) => Float64Array.from(values);

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("a GRU cell matches torch.nn.GRUCell (gates r, z, n) to 1e-6", () => {
  const f = fixtures.gru_cell;
  const out = gruCell(f64(f.x), f64(f.h), f.in, f.hidden, f64(f.weight_ih), f64(f.weight_hh), f64(f.bias_ih), f64(f.bias_hh));
  assert.ok(maxDifference(out, f.expected) < 1e-6, `differs by ${maxDifference(out, f.expected)}`);
});

test("a bidirectional GRU matches torch.nn.GRU(bidirectional=True): states and final state", () => {
  const f = fixtures.bidirectional_gru;
  const W = {
    ih: f64(f.weight_ih_l0), hh: f64(f.weight_hh_l0), bih: f64(f.bias_ih_l0), bhh: f64(f.bias_hh_l0),
    ihReverse: f64(f.weight_ih_l0_reverse), hhReverse: f64(f.weight_hh_l0_reverse),
    bihReverse: f64(f.bias_ih_l0_reverse), bhhReverse: f64(f.bias_hh_l0_reverse),
  };
  const { states, final } = bidirectionalGru(f64(f.x), f.n, f.in, f.hidden, W);
  assert.ok(maxDifference(states, f.states) < 1e-6, `states differ by ${maxDifference(states, f.states)}`);
  assert.ok(maxDifference(final, f.final) < 1e-6, `final state differs by ${maxDifference(final, f.final)}`);
});

test("additive attention matches attnbook.seq2seq.AdditiveCrossAttention: weights and context", () => {
  const f = fixtures.additive_attention;
  const projected = linear(f64(f.states), f.n, f.key_size, f64(f.W_h), f.hiddens);
  const out = additiveAttention(f64(f.query), f.query_size, projected, f64(f.states), f.n, f.key_size, f.hiddens, f64(f.W_s), f64(f.v));
  assert.ok(maxDifference(out.weights, f.weights) < 1e-6, `weights differ by ${maxDifference(out.weights, f.weights)}`);
  assert.ok(maxDifference(out.context, f.context) < 1e-6, `context differs by ${maxDifference(out.context, f.context)}`);
  assert.ok(Math.abs(out.weights.reduce((a, b) => a + b, 0) - 1) < 1e-12);
});

test("the bridge is tanh of a linear layer; sigmoid is the logistic function", () => {
  const s = bridgeState(f64([1, -2]), 2, f64([1, 0, 0, 1, 1, 1]), 3, f64([0, 0, 0.5]));
  assert.ok(maxDifference(s, [Math.tanh(1), Math.tanh(-2), Math.tanh(-0.5)]) < 1e-15);
  assert.equal(sigmoid(0), 0.5);
  assert.ok(Math.abs(sigmoid(2) - 1 / (1 + Math.exp(-2))) < 1e-15);
});

test("greedy decoding feeds each step the argmax of the last logits, the start symbol first", () => {
  const seen = [];
  // A step that writes (previous + 1) mod 4 and counts its calls in the state.
  const step = (previous, state) => {
    seen.push(previous);
    const logits = f64([0, 0, 0, 0]);
    logits[(previous + 1) % 4] = 1;
    return { logits, state: state + 1, weights: null };
  };
  const out = greedyDecode(step, 0, 6, 0);
  assert.deepEqual(out.tokens, [1, 2, 3, 0, 1, 2]);
  assert.deepEqual(seen, [0, 1, 2, 3, 0, 1]);
  assert.equal(out.logits.length, 6);
});
