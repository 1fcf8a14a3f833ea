// The shared runtime of the book's live explorers: the few operations their
// models need, in plain JavaScript (no bundler, no dependency, no network),
// and, at the end, the three small helpers their views share.
// Every array is a flat Float64Array in row-major order; a matrix of n rows
// and m columns is (data, n, m). PyTorch's float32 results are matched to
// about 1e-6 (tests/live/*.test.mjs checks the fixtures exported from PyTorch).
// An explorer module imports what it needs with one line,
//   import { ... } from the runtime module (this file);
// which attnbook.widgets.live stitches into a single module for the page.

// PyTorch's default eps of nn.LayerNorm.
export const LAYER_NORM_EPS = 1e-5;

// IEEE half precision (float16) to a JavaScript number.
export function float16ToNumber(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // subnormal (and zero)
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

// Little-endian float16 bytes (a Uint8Array) to a Float64Array.
export function decodeFloat16(bytes, offset = 0, count = (bytes.length - offset) >> 1) {
  if (offset + 2 * count > bytes.length) {
    throw new RangeError(`decodeFloat16: ${count} values from byte ${offset} overrun ${bytes.length} bytes`);
  }
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const at = offset + 2 * i;
    out[i] = float16ToNumber(bytes[at] | (bytes[at + 1] << 8));
  }
  return out;
}

// Anything a widget model may hand over for a Bytes traitlet (a DataView under
// ipywidgets 7 and 8, an ArrayBuffer, a typed array, or base64 text) as a Uint8Array.
export function asBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") {
    const text = atob(value);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  throw new TypeError(`weights must be bytes, got ${Object.prototype.toString.call(value)}`);
}

// The named tensors of packed float16 weights: arch.tensors lists [name, shape]
// in the order of the bytes (attnbook.widgets.live._pack).
export function unpack(bytes, tensors) {
  const out = {};
  let offset = 0;
  for (const [name, shape] of tensors) {
    const size = shape.reduce((a, b) => a * b, 1);
    out[name] = { data: decodeFloat16(bytes, offset, size), shape };
    offset += 2 * size;
  }
  if (offset !== bytes.length) {
    throw new RangeError(`unpack: the tensors take ${offset} bytes, the weights hold ${bytes.length}`);
  }
  return out;
}

// Rows `ids` of a (rows, width) table: (ids.length, width).
export function embedding(table, width, ids) {
  const out = new Float64Array(ids.length * width);
  for (let i = 0; i < ids.length; i++) {
    const row = ids[i] * width;
    if (!(row >= 0 && row + width <= table.length)) throw new RangeError(`embedding: id ${ids[i]} is outside the table`);
    out.set(table.subarray(row, row + width), i * width);
  }
  return out;
}

// x (n, inF) times weight (outF, inF) transposed, plus bias (outF) if given:
// PyTorch's nn.Linear layout. Each sum starts from the bias and adds the
// products in order of k, one sum per output; but two rows and four outputs
// are summed at a time, which keeps eight additions in flight (a single running
// sum waits on the previous addition at every step) and reads each weight once
// for two rows: about twice as fast as one sum at a time, and the same numbers.
export function linear(x, n, inF, weight, outF, bias = null) {
  const out = new Float64Array(n * outF);
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const xa = i * inF;
    const xb = xa + inF;
    let o = 0;
    for (; o + 3 < outF; o += 4) {
      const w0 = o * inF;
      const w1 = w0 + inF;
      const w2 = w1 + inF;
      const w3 = w2 + inF;
      let a0 = bias ? bias[o] : 0;
      let a1 = bias ? bias[o + 1] : 0;
      let a2 = bias ? bias[o + 2] : 0;
      let a3 = bias ? bias[o + 3] : 0;
      let b0 = a0;
      let b1 = a1;
      let b2 = a2;
      let b3 = a3;
      for (let k = 0; k < inF; k++) {
        const xak = x[xa + k];
        const xbk = x[xb + k];
        const v0 = weight[w0 + k];
        const v1 = weight[w1 + k];
        const v2 = weight[w2 + k];
        const v3 = weight[w3 + k];
        a0 += xak * v0;
        a1 += xak * v1;
        a2 += xak * v2;
        a3 += xak * v3;
        b0 += xbk * v0;
        b1 += xbk * v1;
        b2 += xbk * v2;
        b3 += xbk * v3;
      }
      const oa = i * outF + o;
      const ob = oa + outF;
      out[oa] = a0;
      out[oa + 1] = a1;
      out[oa + 2] = a2;
      out[oa + 3] = a3;
      out[ob] = b0;
      out[ob + 1] = b1;
      out[ob + 2] = b2;
      out[ob + 3] = b3;
    }
    for (; o < outF; o++) {
      out[i * outF + o] = dot(x, xa, weight, o * inF, inF, bias ? bias[o] : 0);
      out[(i + 1) * outF + o] = dot(x, xb, weight, o * inF, inF, bias ? bias[o] : 0);
    }
  }
  if (i < n) {
    // the odd last row: four outputs at a time
    const xa = i * inF;
    let o = 0;
    for (; o + 3 < outF; o += 4) {
      const w0 = o * inF;
      const w1 = w0 + inF;
      const w2 = w1 + inF;
      const w3 = w2 + inF;
      let a0 = bias ? bias[o] : 0;
      let a1 = bias ? bias[o + 1] : 0;
      let a2 = bias ? bias[o + 2] : 0;
      let a3 = bias ? bias[o + 3] : 0;
      for (let k = 0; k < inF; k++) {
        const xak = x[xa + k];
        a0 += xak * weight[w0 + k];
        a1 += xak * weight[w1 + k];
        a2 += xak * weight[w2 + k];
        a3 += xak * weight[w3 + k];
      }
      const oa = i * outF + o;
      out[oa] = a0;
      out[oa + 1] = a1;
      out[oa + 2] = a2;
      out[oa + 3] = a3;
    }
    for (; o < outF; o++) out[i * outF + o] = dot(x, xa, weight, o * inF, inF, bias ? bias[o] : 0);
  }
  return out;
}

// start + the dot product of a[from..from+length) and b[at..at+length).
function dot(a, from, b, at, length, start = 0) {
  let sum = start;
  for (let k = 0; k < length; k++) sum += a[from + k] * b[at + k];
  return sum;
}

// a + b, elementwise, into a new array.
export function add(a, b) {
  if (a.length !== b.length) throw new RangeError(`add: lengths ${a.length} and ${b.length} differ`);
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

// Layer normalisation of each row of x (n, width), biased variance as in
// PyTorch, then gamma and beta (either may be null).
export function layerNorm(x, n, width, gamma = null, beta = null, eps = LAYER_NORM_EPS) {
  const out = new Float64Array(n * width);
  for (let i = 0; i < n; i++) {
    const row = i * width;
    let mean = 0;
    for (let k = 0; k < width; k++) mean += x[row + k];
    mean /= width;
    let variance = 0;
    for (let k = 0; k < width; k++) variance += (x[row + k] - mean) ** 2;
    variance /= width;
    const scale = 1 / Math.sqrt(variance + eps);
    for (let k = 0; k < width; k++) {
      let value = (x[row + k] - mean) * scale;
      if (gamma) value *= gamma[k];
      if (beta) value += beta[k];
      out[row + k] = value;
    }
  }
  return out;
}

// Softmax of each row of scores (n, m) over the keys where allowed(i, j) is
// true (all when allowed is null); masked entries get weight 0. A row with no
// allowed key is all 0 (PyTorch would give NaN; no explorer asks for one).
export function maskedSoftmax(scores, n, m, allowed = null) {
  const out = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    const row = i * m;
    let max = -Infinity;
    for (let j = 0; j < m; j++) if ((!allowed || allowed(i, j)) && scores[row + j] > max) max = scores[row + j];
    if (max === -Infinity) continue;
    let sum = 0;
    for (let j = 0; j < m; j++) {
      if (allowed && !allowed(i, j)) continue;
      const e = Math.exp(scores[row + j] - max);
      out[row + j] = e;
      sum += e;
    }
    for (let j = 0; j < m; j++) out[row + j] /= sum;
  }
  return out;
}

// The causal mask: query i sees keys 0..i.
export const causal = (i, j) => j <= i;

// The heads of multi-head attention once queries, keys and values are
// projected (PyTorch's head layout, attnbook.multihead): head h uses features
// h*size .. (h+1)*size-1 of q (queries, width), k and v (n, width); its weights
// are the softmax of q_h k_h^T / sqrt(size) over the keys where allowed(i, j)
// (all when allowed is null), and it mixes v_h with them.
// Returns {mixed: (queries, width), weights: [per head (queries, n)]}.
export function attendHeads(q, k, v, queries, n, width, heads, allowed = null) {
  const size = width / heads;
  const scale = 1 / Math.sqrt(size);
  const mixed = new Float64Array(queries * width);
  const weights = [];
  const scores = new Float64Array(queries * n);
  for (let h = 0; h < heads; h++) {
    const first = h * size;
    for (let i = 0; i < queries; i++) {
      const qi = i * width + first;
      let j = 0;
      // four keys at a time (four sums in flight), each summed in order of d
      for (; j + 3 < n; j += 4) {
        const k0 = j * width + first;
        const k1 = k0 + width;
        const k2 = k1 + width;
        const k3 = k2 + width;
        let s0 = 0;
        let s1 = 0;
        let s2 = 0;
        let s3 = 0;
        for (let d = 0; d < size; d++) {
          const qd = q[qi + d];
          s0 += qd * k[k0 + d];
          s1 += qd * k[k1 + d];
          s2 += qd * k[k2 + d];
          s3 += qd * k[k3 + d];
        }
        scores[i * n + j] = s0 * scale;
        scores[i * n + j + 1] = s1 * scale;
        scores[i * n + j + 2] = s2 * scale;
        scores[i * n + j + 3] = s3 * scale;
      }
      for (; j < n; j++) scores[i * n + j] = dot(q, qi, k, j * width + first, size) * scale;
    }
    const w = maskedSoftmax(scores, queries, n, allowed);
    weights.push(w);
    for (let i = 0; i < queries; i++) {
      const mi = i * width + first;
      for (let j = 0; j < n; j++) {
        const a = w[i * n + j];
        if (a === 0) continue;
        const vj = j * width + first;
        for (let d = 0; d < size; d++) mixed[mi + d] += a * v[vj + d];
      }
    }
  }
  return { mixed, weights };
}

// Multi-head self-attention (attnbook.multihead) on x (n, width): W_q, W_k,
// W_v, W_o (width, width), no bias; keys as allowed(i, j) (all when null).
// Returns {out: (n, width), weights: [per head (n, n)]}.
export function selfAttention(x, n, width, heads, W, allowed = null) {
  const q = linear(x, n, width, W.q, width);
  const k = linear(x, n, width, W.k, width);
  const v = linear(x, n, width, W.v, width);
  const { mixed, weights } = attendHeads(q, k, v, n, n, width, heads, allowed);
  return { out: linear(mixed, n, width, W.o, width), weights };
}

// Softmax of one vector (probabilities of the next token).
export function softmax(values) {
  return maskedSoftmax(values, 1, values.length);
}

// Index of the largest value (the first one on ties, like torch.argmax on CPU).
export function argmax(values, from = 0, to = values.length) {
  let best = from;
  for (let i = from + 1; i < to; i++) if (values[i] > values[best]) best = i;
  return best - from;
}

// ---- for chapter 13's explorer (dates) ----

// The logistic function, 1 / (1 + e^-x).
export function sigmoid(x) {
  return 1 / (1 + Math.exp(-x));
}

// One step of a GRU cell, PyTorch's nn.GRUCell: the weights hold the gates
// in PyTorch's order r, z, n (weightIh (3H, inF), weightHh (3H, H), biases (3H)):
//   r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
//   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
//   h' = (1 - z) * n + z * h
// x (inF), h (H) -> h' (H).
export function gruCell(x, h, inF, hidden, weightIh, weightHh, biasIh, biasHh) {
  const gi = linear(x, 1, inF, weightIh, 3 * hidden, biasIh);
  const gh = linear(h, 1, hidden, weightHh, 3 * hidden, biasHh);
  const out = new Float64Array(hidden);
  for (let k = 0; k < hidden; k++) {
    const r = sigmoid(gi[k] + gh[k]);
    const z = sigmoid(gi[hidden + k] + gh[hidden + k]);
    const n = Math.tanh(gi[2 * hidden + k] + r * gh[2 * hidden + k]);
    out[k] = (1 - z) * n + z * h[k];
  }
  return out;
}

// A one-layer bidirectional GRU from zero states over xs (n, inF), PyTorch's
// nn.GRU(bidirectional=True): W holds {ih, hh, bih, bhh} for the forward
// direction and {ihReverse, hhReverse, bihReverse, bhhReverse} for the backward
// one. Returns {states: (n, 2H), each row [forward; backward], and final: (2H),
// the forward state after the last input beside the backward one after the first}.
export function bidirectionalGru(xs, n, inF, hidden, W) {
  const states = new Float64Array(n * 2 * hidden);
  const final = new Float64Array(2 * hidden);
  const directions = [
    [W.ih, W.hh, W.bih, W.bhh, 0],
    [W.ihReverse, W.hhReverse, W.bihReverse, W.bhhReverse, hidden],
  ];
  for (const [ih, hh, bih, bhh, half] of directions) {
    let h = new Float64Array(hidden);
    for (let step = 0; step < n; step++) {
      const j = half ? n - 1 - step : step;
      h = gruCell(xs.subarray(j * inF, (j + 1) * inF), h, inF, hidden, ih, hh, bih, bhh);
      states.set(h, j * 2 * hidden + half);
    }
    final.set(h, half);
  }
  return { states, final };
}

// The decoder's first state made from the encoder's final state z by the
// bridge layer: s_{-1} = tanh(W_b z + b_b). weight (out, inF), bias (out).
export function bridgeState(z, inF, weight, outF, bias) {
  return linear(z, 1, inF, weight, outF, bias).map(Math.tanh);
}

// Additive (Bahdanau) attention of one query over n states, as
// attnbook.seq2seq.AdditiveCrossAttention: score_j = v . tanh(W_s q + P_j),
// where P = W_h states (n, A) is computed once per source (linear(states, n,
// keySize, W_h, A)); weights = softmax of the scores; context = sum_j weight_j
// states_j. query (querySize), states (n, keySize), Ws (A, querySize), v (A).
// Returns {context: (keySize), weights: (n), scores: (n)}.
export function additiveAttention(query, querySize, projected, states, n, keySize, hiddens, Ws, v) {
  const q = linear(query, 1, querySize, Ws, hiddens);
  const scores = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    let score = 0;
    for (let a = 0; a < hiddens; a++) score += v[a] * Math.tanh(q[a] + projected[j * hiddens + a]);
    scores[j] = score;
  }
  const weights = softmax(scores);
  const context = new Float64Array(keySize);
  for (let j = 0; j < n; j++) {
    for (let d = 0; d < keySize; d++) context[d] += weights[j] * states[j * keySize + d];
  }
  return { context, weights, scores };
}

// Greedy decoding: from `state`, `length` calls of step(previous, state) ->
// {logits, state, weights}, each fed the argmax of the last logits (the start
// symbol `start` first). Returns {tokens, logits: [per step], weights: [per step]}.
export function greedyDecode(step, state, length, start = 0) {
  const tokens = [];
  const logits = [];
  const weights = [];
  let previous = start;
  for (let t = 0; t < length; t++) {
    const out = step(previous, state);
    previous = argmax(out.logits);
    state = out.state;
    tokens.push(previous);
    logits.push(out.logits);
    weights.push(out.weights);
  }
  return { tokens, logits, weights };
}

// ---- for chapter 10's explorer (lm) ----

// The error function to about 1e-13: its Taylor series near 0, the continued
// fraction of erfc in the tails (JavaScript has no Math.erf).
export function erf(x) {
  const z = Math.abs(x);
  if (z < 3) {
    // erf(z) = 2/sqrt(pi) * sum_n (-1)^n z^(2n+1) / (n! (2n+1))
    let term = z;
    let sum = z;
    for (let n = 1; n < 100; n++) {
      term *= (-z * z) / n;
      const next = term / (2 * n + 1);
      sum += next;
      if (Math.abs(next) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(z) = exp(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...)))), evaluated from the tail.
  let fraction = z;
  for (let k = 60; k >= 1; k--) fraction = z + k / 2 / fraction;
  const erfc = Math.exp(-z * z) / Math.sqrt(Math.PI) / fraction;
  return Math.sign(x) * (1 - erfc);
}

// GELU as PyTorch's nn.GELU() computes it by default (approximate="none"):
// x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)), elementwise, into a new array.
export function gelu(x) {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = 0.5 * x[i] * (1 + erf(x[i] / Math.SQRT2));
  return out;
}

// A small seeded generator (mulberry32): numbers in [0, 1), the same stream
// for the same seed on every browser. Not PyTorch's generator.
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- for chapter 15's explorer (digits) ----

// max(0, x), elementwise, into a new array (PyTorch's torch.relu).
export function relu(x) {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i] > 0 ? x[i] : 0;
  return out;
}

// An image (channels, height, width), flat, cut into p x p patches as
// attnbook.patches.patchify cuts it: patches row by row, each patch's
// features in the order (channel, row in the patch, column in the patch).
// Returns (patches, channels * p * p).
export function patchify(pixels, channels, height, width, p) {
  if (height % p || width % p) throw new RangeError(`patchify: ${height}x${width} is not a multiple of ${p}`);
  if (pixels.length !== channels * height * width) {
    throw new RangeError(`patchify: ${pixels.length} pixels for a ${channels}x${height}x${width} image`);
  }
  const rows = height / p;
  const cols = width / p;
  const size = channels * p * p;
  const out = new Float64Array(rows * cols * size);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let at = (r * cols + c) * size;
      for (let ch = 0; ch < channels; ch++) {
        for (let i = 0; i < p; i++) {
          for (let j = 0; j < p; j++) out[at++] = pixels[(ch * height + r * p + i) * width + c * p + j];
        }
      }
    }
  }
  return out;
}

// Multi-head self-attention with biases on the four projections (as
// attnbook.multihead.MultiHeadAttention(bias=True)): W holds q, k, v, o
// (width, width) and bq, bk, bv, bo (width). Only the first `queries` rows of
// x ask (all n by default; 1 for the [CLS] row alone), every row is a key.
// Returns {out: (queries, width), weights: [per head (queries, n)]}.
export function biasedSelfAttention(x, n, width, heads, W, queries = n) {
  const q = linear(x, queries, width, W.q, width, W.bq);
  const { mixed, weights } =
    queries === 1 ? attendOneQuery(q, x, n, width, heads, W) : attendHeads(q, linear(x, n, width, W.k, width, W.bk), linear(x, n, width, W.v, width, W.bv), queries, n, width, heads);
  return { out: linear(mixed, queries, width, W.o, width, W.bo), weights };
}

// attendHeads for a single query q (width) without projecting the n keys and
// values: for head h, q_h . (K_h x_j + bk_h) = (K_h^T q_h) . x_j + q_h . bk_h,
// and the last term, the same for every key, leaves the softmax as it is; the
// values mixed are V_h (sum_j w_j x_j) + bv_h, as the weights sum to 1. About
// 4 width^2 + 4 n width multiply-adds instead of 2 n width^2 (for the [CLS]
// row of chapter 15's last block, 17k instead of 139k). The same numbers up
// to rounding (about 1e-15).
function attendOneQuery(q, x, n, width, heads, W) {
  const size = width / heads;
  const scale = 1 / Math.sqrt(size);
  const mixed = new Float64Array(width);
  const weights = [];
  const u = new Float64Array(width);
  const scores = new Float64Array(n);
  const average = new Float64Array(width);
  for (let h = 0; h < heads; h++) {
    const first = h * size;
    // u = K_h^T q_h (width)
    u.fill(0);
    for (let d = 0; d < size; d++) {
      const qd = q[first + d];
      const row = (first + d) * width;
      for (let c = 0; c < width; c++) u[c] += qd * W.k[row + c];
    }
    for (let j = 0; j < n; j++) scores[j] = dot(u, 0, x, j * width, width) * scale;
    const w = maskedSoftmax(scores, 1, n);
    weights.push(w);
    // average = sum_j w_j x_j (width), then mixed_h = V_h average + bv_h
    average.fill(0);
    for (let j = 0; j < n; j++) {
      const a = w[j];
      for (let c = 0; c < width; c++) average[c] += a * x[j * width + c];
    }
    for (let d = 0; d < size; d++) mixed[first + d] = dot(W.v, (first + d) * width, average, 0, width, W.bv[first + d]);
  }
  return { mixed, weights };
}

// Attention rollout (attnbook.explain.attention_rollout): for each block,
// first block first, the heads' (n, n) weights averaged, plus the identity,
// rows renormalised; the blocks chained, later blocks on the left.
// layers: [block][head] (n, n). Returns R (n, n).
export function attentionRollout(layers, n) {
  let rollout = null;
  for (const heads of layers) {
    const A = new Float64Array(n * n);
    for (const w of heads) for (let i = 0; i < n * n; i++) A[i] += w[i] / heads.length;
    for (let i = 0; i < n; i++) {
      A[i * n + i] += 1;
      let sum = 0;
      for (let j = 0; j < n; j++) sum += A[i * n + j];
      for (let j = 0; j < n; j++) A[i * n + j] /= sum;
    }
    if (rollout === null) rollout = A;
    else {
      const next = new Float64Array(n * n);
      for (let i = 0; i < n; i++) {
        for (let k = 0; k < n; k++) {
          const a = A[i * n + k];
          for (let j = 0; j < n; j++) next[i * n + j] += a * rollout[k * n + j];
        }
      }
      rollout = next;
    }
  }
  return rollout;
}

// How the [CLS] query (row 0) of one block weighs tokens 1..n-1
// (attnbook.explain.cls_attention): row 0 averaged over the heads, [CLS]'s
// weight on itself left out, renormalised to sum to 1. heads: [head] (rows, n).
export function clsAttention(heads, n) {
  const out = new Float64Array(n - 1);
  for (const w of heads) for (let j = 1; j < n; j++) out[j - 1] += w[j] / heads.length;
  let sum = 0;
  for (let j = 0; j < n - 1; j++) sum += out[j];
  for (let j = 0; j < n - 1; j++) out[j] /= sum;
  return out;
}

// ---- for the explorers' views (the page's DOM; the models above never touch it) ----

// A new element: props set as properties where the element has one (className,
// hidden, htmlFor...), as attributes otherwise (aria-*, role...), style as CSS text.
export function element(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "style") el.style.cssText = value;
    else if (key in el && !key.includes("-")) el[key] = value;
    else el.setAttribute(key, value);
  }
  for (const child of children) el.append(child);
  return el;
}

// Blue shades for weights in [0, 1], the colours of the chapters' figures.
export function blue(w) {
  const r = Math.round(247 - 239 * w);
  const g = Math.round(251 - 170 * w);
  const b = Math.round(255 - 100 * w);
  return `rgb(${r},${g},${b})`;
}

// x to `digits` decimals, as a number for the page's sentences (never -0).
export function round(x, digits = 2) {
  const r = Number(x.toFixed(digits));
  return Object.is(r, -0) ? 0 : r;
}
