// Chapter 10's live explorer, "a prompt of your own": the reader types a
// prompt; the page runs the chapter's character model (attnbook.lm.TinyLM) on
// it and shows the next-character distribution (temperature, top-k and top-p
// as attnbook.sampling applies them), the attention of a chosen block and head
// over the prompt, and a continuation, greedy or sampled from a shown seed.
// An anywidget module: `export default { render }`.
import { argmax, asBytes, blue, element, embedding, gelu, layerNorm, linear, maskedSoftmax, seededRandom, unpack } from "./runtime.js";

// ---------------------------------------------------------------- the model

// The packed weights (bytes) and arch (attnbook.widgets.live._pack_lm) as a model.
export function loadTinyLM(weights, arch) {
  if (!arch || arch.format !== 1 || arch.model !== "tiny-lm") {
    throw new TypeError("arch must describe a tiny-lm model in format 1");
  }
  const t = unpack(asBytes(weights), arch.tensors);
  const get = (name) => {
    if (!t[name]) throw new RangeError(`the weights lack ${name}`);
    return t[name].data;
  };
  const blocks = [];
  for (let i = 0; i < arch.num_layers; i++) {
    const p = `blocks.${i}.`;
    blocks.push({
      norm1: [get(`${p}norm1.weight`), get(`${p}norm1.bias`)],
      q: get(`${p}attention.W_q.weight`),
      k: get(`${p}attention.W_k.weight`),
      v: get(`${p}attention.W_v.weight`),
      o: get(`${p}attention.W_o.weight`),
      norm2: [get(`${p}norm2.weight`), get(`${p}norm2.bias`)],
      up: [get(`${p}ffn.0.weight`), get(`${p}ffn.0.bias`)],
      down: [get(`${p}ffn.2.weight`), get(`${p}ffn.2.bias`)],
    });
  }
  return {
    arch,
    tokens: get("token_embedding.weight"),
    positions: get("position_embedding.weight"),
    blocks,
    norm: [get("norm.weight"), get("norm.bias")],
    output: [get("output.weight"), get("output.bias")],
  };
}

// Room for the keys and values of max_len positions in every block, as
// attnbook.lm.KVCache holds them (here preallocated; `length` is t).
export function newCache(net) {
  const { num_layers: layers, num_hiddens: width, max_len: maxLen } = net.arch;
  const make = () => Array.from({ length: layers }, () => new Float64Array(maxLen * width));
  return { length: 0, keys: make(), values: make() };
}

// TinyLM.forward(ids, cache): the new tokens `ids` after the cache's t tokens
// -> {logits: (new, vocab), attention: [block][head] (new, t + new)}; the
// cache grows by the new tokens' keys and values. Pre-LN blocks: x +
// attention(LN1(x)), then x + FFN(LN2(x)) with FFN = Linear, GELU, Linear;
// a final LayerNorm, then the output projection. With lastOnly, the last
// block works out the last position only (every position's keys and values
// still enter the cache): logits (1, vocab) and that block's attention
// (1, t + new), all the page shows, for 40% less arithmetic.
export function step(net, ids, cache, lastOnly = false) {
  const { vocab_size: vocab, num_hiddens: width, num_heads: heads, max_len: maxLen } = net.arch;
  const start = cache.length;
  const n = ids.length;
  if (n === 0) throw new RangeError("at least one new token is needed");
  if (start + n > maxLen) throw new RangeError(`positions up to ${start + n - 1}, beyond max_len ${maxLen}`);
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 0 || id >= vocab) throw new RangeError(`token ${id} is outside 0..${vocab - 1}`);
  }
  const positions = Array.from({ length: n }, (_, i) => start + i);
  let x = embedding(net.tokens, width, ids);
  const pos = embedding(net.positions, width, positions);
  for (let i = 0; i < x.length; i++) x[i] += pos[i];
  const keys = start + n;
  const size = width / heads;
  const scale = 1 / Math.sqrt(size);
  const attention = [];
  let rows = n; // the rows of x: all new positions, or the last one in the last block
  net.blocks.forEach((b, layer) => {
    const h = layerNorm(x, n, width, b.norm1[0], b.norm1[1]);
    cache.keys[layer].set(linear(h, n, width, b.k, width), start * width);
    cache.values[layer].set(linear(h, n, width, b.v, width), start * width);
    const first = lastOnly && layer === net.blocks.length - 1 ? n - 1 : 0; // first query row
    const m = n - first;
    const q = linear(h.subarray(first * width), m, width, b.q, width);
    const K = cache.keys[layer];
    const V = cache.values[layer];
    const mixed = new Float64Array(m * width);
    const weights = [];
    // the causal mask, offset by the cache: query row i is position start + first + i
    const allowed = (i, j) => j <= start + first + i;
    for (let head = 0; head < heads; head++) {
      const f = head * size;
      const scores = new Float64Array(m * keys);
      for (let i = 0; i < m; i++) {
        const last = start + first + i;
        for (let j = 0; j <= last; j++) {
          let dot = 0;
          for (let d = 0; d < size; d++) dot += q[i * width + f + d] * K[j * width + f + d];
          scores[i * keys + j] = dot * scale;
        }
      }
      const w = maskedSoftmax(scores, m, keys, allowed);
      weights.push(w);
      for (let i = 0; i < m; i++) {
        const last = start + first + i;
        for (let j = 0; j <= last; j++) {
          const a = w[i * keys + j];
          for (let d = 0; d < size; d++) mixed[i * width + f + d] += a * V[j * width + f + d];
        }
      }
    }
    attention.push(weights);
    const attended = linear(mixed, m, width, b.o, width);
    if (first > 0) x = x.slice(first * width);
    rows = m;
    for (let i = 0; i < x.length; i++) x[i] += attended[i];
    const h2 = layerNorm(x, m, width, b.norm2[0], b.norm2[1]);
    const up = gelu(linear(h2, m, width, b.up[0], 4 * width, b.up[1]));
    const down = linear(up, m, 4 * width, b.down[0], width, b.down[1]);
    for (let i = 0; i < x.length; i++) x[i] += down[i];
  });
  cache.length = keys;
  const logits = linear(layerNorm(x, rows, width, net.norm[0], net.norm[1]), rows, width, net.output[0], vocab, net.output[1]);
  return { logits, attention };
}

// The whole sequence at once: {logits: (n, vocab), attention: [block][head] (n, n)}.
export function forward(net, ids) {
  if (!ids.length) return { logits: new Float64Array(0), attention: [] };
  return step(net, ids, newCache(net));
}

// ---------------------------------------------------------------- the prompt

// Text -> {ids, unknown, dropped}: the text in Unicode's composed form (NFC:
// "e" followed by a combining acute accent reads as one "é"), then each
// character's id in `chars`; a character outside them is left out and listed
// once in `unknown`; of a longer prompt only the last maxLen characters are
// kept and `dropped` counts the others.
export function encodePrompt(text, chars, maxLen) {
  const index = new Map(Array.from(chars, (c, i) => [c, i]));
  const ids = [];
  const unknown = [];
  for (const c of String(text).normalize("NFC")) {
    if (index.has(c)) ids.push(index.get(c));
    else if (!unknown.includes(c)) unknown.push(c);
  }
  const dropped = Math.max(0, ids.length - maxLen);
  return { ids: dropped ? ids.slice(dropped) : ids, unknown, dropped };
}

// The top-k box's value -> k, or null for no top-k: an empty box, or k at
// least the vocabulary's size V, keeps every character; otherwise the value
// rounded, at least 1.
export function readTopK(value, V) {
  if (String(value).trim() === "") return null;
  let k = Math.round(Number(value));
  if (Number.isNaN(k)) return null;
  if (k < 1) k = 1;
  return k >= V ? null : k;
}

// ---------------------------------------------------------------- sampling

// attnbook.sampling.next_token_probs for one row of logits: divide by the
// temperature, keep the topK most likely (ties with the k-th kept), then the
// nucleus of mass topP (sorted from the most likely down, equal ones lower
// index first, as attnbook.sampling sorts them; a token is kept if
// those before it add up to less than topP), and renormalise. null skips a filter.
export function nextTokenProbs(logits, temperature = 1, topK = null, topP = null) {
  if (!(temperature > 0 && Number.isFinite(temperature))) throw new RangeError(`temperature must be > 0, got ${temperature}`);
  const V = logits.length;
  let scaled = Float64Array.from(logits, (z) => z / temperature);
  if (topK !== null && topK < V) {
    if (!(Number.isInteger(topK) && topK >= 1)) throw new RangeError(`topK must be an integer >= 1, got ${topK}`);
    const kth = Array.from(scaled).sort((a, b) => b - a)[topK - 1];
    scaled = scaled.map((z) => (z < kth ? -Infinity : z));
  }
  if (topP !== null) {
    if (!(topP > 0 && topP <= 1)) throw new RangeError(`topP must lie in (0, 1], got ${topP}`);
    const probs = maskedSoftmax(scaled, 1, V);
    const order = Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a] || a - b);
    let before = 0;
    const keep = new Uint8Array(V);
    for (const i of order) {
      keep[i] = before < topP ? 1 : 0;
      before += probs[i];
    }
    scaled = scaled.map((z, i) => (keep[i] ? z : -Infinity));
  }
  return maskedSoftmax(scaled, 1, V, (_, j) => scaled[j] !== -Infinity);
}

// attnbook.sampling.draw for one row: the first token whose cumulative
// probability reaches u times the total (u in (0, 1]).
export function drawToken(probs, u) {
  const total = probs.reduce((a, b) => a + b, 0);
  const target = u * total;
  let cdf = 0;
  for (let i = 0; i < probs.length; i++) {
    cdf += probs[i];
    if (cdf >= target) return i;
  }
  return probs.length - 1;
}

// lm.generate, from a cache that already holds the prompt (whose last logits
// are `last`): `steps` more tokens, greedy (temperature 0: the most likely) or
// sampled with nextTokenProbs and drawToken, the uniform numbers from
// seededRandom(seed) (not PyTorch's generator: the same distributions, another
// stream of random numbers). Returns {ids, uniforms}; the cache grows by steps - 1.
export function continueFrom(net, cache, last, steps, { greedy = true, temperature = 1, topK = null, topP = null, seed = 0 } = {}) {
  const rand = seededRandom(seed);
  const ids = [];
  const uniforms = [];
  let logits = last;
  for (let s = 0; s < steps; s++) {
    let token;
    if (greedy) token = argmax(logits);
    else {
      const u = 1 - rand(); // in (0, 1], as sampling._uniforms
      uniforms.push(u);
      token = drawToken(nextTokenProbs(logits, temperature, topK, topP), u);
    }
    ids.push(token);
    if (s + 1 < steps) logits = step(net, [token], cache, true).logits;
  }
  return { ids, uniforms };
}

// ---------------------------------------------------------------- the view

const SHOWN = 10; // rows of the next-character table
const CONTINUE = 40; // characters of continuation

// How a character is written in the page: visible names for blanks.
export function showChar(c) {
  if (c === " ") return "␣";
  if (c === "\n") return "⏎";
  return c;
}

let counter = 0;

// A character in a sentence: a name for blanks, and a non-printing one (a
// tab, a lone combining accent, a zero-width space) by its code point.
export function describeChar(c) {
  if (c === " ") return "a space";
  if (c === "\n") return "a line break";
  if (/^[\p{C}\p{Z}\p{M}]$/u.test(c)) return `the invisible character U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  return `“${c}”`;
}

export function render({ model, el }) {
  const id = `attnbook-live-lm-${++counter}`;
  let net = null;
  let arch = null;
  let cache = null;
  let cachedIds = []; // the ids whose keys and values the cache holds (the prompt)
  let lastState = null; // {logits, attention} of the prompt's last position

  const control = (tag, props, text) => {
    const input = element(tag, { id: `${id}-${props.name}`, ...props });
    const label = element("label", { htmlFor: input.id }, text);
    return { input, label };
  };
  const field = element("textarea", {
    id: `${id}-prompt`, rows: 2, spellcheck: false, autocomplete: "off",
    style: "width:100%;box-sizing:border-box;font-family:monospace;font-size:1em;padding:0.2em",
  });
  const fieldLabel = element("label", { htmlFor: field.id }, "Your prompt");
  const temp = control("input", { name: "temperature", type: "range", min: 0.05, max: 3, step: 0.01, value: 1, style: "width:8em" }, "temperature T");
  const tempOut = element("output", { htmlFor: temp.input.id }, "1.00");
  const topK = control("input", { name: "topk", type: "number", min: 1, max: 1, step: 1, value: 1, style: "width:4em" }, "top-k (empty: off)");
  const topP = control("input", { name: "topp", type: "range", min: 0.01, max: 1, step: 0.01, value: 1, style: "width:8em" }, "top-p");
  const topPOut = element("output", { htmlFor: topP.input.id }, "1.00");
  const block = control("select", { name: "block" }, "block");
  const head = control("select", { name: "head" }, "head");
  const mode = control("select", { name: "mode" }, "continue");
  mode.input.append(element("option", { value: "greedy" }, "greedy (the likeliest)"), element("option", { value: "sample" }, "sampled"));
  const seed = control("input", { name: "seed", type: "number", min: 0, max: 999999, step: 1, value: 0, style: "width:6em" }, "seed");
  const group = (...children) => element("span", { style: "display:inline-flex;gap:0.3em;align-items:center;white-space:nowrap" }, ...children);
  const controls = element("div", { style: "display:flex;flex-wrap:wrap;gap:0.4em 1.2em;align-items:center;font-size:0.9em" },
    group(temp.label, temp.input, tempOut), group(topK.label, topK.input), group(topP.label, topP.input, topPOut),
    group(block.label, block.input, head.label, head.input), group(mode.label, mode.input, seed.label, seed.input));
  const note = element("p", { className: "attnbook-live-note", hidden: true, "aria-live": "polite", style: "margin:0.3em 0;padding:0.3em 0.5em;border-left:4px solid #e6550d;background:#fff5eb;color:#5a2d0c" });

  // The next-character table: the SHOWN likeliest characters after filtering.
  const table = element("table", { className: "attnbook-live-next", style: "border-collapse:collapse;font-size:0.85em" });
  table.append(element("caption", { style: "text-align:left;font-size:1em;padding-bottom:0.2em" }, "The next character"));
  const headRow = element("tr", {});
  for (const text of ["char.", "sampled from (bar)", "prob.", "model, T = 1"]) headRow.append(element("th", { scope: "col", style: "padding:0 0.4em;text-align:left;font-weight:normal" }, text));
  table.append(headRow);
  const rows = [];
  for (let r = 0; r < SHOWN; r++) {
    const bar = element("div", { style: "height:0.8em;background:#3182bd;width:0" });
    const cells = [
      element("td", { style: "font-family:monospace;padding:0 0.4em;text-align:center" }),
      element("td", { style: "width:10em;padding:0 0.4em" }, bar),
      element("td", { style: "padding:0 0.4em;text-align:right;font-variant-numeric:tabular-nums" }),
      element("td", { style: "padding:0 0.4em;text-align:right;font-variant-numeric:tabular-nums" }),
    ];
    const tr = element("tr", {}, ...cells);
    table.append(tr);
    rows.push({ tr, cells, bar });
  }
  const kept = element("p", { style: "margin:0.2em 0;font-size:0.85em" });

  const strip = element("div", {
    className: "attnbook-live-strip", tabindex: 0, role: "group",
    style: "font-family:monospace;font-size:0.95em;line-height:1.6;overflow-wrap:anywhere;max-width:100%",
  });
  const stripCaption = element("p", { style: "margin:0;font-size:0.85em" });
  const continuation = element("p", { className: "attnbook-live-continuation", style: "margin:0.2em 0;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere" });
  const contCaption = element("p", { style: "margin:0;font-size:0.85em" });
  const status = element("p", { className: "attnbook-live-status", role: "status", style: "margin:0.4em 0;line-height:1.4" });
  const result$ = element("div", { className: "attnbook-live-result", hidden: true });
  const panels = element("div", { style: "display:flex;flex-wrap:wrap;gap:1em 1.5em;align-items:flex-start" },
    element("div", { style: "flex:0 1 auto;max-width:100%" }, table, kept),
    element("div", { style: "flex:1 1 16em;min-width:0;display:flex;flex-direction:column;gap:0.3em" }, stripCaption, strip, contCaption, continuation));
  const app = element("div", { className: "attnbook-live attnbook-live-lm", style: "display:flex;flex-direction:column;gap:0.5em;font-family:sans-serif;max-width:100%" },
    fieldLabel, field, controls, note, panels, status, result$);
  el.append(app);

  // The prompt's characters, one span each, made once and restyled.
  let spans = [];

  function loadModel() {
    try {
      arch = model.get("arch");
      net = loadTinyLM(model.get("weights"), arch);
      cache = newCache(net);
      cachedIds = [];
      topK.input.max = String(arch.vocab_size);
      block.input.replaceChildren(...Array.from({ length: arch.num_layers }, (_, i) => element("option", { value: i }, String(i))));
      head.input.replaceChildren(...Array.from({ length: arch.num_heads }, (_, i) => element("option", { value: i }, String(i))));
      spans = Array.from({ length: arch.max_len }, () => element("span", { hidden: true, style: "padding:0 1px" }));
      strip.replaceChildren(...spans);
      fieldLabel.textContent = `Your prompt (the model knows ${arch.vocab_size} characters and reads the last ${arch.max_len})`;
    } catch (error) {
      net = null;
      showNote(`The model could not be loaded: ${error.message}`);
    }
  }

  function showNote(text) {
    note.textContent = text;
    note.hidden = !text;
    result$.dataset.note = text;
  }

  // The controls' values from the model (Python's traitlets, or the page's state).
  function readModel() {
    const t = Number(model.get("temperature") ?? 1);
    temp.input.value = String(t);
    const k = model.get("top_k");
    topK.input.value = String(k === null || k === undefined ? arch.vocab_size : k);
    const p = model.get("top_p");
    topP.input.value = String(p === null || p === undefined ? 1 : p);
    block.input.value = String(model.get("block") ?? 0);
    head.input.value = String(model.get("head") ?? 0);
    mode.input.value = model.get("greedy") === false ? "sample" : "greedy";
    seed.input.value = String(model.get("seed") ?? 0);
  }

  function settings() {
    const V = arch.vocab_size;
    const p = Number(topP.input.value);
    return {
      temperature: Number(temp.input.value),
      topK: readTopK(topK.input.value, V),
      topP: p >= 1 ? null : p,
      greedy: mode.input.value !== "sample",
      seed: Math.max(0, Math.floor(Number(seed.input.value) || 0)),
      block: Number(block.input.value),
      head: Number(head.input.value),
    };
  }

  // Run the model on the prompt, reusing the cache for the part of the prompt
  // that did not change (a keystroke at the end costs one position).
  function computePrompt(ids) {
    let common = 0;
    while (common < ids.length && common < cachedIds.length && ids[common] === cachedIds[common]) common++;
    if (common === ids.length) common = ids.length - 1; // the last position is always run again
    cache.length = common;
    const out = step(net, ids.slice(common), cache, true);
    cachedIds = ids.slice();
    const n = ids.length;
    return {
      logits: out.logits.slice(out.logits.length - arch.vocab_size),
      // the last query's weights over the whole prompt, per block and head
      attention: out.attention.map((layer) => layer.map((w) => w.slice(w.length - n))),
    };
  }

  // A keystroke redraws the next-character view at once (update); the
  // continuation, 40 more forward steps, follows in a task of its own
  // (finish), so that typing never waits for it. A newer keystroke cancels a
  // continuation not yet started.
  let pending = null;

  function update() {
    if (!net) return;
    const started = performance.now();
    const parsed = encodePrompt(field.value, arch.chars, arch.max_len);
    const { ids } = parsed;
    const n = ids.length;
    const s = settings();
    const notes = [];
    if (parsed.unknown.length) {
      const shown = parsed.unknown.slice(0, 6).map(describeChar).join(", ");
      notes.push(`Left out ${shown}${parsed.unknown.length > 6 ? " and more" : ""}: the model has never seen ${parsed.unknown.length > 1 ? "these characters" : "this character"} (it knows only the ${arch.vocab_size} characters of its training text).`);
    }
    if (parsed.dropped) notes.push(`The model reads at most ${arch.max_len} characters: it sees only the last ${arch.max_len} of your prompt; the first ${parsed.dropped} are left out.`);
    if (!n) notes.push("Type at least one character: the model needs something to continue.");
    const ds = result$.dataset;
    tempOut.textContent = s.temperature.toFixed(2);
    topPOut.textContent = s.topP === null ? "1 (off)" : s.topP.toFixed(2);
    let probs = new Float64Array(0);
    let model1 = new Float64Array(0);
    let weights = new Float64Array(0);
    let steps = 0;
    let ms = 0;
    if (n) {
      lastState = computePrompt(ids);
      probs = nextTokenProbs(lastState.logits, s.temperature, s.topK, s.topP);
      model1 = nextTokenProbs(lastState.logits, 1, null, null);
      weights = lastState.attention[s.block][s.head];
      ms = performance.now() - started;
      steps = Math.min(CONTINUE, arch.max_len - n);
      if (steps < CONTINUE) notes.push(`The model has ${arch.max_len} positions: after ${n} characters of prompt it can add ${steps}${steps ? "" : ", so there is no continuation; shorten the prompt"}.`);
    } else {
      lastState = null;
    }
    showNote(notes.join(" "));
    // The table of the likeliest next characters.
    const order = Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a] || model1[b] - model1[a]);
    for (let r = 0; r < SHOWN; r++) {
      const { tr, cells, bar } = rows[r];
      const i = order[r];
      const on = i !== undefined && (probs[i] > 0 || r < 3);
      tr.hidden = !on;
      if (!on) continue;
      cells[0].textContent = showChar(arch.chars[i]);
      bar.style.width = `${(100 * probs[i]).toFixed(1)}%`;
      cells[2].textContent = probs[i].toFixed(2);
      cells[3].textContent = model1[i].toFixed(2);
    }
    table.hidden = !n;
    const keptCount = probs.reduce((a, p) => a + (p > 0 ? 1 : 0), 0);
    kept.textContent = n ? `Sampling keeps ${keptCount} of ${arch.vocab_size} characters.` : "";
    // The attention strip: each character shaded by the weight the last
    // position (the one predicting the next character) puts on it.
    for (let j = 0; j < spans.length; j++) {
      const span = spans[j];
      const on = j < n;
      if (span.hidden === on) span.hidden = !on;
      if (!on) continue;
      const c = showChar(arch.chars[ids[j]]);
      if (span.textContent !== c) span.textContent = c;
      const w = weights[j];
      span.style.background = blue(w);
      span.style.color = w > 0.5 ? "#fff" : "#000";
    }
    stripCaption.textContent = n ? `Block ${s.block}, head ${s.head}: the weight the last position puts on each character of the prompt (darker: more).` : "";
    strip.setAttribute("aria-label", stripCaption.textContent || "attention over the prompt");
    // The sentence about the next character; finish adds the continuation.
    let text = "No prompt: nothing to show.";
    if (n) {
      const best = order[0];
      const j = argmax(weights);
      text = `After ${n} characters the likeliest next character is ${describeChar(arch.chars[best])}, with probability ${probs[best].toFixed(2)} (${model1[best].toFixed(2)} at T = 1); sampling keeps ${keptCount} characters. ` +
        `Block ${s.block}, head ${s.head} puts ${weights[j].toFixed(2)} of its weight on position ${j} (${describeChar(arch.chars[ids[j]])}).`;
    }
    // The numbers, for tests and the benchmark.
    ds.ids = JSON.stringify(ids);
    ds.logits = JSON.stringify(lastState ? Array.from(lastState.logits) : []);
    ds.probs = JSON.stringify(Array.from(probs));
    ds.attention = JSON.stringify(lastState ? lastState.attention.map((l) => l.map((w) => Array.from(w))) : []);
    ds.settings = JSON.stringify(s);
    ds.computeMs = String(ms);
    ds.drawMs = String(performance.now() - started);
    ds.updates = String(Number(ds.updates || 0) + 1);
    if (!ds.firstAt) ds.firstAt = String(performance.now());
    if (pending !== null) clearTimeout(pending);
    pending = setTimeout(() => finish(ids, steps, s, text), 0);
  }

  function finish(ids, steps, s, text) {
    pending = null;
    const started = performance.now();
    const n = ids.length;
    let cont = { ids: [], uniforms: [] };
    if (steps > 0) {
      cont = continueFrom(net, cache, lastState.logits, steps, s);
      cache.length = n; // the prompt's keys and values stay; the continuation's are dropped
    }
    const contText = cont.ids.map((i) => arch.chars[i]).join("");
    continuation.textContent = contText;
    contCaption.textContent = !n || !steps ? "" : s.greedy
      ? `Greedy continuation (${steps} characters): each step takes the likeliest character, as lm.generate does at temperature 0; the filters above do not apply.`
      : `Sampled continuation (${steps} characters), seed ${s.seed}: each character is drawn from the distribution in the table, recomputed after every step. The page draws its random numbers with its own seeded generator, so the text differs from torch's lm.generate(..., seed=${s.seed}); the distributions are the same.`;
    if (steps) text += ` ${s.greedy ? "Greedy" : `Sampled (seed ${s.seed})`} continuation: ${JSON.stringify(contText)}.`;
    if (status.textContent !== text) status.textContent = text;
    const ds = result$.dataset;
    ds.continuation = JSON.stringify(cont.ids);
    ds.uniforms = JSON.stringify(cont.uniforms);
    ds.continueMs = String(performance.now() - started);
    ds.continued = ds.updates;
  }

  const sync = {
    temperature: () => Number(temp.input.value),
    top_k: () => settings().topK,
    top_p: () => settings().topP,
    block: () => Number(block.input.value),
    head: () => Number(head.input.value),
    greedy: () => mode.input.value !== "sample",
    seed: () => settings().seed,
  };

  function onControl(name) {
    return () => {
      update();
      model.set(name, sync[name]());
      model.save_changes();
    };
  }

  function onType() {
    update();
    model.set("text", field.value);
    model.save_changes();
  }

  function onModelChange() {
    // Only what differs from the page (a set() of the page's own value is an echo).
    const differs = (name) => (model.get(name) ?? null) !== sync[name]();
    if (model.get("text") === field.value && !Object.keys(sync).some(differs)) return;
    if (model.get("text") !== field.value) field.value = model.get("text");
    readModel();
    update();
  }

  function onWeights() {
    loadModel();
    if (net) readModel();
    update();
  }

  field.value = model.get("text") || "";
  loadModel();
  if (net) readModel();
  update();
  field.addEventListener("input", onType);
  temp.input.addEventListener("input", onControl("temperature"));
  topK.input.addEventListener("input", onControl("top_k"));
  topP.input.addEventListener("input", onControl("top_p"));
  block.input.addEventListener("change", onControl("block"));
  head.input.addEventListener("change", onControl("head"));
  mode.input.addEventListener("change", onControl("greedy"));
  seed.input.addEventListener("input", onControl("seed"));
  const watched = ["text", "temperature", "top_k", "top_p", "block", "head", "greedy", "seed"];
  for (const name of watched) model.on(`change:${name}`, onModelChange);
  model.on("change:weights", onWeights);
  return () => {
    for (const name of watched) model.off(`change:${name}`, onModelChange);
    model.off("change:weights", onWeights);
    app.remove();
  };
}

export default { render };
