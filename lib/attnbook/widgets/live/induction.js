// Chapter 11's live explorer, "a sequence of your own": the reader types (or
// draws at random) a sequence of token ids; the page runs the attention-only
// model (attnbook.induction.AttentionOnlyTransformer) on it and shows the
// previous-token head's and the induction head's attention, and the model's
// prediction at each position. An anywidget module: `export default { render }`.
import { add, argmax, asBytes, blue, causal, element, embedding, linear, round, selfAttention, softmax, unpack } from "./runtime.js";

// ---------------------------------------------------------------- the model

// The packed weights (bytes) and arch (attnbook.widgets.live._pack) as a model.
export function loadAttentionOnly(weights, arch) {
  if (!arch || arch.format !== 1 || arch.model !== "attention-only") {
    throw new TypeError("arch must describe an attention-only model in format 1");
  }
  const t = unpack(asBytes(weights), arch.tensors);
  const layers = [];
  for (let i = 0; i < arch.num_layers; i++) {
    layers.push({
      q: t[`layers.${i}.W_q`].data,
      k: t[`layers.${i}.W_k`].data,
      v: t[`layers.${i}.W_v`].data,
      o: t[`layers.${i}.W_o`].data,
    });
  }
  return { arch, embed: t.embed.data, position: t.position.data, layers, unembed: t.unembed.data };
}

// tokens (ids) -> {logits: (n, vocab), attention: [layer][head] (n, n)}, as
// AttentionOnlyTransformer.forward: token plus position embeddings, each
// layer adds its causal attention to the stream, then the unembedding.
export function forward(net, tokens) {
  const { vocab, num_hiddens: width, num_heads: heads, max_len: maxLen } = net.arch;
  const n = tokens.length;
  if (n > maxLen) throw new RangeError(`at most ${maxLen} tokens, got ${n}`);
  for (const id of tokens) {
    if (!Number.isInteger(id) || id < 0 || id >= vocab) throw new RangeError(`token ${id} is outside 0..${vocab - 1}`);
  }
  const positions = Array.from({ length: n }, (_, i) => i);
  let x = add(embedding(net.embed, width, tokens), embedding(net.position, width, positions));
  const attention = [];
  for (const W of net.layers) {
    const { out, weights } = selfAttention(x, n, width, heads, W, causal);
    x = add(x, out);
    attention.push(weights);
  }
  return { logits: linear(x, n, width, net.unembed, vocab), attention };
}

// ---------------------------------------------------------------- the input

// Text -> {tokens, unknown, dropped}: ids separated by spaces or commas; a
// piece that is not an id in 0..vocab-1 is left out and listed in `unknown`;
// past maxLen ids the rest are left out and counted in `dropped`.
export function parseTokens(text, vocab, maxLen) {
  const pieces = String(text).split(/[\s,;]+/).filter((p) => p.length > 0);
  const tokens = [];
  const unknown = [];
  for (const piece of pieces) {
    if (/^\d+$/.test(piece) && Number(piece) < vocab) tokens.push(Number(piece));
    else unknown.push(piece);
  }
  const dropped = Math.max(0, tokens.length - maxLen);
  return { tokens: tokens.slice(0, maxLen), unknown, dropped };
}

// A small seeded generator (mulberry32), so that "random" sequences are
// numbered and can be drawn again.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A sequence like the chapter's: `length` random ids, a segment of distinct
// ids written twice with a random gap between the copies.
export function repeatSequence(seed, length, vocab, segment = 8, maxGap = 6) {
  const rand = generator(seed);
  const pick = (k) => Math.floor(rand() * k);
  const tokens = Array.from({ length }, () => pick(vocab));
  segment = Math.max(2, Math.min(segment, vocab, Math.floor(length / 2)));
  const gap = pick(Math.max(0, Math.min(maxGap, length - 2 * segment)) + 1);
  const first = pick(length - 2 * segment - gap + 1);
  const ids = Array.from({ length: vocab }, (_, i) => i);
  for (let i = vocab - 1; i > 0; i--) {
    const j = pick(i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  for (let j = 0; j < segment; j++) {
    tokens[first + j] = ids[j];
    tokens[first + segment + gap + j] = ids[j];
  }
  return { tokens, first, second: first + segment + gap, segment };
}

// ---------------------------------------------------------------- the view

const CELL = 7; // pixels per attention cell (40 positions: 280 px)
const BLOCK = 20; // positions per block of the table of predictions

let counter = 0;

function heatmap(title) {
  const canvas = element("canvas", { role: "img", "aria-label": title });
  const caption = element("figcaption", { style: "font-size:0.9em" }, title);
  const figure = element("figure", { style: "margin:0;display:flex;flex-direction:column;gap:0.3em" }, caption, canvas);
  return { figure, canvas, caption, title };
}

function drawHeatmap(map, weights, n, query, arrows) {
  const size = Math.max(n, 1) * CELL;
  const ratio = globalThis.devicePixelRatio || 1;
  const { canvas } = map;
  if (canvas.width !== Math.round(size * ratio)) {
    canvas.width = canvas.height = Math.round(size * ratio);
    canvas.style.width = canvas.style.height = `${size}px`;
    map.figure.style.width = `${Math.max(size, 160)}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, size, size);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      ctx.fillStyle = blue(weights[i * n + j]);
      ctx.fillRect(j * CELL, i * CELL, CELL, CELL);
    }
  }
  ctx.strokeStyle = "#e6550d";
  ctx.lineWidth = 1;
  for (const [i, j] of arrows) ctx.strokeRect(j * CELL + 0.5, i * CELL + 0.5, CELL - 1, CELL - 1);
  if (n > 0) {
    ctx.strokeStyle = "#000";
    ctx.strokeRect(0.5, query * CELL + 0.5, size - 1, CELL - 1);
  }
}

// Where the induction mechanism should look from query i: one step past an
// earlier occurrence of the token at i.
function inductionTargets(tokens) {
  const cells = [];
  for (let i = 1; i < tokens.length; i++) {
    for (let j = 0; j < i - 1; j++) if (tokens[j] === tokens[i]) cells.push([i, j + 1]);
  }
  return cells;
}

export function render({ model, el }) {
  const id = `attnbook-live-${++counter}`;
  let net = null;
  let arch = null;
  let result = null;
  let parsed = { tokens: [], unknown: [], dropped: 0 };
  let seed = model.get("seed") || 1;

  const field = element("input", {
    type: "text", id: `${id}-tokens`, spellcheck: false, autocomplete: "off",
    style: "flex:1 1 16em;min-width:0;font-family:monospace;font-size:1em;padding:0.2em",
  });
  const label = element("label", { htmlFor: `${id}-tokens` }, "Token ids (0 to 63, separated by spaces)");
  const randomButton = element("button", { type: "button" }, "Random sequence with a repeat");
  const slider = element("input", { type: "range", id: `${id}-query`, min: 0, max: 0, value: 0, step: 1, style: "flex:1 1 12em;min-width:0" });
  const sliderLabel = element("label", { htmlFor: `${id}-query` }, "Query position");
  const sliderOut = element("output", { htmlFor: `${id}-query` }, "0");
  const note = element("p", { className: "attnbook-live-note", hidden: true, style: "margin:0.3em 0;padding:0.3em 0.5em;border-left:4px solid #e6550d;background:#fff5eb;color:#5a2d0c" });
  const status = element("p", { className: "attnbook-live-status", role: "status", style: "margin:0.4em 0;line-height:1.4" });
  const prevMap = heatmap("previous-token head");
  const indMap = heatmap("induction head");
  const maps = element("div", { style: "display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start" }, prevMap.figure, indMap.figure);
  const table = element("table", { style: "border-collapse:collapse;font-family:monospace;font-size:0.8em;text-align:center" });
  const strip = element("div", {
    className: "attnbook-live-strip", tabindex: 0, role: "group", "aria-label": "tokens and predictions; green: the prediction is the next token, red: it is not",
    style: "overflow-x:auto;max-width:100%",
  }, table);
  const legend = element("p", { style: "margin:0;font-size:0.85em;line-height:1.35" },
    "Each map has one row per query position (top to bottom) and one column per key position; darker blue is more weight, the black box is the query position chosen above. " +
    "In the table, “predicts” is the model's most likely next token, green where it is the actual next token and red where it is not; “prob.” is its probability.");
  const result$ = element("div", { className: "attnbook-live-result", hidden: true });
  const app = element("div", { className: "attnbook-live attnbook-live-induction", style: "display:flex;flex-direction:column;gap:0.5em;font-family:sans-serif;max-width:100%" },
    element("div", { style: "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center" }, label, field, randomButton),
    note,
    element("div", { style: "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center" }, sliderLabel, slider, sliderOut),
    maps, strip, legend, status, result$);
  el.append(app);

  // cells[i]: the four cells (position, token, prediction, probability) of
  // position i; blockRows[b]: the four rows of block b.
  let cells = [];
  let blockRows = [];
  function buildTable(maxLen) {
    table.replaceChildren();
    cells = [];
    blockRows = [];
    const cellStyle = "padding:0.1em 0.2em;border:1px solid #ccc;min-width:1.7em;outline-offset:-2px";
    const names = ["position", "token", "predicts", "prob."];
    for (let from = 0; from < maxLen; from += BLOCK) {
      const rows = [];
      for (let r = 0; r < 4; r++) {
        const rowStyle = `${cellStyle};text-align:left;font-family:sans-serif${r === 0 && from > 0 ? ";border-top:0.6em solid transparent" : ""}`;
        const tr = element("tr", {}, element("th", { scope: "row", style: rowStyle }, names[r]));
        for (let i = from; i < Math.min(maxLen, from + BLOCK); i++) {
          if (r === 0) cells.push([]);
          const td = element("td", { style: cellStyle, hidden: true });
          cells[i].push(td);
          tr.append(td);
        }
        rows.push(tr);
        table.append(tr);
      }
      blockRows.push(rows);
    }
  }

  function loadModel() {
    try {
      arch = model.get("arch");
      net = loadAttentionOnly(model.get("weights"), arch);
      buildTable(arch.max_len);
      label.textContent = `Token ids (0 to ${arch.vocab - 1}, separated by spaces)`;
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

  function heads() {
    const h = model.get("heads") || {};
    return { previous: h.previous || [0, 0], induction: h.induction || [arch.num_layers - 1, 0] };
  }

  function compute() {
    const started = performance.now();
    parsed = parseTokens(field.value, arch.vocab, arch.max_len);
    const notes = [];
    if (parsed.unknown.length) {
      const shown = parsed.unknown.slice(0, 5).map((p) => `“${p}”`).join(", ");
      notes.push(`Left out ${shown}${parsed.unknown.length > 5 ? " and more" : ""}: the model knows only the ids 0 to ${arch.vocab - 1}.`);
    }
    if (parsed.dropped) notes.push(`The model reads at most ${arch.max_len} tokens; the last ${parsed.dropped} are left out.`);
    if (!parsed.tokens.length) notes.push("Type at least one token id to see the model's attention and predictions.");
    showNote(notes.join(" "));
    result = forward(net, parsed.tokens);
    result.ms = performance.now() - started;
  }

  function draw() {
    const started = performance.now();
    const { tokens } = parsed;
    const n = tokens.length;
    const { logits, attention } = result;
    const V = arch.vocab;
    slider.max = String(Math.max(0, n - 1));
    if (Number(slider.value) > n - 1) slider.value = String(Math.max(0, n - 1));
    const query = Number(slider.value);
    sliderOut.textContent = String(query);
    slider.disabled = n === 0;
    const hp = heads();
    const prevW = attention.length ? attention[hp.previous[0]][hp.previous[1]] : new Float64Array(0);
    const indW = attention.length ? attention[hp.induction[0]][hp.induction[1]] : new Float64Array(0);
    prevMap.caption.textContent = `previous-token head (layer ${hp.previous[0]}, head ${hp.previous[1]})`;
    indMap.caption.textContent = `induction head (layer ${hp.induction[0]}, head ${hp.induction[1]}); orange: one step past an earlier copy`;
    drawHeatmap(prevMap, prevW, n, query, []);
    drawHeatmap(indMap, indW, n, query, inductionTargets(tokens));
    // Predictions: the most likely next token and its probability at each position.
    const predictions = [];
    const probabilities = [];
    for (let i = 0; i < n; i++) {
      const p = softmax(logits.subarray(i * V, (i + 1) * V));
      const best = argmax(p);
      predictions.push(best);
      probabilities.push(p[best]);
    }
    // The table, in blocks of BLOCK positions, so that it fits the column. Its
    // cells are made once (buildTable) and only changed cells are written, so
    // a keystroke restyles a few cells, not the whole table.
    for (let i = 0; i < cells.length; i++) {
      const column = cells[i];
      const shown = i < n;
      if (column[0].hidden === shown) for (const td of column) td.hidden = !shown;
      if (!shown) continue;
      const texts = [String(i), String(tokens[i]), String(predictions[i]), probabilities[i].toFixed(2).replace(/^0/, "")];
      const mark = i + 1 < n ? (predictions[i] === tokens[i + 1] ? "right" : "wrong") : "";
      for (let r = 0; r < 4; r++) {
        const td = column[r];
        if (td.textContent !== texts[r]) td.textContent = texts[r];
        const state = `${r === 2 ? mark : ""}${i === query ? " query" : ""}`;
        if (td.dataset.state !== state) {
          td.dataset.state = state;
          td.style.background = r === 2 && mark ? (mark === "right" ? "#c7e9c0" : "#fde0dd") : "";
          td.style.color = r === 2 && mark ? "#000" : "";
          td.style.outline = i === query ? "2px solid currentColor" : "";
        }
      }
    }
    for (let b = 0; b < blockRows.length; b++) {
      const shown = b * BLOCK < n;
      for (const tr of blockRows[b]) if (tr.hidden === shown) tr.hidden = !shown;
    }
    // The announcement: what the query row shows.
    let text;
    if (n === 0) text = "No tokens: nothing to show.";
    else {
      const ind = indW.subarray(query * n, (query + 1) * n);
      const prev = prevW.subarray(query * n, (query + 1) * n);
      const j = argmax(ind);
      const k = argmax(prev);
      const right = predictions.slice(0, n - 1).filter((p, i) => p === tokens[i + 1]).length;
      text = `Position ${query} holds token ${tokens[query]}. The previous-token head puts ${round(prev[k])} of its weight on position ${k}` +
        `${k === query - 1 ? " (the previous one)" : ""}; the induction head puts ${round(ind[j])} on position ${j} (token ${tokens[j]}). ` +
        `The model predicts token ${predictions[query]} next, with probability ${round(probabilities[query])}. ` +
        (n > 1 ? `Its prediction is the actual next token at ${right} of ${n - 1} positions.` : "");
    }
    if (status.textContent !== text) status.textContent = text;
    // The numbers, for tests and the benchmark.
    const ds = result$.dataset;
    ds.tokens = JSON.stringify(tokens);
    ds.logits = JSON.stringify(Array.from(logits));
    ds.previous = JSON.stringify(Array.from(prevW));
    ds.induction = JSON.stringify(Array.from(indW));
    ds.predictions = JSON.stringify(predictions);
    ds.query = String(query);
    ds.computeMs = String(result.ms);
    ds.drawMs = String(performance.now() - started);
    ds.updates = String(Number(ds.updates || 0) + 1);
    if (!ds.firstAt) ds.firstAt = String(performance.now());
  }

  function update() {
    if (!net) return;
    compute();
    draw();
  }

  function onType() {
    update();
    model.set("text", field.value);
    model.save_changes();
  }

  function onRandom() {
    seed = (seed % 1000) + 1;
    const length = Math.min(arch.max_len, 40);
    field.value = repeatSequence(seed, length, arch.vocab).tokens.join(" ");
    onType();
    model.set("seed", seed);
    model.save_changes();
  }

  function onModelText() {
    if (model.get("text") !== field.value) {
      field.value = model.get("text");
      update();
    }
  }

  function onWeights() {
    loadModel();
    update();
  }

  function onHeads() {
    if (result) draw();
  }

  field.value = model.get("text") || "";
  loadModel();
  if (net) {
    // Start on the last position that has an earlier copy to look back to.
    const targets = inductionTargets(parseTokens(field.value, arch.vocab, arch.max_len).tokens);
    if (targets.length) {
      slider.max = String(arch.max_len);
      slider.value = String(targets[targets.length - 1][0]);
    }
  }
  update();
  field.addEventListener("input", onType);
  randomButton.addEventListener("click", onRandom);
  slider.addEventListener("input", () => result && draw());
  model.on("change:text", onModelText);
  model.on("change:weights", onWeights);
  model.on("change:heads", onHeads);
  return () => {
    model.off("change:text", onModelText);
    model.off("change:weights", onWeights);
    model.off("change:heads", onHeads);
    app.remove();
  };
}

export default { render };
