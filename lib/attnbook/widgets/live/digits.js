// Chapter 15's live explorer, "a digit of your own": the reader draws an 8x8
// digit (mouse, finger or keyboard) or starts from a test image; the page runs
// the chapter's tiny ViT (attnbook.vit.TinyViT) on it and shows the class
// probabilities, the [CLS] query's raw attention in the last block, attention
// rollout, and occlusion (16 more forward passes, one per hidden patch) with
// the fill the reader picks: zero (blank paper, the chapter's explorer) or the
// mean training image. An anywidget module: `export default { render }`.
import { add, argmax, asBytes, attendHeads, attentionRollout, biasedSelfAttention, clsAttention, element, layerNorm, linear, patchify, relu, round, softmax, unpack } from "./runtime.js";

// ---------------------------------------------------------------- the model

// The packed weights (bytes) and arch (attnbook.widgets.live._pack_digits) as a model.
export function loadViT(weights, arch) {
  if (!arch || arch.format !== 1 || arch.model !== "tiny-vit") {
    throw new TypeError("arch must describe a tiny-vit model in format 1");
  }
  const t = unpack(asBytes(weights), arch.tensors);
  const get = (name) => t[name].data;
  const blocks = [];
  for (let i = 0; i < arch.num_layers; i++) {
    const b = (part) => get(`blocks.${i}.${part}`);
    blocks.push({
      norm1: [b("norm1.weight"), b("norm1.bias")],
      attention: {
        q: b("W_q.weight"), bq: b("W_q.bias"), k: b("W_k.weight"), bk: b("W_k.bias"),
        v: b("W_v.weight"), bv: b("W_v.bias"), o: b("W_o.weight"), bo: b("W_o.bias"),
      },
      norm2: [b("norm2.weight"), b("norm2.bias")],
      linear1: [b("linear1.weight"), b("linear1.bias")],
      linear2: [b("linear2.weight"), b("linear2.bias")],
    });
  }
  return {
    arch, blocks,
    embed: [get("embed.weight"), get("embed.bias")],
    cls: get("cls"), positions: get("positions"),
    norm: [get("norm.weight"), get("norm.bias")],
    head: [get("head.weight"), get("head.bias")],
  };
}

// The number of pixels an image of this arch holds (channels * side * side).
export function imageLength(arch) {
  return arch.channels * arch.image_size * arch.image_size;
}

// pixels (channels * side * side, row by row) -> the (n, D) input of block 0:
// the patches embedded, [CLS] in front, the positions added.
function embedImage(net, pixels) {
  const a = net.arch;
  const D = a.num_hiddens;
  if (pixels.length !== imageLength(a)) throw new RangeError(`an image has ${imageLength(a)} pixels, got ${pixels.length}`);
  for (const value of pixels) if (!Number.isFinite(value)) throw new RangeError(`pixel ${value} is not a finite number`);
  const P = (a.image_size / a.patch_size) ** 2;
  const tokens = linear(patchify(pixels, a.channels, a.image_size, a.image_size, a.patch_size), P, a.channels * a.patch_size ** 2, net.embed[0], D, net.embed[1]);
  const x = new Float64Array((P + 1) * D);
  x.set(net.cls, 0);
  x.set(tokens, D);
  return add(x, net.positions);
}

// The rest of pre-LN block B once its attention output is known: the
// residual sum, then x + FFN(LayerNorm(x)) on each of the `rows` rows.
function finishBlock(net, B, x, out, rows) {
  const a = net.arch;
  const D = a.num_hiddens;
  const y = add(x.subarray(0, rows * D), out);
  const hidden = relu(linear(layerNorm(y, rows, D, B.norm2[0], B.norm2[1]), rows, D, B.linear1[0], a.ffn_hiddens, B.linear1[1]));
  return add(y, linear(hidden, rows, a.ffn_hiddens, B.linear2[0], D, B.linear2[1]));
}

// Blocks `from`.. of the model on x (rows, D); the last one for [CLS] alone
// when clsOnly. Returns {x, attention: [block][head]}.
function runBlocks(net, x, rows, from, clsOnly) {
  const a = net.arch;
  const D = a.num_hiddens;
  const attention = [];
  for (let l = from; l < net.blocks.length; l++) {
    const B = net.blocks[l];
    const queries = clsOnly && l === net.blocks.length - 1 ? 1 : rows;
    const h = layerNorm(x, rows, D, B.norm1[0], B.norm1[1]);
    const { out, weights } = biasedSelfAttention(h, rows, D, a.num_heads, B.attention, queries);
    attention.push(weights);
    x = finishBlock(net, B, x, out, queries);
    rows = queries;
  }
  return { x, attention };
}

// The final LayerNorm and the head on [CLS] (row 0 of x).
function classify(net, x) {
  const a = net.arch;
  const D = a.num_hiddens;
  return linear(layerNorm(x.subarray(0, D), 1, D, net.norm[0], net.norm[1]), 1, D, net.head[0], a.num_classes, net.head[1]);
}

// pixels (channels * side * side, row by row) -> {logits (classes), attention:
// [block][head] (n, n)}, as TinyViT.forward: patches embedded, [CLS] in front,
// positions added, pre-LN blocks, the final LayerNorm and the head on [CLS].
// With clsOnly, the last block computes [CLS]'s row only (the logits are the
// same; its attention is then [head] (1, n)).
export function forward(net, pixels, clsOnly = false) {
  const x = embedImage(net, pixels);
  const n = x.length / net.arch.num_hiddens;
  const { x: last, attention } = runBlocks(net, x, n, 0, clsOnly);
  return { logits: classify(net, last), attention };
}

// The pixel indices of each patch, patches row by row (as patchify numbers them).
function patchPixels(arch) {
  const { image_size: S, patch_size: p, channels: C } = arch;
  const cols = S / p;
  const out = [];
  for (let patch = 0; patch < cols * cols; patch++) {
    const r = Math.floor(patch / cols);
    const c = patch % cols;
    const idx = [];
    for (let ch = 0; ch < C; ch++) for (let i = 0; i < p; i++) for (let j = 0; j < p; j++) idx.push((ch * S + r * p + i) * S + c * p + j);
    out.push(idx);
  }
  return out;
}

// Occlusion by the plain route: one forward pass per copy of the image with
// patch j replaced by the same patch of `fill` (the reference for occlusion()).
export function occlusionSlow(net, pixels, fill, target) {
  const p0 = softmax(forward(net, pixels, true).logits)[target];
  const groups = patchPixels(net.arch);
  const out = new Float64Array(groups.length);
  const copy = Float64Array.from(pixels);
  for (let j = 0; j < groups.length; j++) {
    for (const i of groups[j]) copy[i] = fill[i];
    out[j] = p0 - softmax(forward(net, copy, true).logits)[target];
    for (const i of groups[j]) copy[i] = pixels[i];
  }
  return out;
}

// Occlusion (attnbook.explain.occlusion_scores) for class `target`: for each
// patch j, p(target | image) minus p(target | image with patch j replaced by
// the same patch of `fill`, an image of the same size). One forward pass per
// patch, shortened where nothing changes: a copy differs from the image in one
// token only, so block 0's LayerNorm and projections of the other tokens are
// the image's own, and the last block computes [CLS]'s row alone; a patch
// that equals its fill needs no pass at all.
export function occlusion(net, pixels, fill, target, base = null) {
  if (fill.length !== pixels.length) throw new RangeError(`the fill has ${fill.length} pixels, the image ${pixels.length}`);
  const a = net.arch;
  const D = a.num_hiddens;
  const x0 = embedImage(net, pixels);
  const n = x0.length / D;
  const P = n - 1;
  const p0 = base === null ? softmax(classify(net, runBlocks(net, x0, n, 0, true).x))[target] : base;
  const filled = embedImage(net, fill);
  const B = net.blocks[0];
  const W = B.attention;
  const project = (h, rows) => [linear(h, rows, D, W.q, D, W.bq), linear(h, rows, D, W.k, D, W.bk), linear(h, rows, D, W.v, D, W.bv)];
  const [q0, k0, v0] = project(layerNorm(x0, n, D, B.norm1[0], B.norm1[1]), n);
  const [qf, kf, vf] = project(layerNorm(filled, n, D, B.norm1[0], B.norm1[1]), n);
  const out = new Float64Array(P);
  const x = Float64Array.from(x0);
  const q = Float64Array.from(q0);
  const k = Float64Array.from(k0);
  const v = Float64Array.from(v0);
  const groups = patchPixels(a);
  for (let j = 0; j < P; j++) {
    // A patch that already equals its fill (blank paper under zero fill)
    // leaves the image as it is: its score is 0 without a pass.
    if (groups[j].every((i) => pixels[i] === fill[i])) continue;
    const row = (j + 1) * D;
    const swap = (into, from) => into.set(from.subarray(row, row + D), row);
    swap(x, filled); swap(q, qf); swap(k, kf); swap(v, vf);
    const { mixed } = attendHeads(q, k, v, n, n, D, a.num_heads);
    const after = finishBlock(net, B, x, linear(mixed, n, D, W.o, D, W.bo), n);
    const { x: last } = runBlocks(net, after, n, 1, true);
    out[j] = p0 - softmax(classify(net, last))[target];
    swap(x, x0); swap(q, q0); swap(k, k0); swap(v, v0);
  }
  return out;
}

// What the page draws first for one image: the logits and probabilities, the
// predicted class, raw attention ([CLS] row of the last block, heads averaged,
// renormalised over the patches) and rollout (row 0 over the patches).
export function explainView(net, pixels) {
  const { logits, attention } = forward(net, pixels);
  const probs = softmax(logits);
  const predicted = argmax(probs);
  const n = attention[0][0].length ** 0.5;
  const last = attention[attention.length - 1];
  const raw = clsAttention(last.map((w) => w.subarray(0, n)), n);
  const rollout = attentionRollout(attention, n).slice(1, n);
  return { logits, probs, predicted, attention, raw, rollout };
}

// Everything the page shows for one image: explainView, and occlusion of the
// predicted class with `fill` (the page computes it just after the rest is drawn).
export function explain(net, pixels, fill) {
  const view = explainView(net, pixels);
  return { ...view, occlusion: occlusion(net, pixels, fill, view.predicted, view.probs[view.predicted]) };
}

// ---------------------------------------------------------------- the view

const SIDE = 8; // pixels per side
const CELL = 30; // screen pixels per drawing cell (240 px)
const MAP_CELL = 15; // screen pixels per pixel in the small maps (120 px)
const PENS = [["1", "ink"], ["0.5", "half ink"], ["0", "eraser"]];
const FILLS = [["zero", "zero (blank paper)"], ["mean image", "the mean training image"]];

let counter = 0;

// Colours: grey ink; blue for a weight in [0, 1]; red (a drop) and blue (a rise) for occlusion.
const ink = (v) => `rgb(${Math.round(255 - 230 * v)},${Math.round(255 - 230 * v)},${Math.round(255 - 230 * v)})`;

function setupCanvas(canvas, size) {
  const ratio = globalThis.devicePixelRatio || 1;
  if (canvas.width !== Math.round(size * ratio)) {
    canvas.width = canvas.height = Math.round(size * ratio);
    canvas.style.width = canvas.style.height = `${size}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return ctx;
}

// A map over the patches laid on the digit: the digit in grey, each patch
// tinted by its score (scaled by `top`), the patch grid and numbers.
function drawMap(canvas, pixels, scores, top, signed) {
  const size = SIDE * MAP_CELL;
  const ctx = setupCanvas(canvas, size);
  for (let i = 0; i < SIDE; i++) {
    for (let j = 0; j < SIDE; j++) {
      ctx.fillStyle = ink(pixels[i * SIDE + j]);
      ctx.fillRect(j * MAP_CELL, i * MAP_CELL, MAP_CELL, MAP_CELL);
    }
  }
  const cols = Math.round(Math.sqrt(scores.length));
  const p = SIDE / cols;
  for (let k = 0; k < scores.length; k++) {
    const v = top > 0 ? Math.max(-1, Math.min(1, scores[k] / top)) : 0;
    const x = (k % cols) * p * MAP_CELL;
    const y = Math.floor(k / cols) * p * MAP_CELL;
    ctx.fillStyle = v >= 0 ? (signed ? `rgba(203,24,29,${0.75 * v})` : `rgba(33,113,181,${0.75 * v})`) : `rgba(33,113,181,${-0.75 * v})`;
    ctx.fillRect(x, y, p * MAP_CELL, p * MAP_CELL);
  }
  ctx.strokeStyle = "#e6550d";
  ctx.lineWidth = 1;
  for (let k = 1; k < cols; k++) {
    ctx.beginPath();
    ctx.moveTo(k * p * MAP_CELL + 0.5, 0);
    ctx.lineTo(k * p * MAP_CELL + 0.5, size);
    ctx.moveTo(0, k * p * MAP_CELL + 0.5);
    ctx.lineTo(size, k * p * MAP_CELL + 0.5);
    ctx.stroke();
  }
  // patch numbers, black on a white halo
  Object.assign(ctx, { font: "9px sans-serif", textBaseline: "top", lineWidth: 2.5, strokeStyle: "#fff", fillStyle: "#000" });
  for (let k = 0; k < scores.length; k++) {
    for (const f of ["strokeText", "fillText"]) ctx[f](k, (k % cols) * p * MAP_CELL + 2, Math.floor(k / cols) * p * MAP_CELL + 2);
  }
}

function drawGrid(canvas, pixels, focus, showFocus, p) {
  const size = SIDE * CELL;
  const ctx = setupCanvas(canvas, size);
  for (let i = 0; i < SIDE; i++) {
    for (let j = 0; j < SIDE; j++) {
      ctx.fillStyle = ink(pixels[i * SIDE + j]);
      ctx.fillRect(j * CELL, i * CELL, CELL, CELL);
    }
  }
  ctx.strokeStyle = "#bbb";
  ctx.lineWidth = 1;
  for (let k = 1; k < SIDE; k++) {
    ctx.beginPath();
    ctx.moveTo(k * CELL + 0.5, 0);
    ctx.lineTo(k * CELL + 0.5, size);
    ctx.moveTo(0, k * CELL + 0.5);
    ctx.lineTo(size, k * CELL + 0.5);
    ctx.stroke();
  }
  ctx.strokeStyle = "#e6550d";
  ctx.lineWidth = 2;
  for (let k = 0; k <= SIDE; k += p) {
    ctx.beginPath();
    ctx.moveTo(k * CELL, 0);
    ctx.lineTo(k * CELL, size);
    ctx.moveTo(0, k * CELL);
    ctx.lineTo(size, k * CELL);
    ctx.stroke();
  }
  if (showFocus) {
    ctx.strokeStyle = "#08519c";
    ctx.lineWidth = 3;
    ctx.strokeRect(focus[1] * CELL + 2, focus[0] * CELL + 2, CELL - 4, CELL - 4);
  }
}

function figure(title, canvas) {
  const caption = element("figcaption", { style: "font-size:0.85em;max-width:150px" }, title);
  return { figure: element("figure", { style: "margin:0;display:flex;flex-direction:column;gap:0.3em" }, caption, canvas), caption };
}

export async function render({ model, el }) {
  const id = `attnbook-live-${++counter}`;
  const weights = model.get("weights");
  let net = null;
  let arch = null;
  let pixels = new Float64Array(SIDE * SIDE);
  let result = null;
  let focus = [3, 3];
  let focused = false;
  let drawing = false;

  // -- controls
  const start = element("select", { id: `${id}-start` });
  const startLabel = element("label", { htmlFor: `${id}-start` }, "Start from");
  const clear = element("button", { type: "button" }, "Clear the grid");
  const pen = element("select", { id: `${id}-pen` }, ...PENS.map(([v, t]) => element("option", { value: v }, t)));
  const penLabel = element("label", { htmlFor: `${id}-pen` }, "Pen");
  const fillSelect = element("select", { id: `${id}-fill` }, ...FILLS.map(([v, t]) => element("option", { value: v }, t)));
  const fillLabel = element("label", { htmlFor: `${id}-fill` }, "Occlusion fill");
  const help = element("p", { id: `${id}-help`, style: "margin:0;font-size:0.85em;line-height:1.35;max-width:250px" },
    "Draw with the mouse or a finger. With the keyboard: focus the grid, move the blue square with the arrow keys, " +
    "and press Space or Enter to ink that pixel with the pen (full ink if the pen is the eraser), or to clear it if it is inked.");
  const canvas = element("canvas", {
    tabindex: 0, role: "application", "aria-roledescription": "drawing grid", "aria-label": "8 by 8 drawing grid", "aria-describedby": `${id}-help`,
    style: "touch-action:none;cursor:crosshair;border:1px solid #888;display:block",
  });
  const gridCaption = element("figcaption", { style: "font-size:0.85em" });
  const gridFigure = element("figure", { style: "margin:0;display:flex;flex-direction:column;gap:0.3em" }, gridCaption, canvas, help);
  // -- results
  const rawCanvas = element("canvas", { role: "img", "aria-label": "raw attention map" });
  const rollCanvas = element("canvas", { role: "img", "aria-label": "rollout map" });
  const occCanvas = element("canvas", { role: "img", "aria-label": "occlusion map" });
  const raw = figure("", rawCanvas);
  const roll = figure("attention rollout, [CLS] row", rollCanvas);
  const occ = figure("occlusion", occCanvas);
  const bars = element("div", { style: "display:grid;grid-template-columns:auto 100px auto;gap:1px 0.4em;align-items:center;font-size:0.85em;font-family:monospace" });
  const barCells = [];
  for (let d = 0; d < 10; d++) {
    const bar = element("div", { style: "height:0.8em;background:#2171b5;width:0" });
    const value = element("span", {}, "");
    bars.append(element("span", {}, String(d)), element("div", { style: "background:#eee;height:0.8em;width:100px" }, bar), value);
    barCells.push([bar, value]);
  }
  const probFigure = element("figure", { style: "margin:0;display:flex;flex-direction:column;gap:0.3em" },
    element("figcaption", { style: "font-size:0.85em" }, "class probabilities"), bars);
  const note = element("p", { className: "attnbook-live-note", "aria-live": "polite", hidden: true, style: "margin:0.3em 0;padding:0.3em 0.5em;border-left:4px solid #e6550d;background:#fff5eb;color:#5a2d0c" });
  const status = element("p", { className: "attnbook-live-status", role: "status", style: "margin:0.4em 0;line-height:1.4" });
  const legend = element("p", { style: "margin:0;font-size:0.85em;line-height:1.35" });
  const LEGEND = "Blue: more attention (scaled to the largest patch). " +
    "Occlusion hides one patch at a time (replaced by the fill) and measures how much the probability of the predicted class drops: red where it drops, blue where it rises.";
  const result$ = element("div", { className: "attnbook-live-result", hidden: true });
  const row = (...children) => element("div", { style: "display:flex;flex-wrap:wrap;gap:0.6em;align-items:center" }, ...children);
  const app = element("div", { className: "attnbook-live attnbook-live-digits", style: "display:flex;flex-direction:column;gap:0.5em;font-family:sans-serif;max-width:100%" },
    row(startLabel, start, clear),
    row(penLabel, pen, fillLabel, fillSelect),
    element("div", { style: "display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start" }, gridFigure, probFigure),
    note, // below the grid, so that showing it never moves the grid under a stroke
    element("div", { style: "display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start" }, raw.figure, roll.figure, occ.figure),
    legend, status, result$);
  el.append(app);

  function showNote(text) {
    note.textContent = text;
    note.hidden = !text;
    result$.dataset.note = text;
  }

  function loadModel() {
    try {
      arch = model.get("arch");
      net = loadViT(weights, arch);
      if (imageLength(arch) !== SIDE * SIDE) throw new RangeError(`the explorer draws ${SIDE}x${SIDE} one-channel images`);
      const p = `${arch.patch_size} x ${arch.patch_size} patch`;
      gridCaption.textContent = `your digit (8 x 8 pixels, ${p}es in orange)`;
      raw.caption.textContent = `raw [CLS] attention, last block (block ${arch.num_layers - 1}), mean of the heads`;
      legend.textContent = `Each map lies over your digit in grey, one numbered square per ${p}. ${LEGEND}`;
    } catch (error) {
      net = null;
      showNote(`The model could not be loaded: ${error.message}`);
    }
    start.replaceChildren(element("option", { value: "" }, "(your drawing)"),
      ...(model.get("examples") || []).map((e, k) => element("option", { value: String(k) }, `test image ${e.index}: a ${e.label}`)));
  }

  function fillImage() {
    return fillSelect.value === "mean image" ? Float64Array.from(model.get("mean_image")) : new Float64Array(SIDE * SIDE);
  }

  function readPixels() {
    const values = model.get("pixels") || [];
    pixels = new Float64Array(SIDE * SIDE);
    for (let i = 0; i < Math.min(values.length, pixels.length); i++) pixels[i] = Math.max(0, Math.min(1, Number(values[i]) || 0));
  }

  // Occlusion (up to 16 more forward passes) is computed once the rest of the
  // picture is on screen: after the next frame is painted. A stroke faster
  // than that computes it once, for the pixels its last cell left.
  let frame = null;
  let pending = null;
  let updateStarted = 0;

  function update() {
    if (!net) return;
    updateStarted = performance.now();
    result = explainView(net, pixels);
    result.ms = performance.now() - updateStarted;
    draw(updateStarted);
    if (frame === null && pending === null) {
      frame = requestAnimationFrame(() => {
        frame = null;
        pending = setTimeout(occlude, 0);
      });
    }
  }

  // The probabilities, the grid, raw attention and rollout.
  function draw(started) {
    const { probs, predicted, raw: rawScores, rollout } = result;
    const blank = pixels.every((v) => v === 0);
    showNote(blank ? "The grid is blank: there is no digit to explain. The model still has to name a class, so the numbers below describe an empty page. Draw a digit, or start from a test image." : "");
    drawGrid(canvas, pixels, focus, focused, arch.patch_size);
    drawMap(rawCanvas, pixels, rawScores, Math.max(...rawScores), false);
    drawMap(rollCanvas, pixels, rollout, Math.max(...rollout), false);
    for (let d = 0; d < barCells.length; d++) {
      const [bar, value] = barCells[d];
      bar.style.width = `${Math.round(100 * probs[d])}px`;
      bar.style.background = d === predicted ? "#e6550d" : "#2171b5";
      value.textContent = probs[d].toFixed(2);
    }
    const ds = result$.dataset;
    ds.pixels = JSON.stringify(Array.from(pixels));
    ds.logits = JSON.stringify(Array.from(result.logits));
    ds.probs = JSON.stringify(Array.from(probs));
    ds.predicted = String(predicted);
    ds.raw = JSON.stringify(Array.from(rawScores));
    ds.rollout = JSON.stringify(Array.from(rollout));
    ds.fill = fillSelect.value;
    ds.blank = String(blank);
    ds.computeMs = String(result.ms);
    ds.drawMs = String(performance.now() - started);
    ds.updates = String(Number(ds.updates || 0) + 1);
    if (!ds.firstAt) ds.firstAt = String(performance.now());
  }

  // The occlusion map and the sentence, for the result drawn last.
  function occlude() {
    pending = null;
    if (!net || !result) return;
    const started = performance.now();
    const { probs, predicted, raw: rawScores, rollout } = result;
    const occScores = occlusion(net, pixels, fillImage(), predicted, probs[predicted]);
    const computeMs = performance.now() - started;
    const fillName = FILLS.find(([v]) => v === fillSelect.value)[1];
    const occTop = Math.max(...occScores.map(Math.abs));
    drawMap(occCanvas, pixels, occScores, occTop, true);
    occ.caption.textContent = `occlusion of class ${predicted}, fill: ${fillName}`;
    const j = argmax(occScores.map(Math.abs));
    const r = argmax(rawScores);
    const k = argmax(rollout);
    const text = `The model reads a ${predicted}, with probability ${round(probs[predicted])}. ` +
      `Raw attention puts most weight (${round(rawScores[r])}) on patch ${r}; rollout on patch ${k}. ` +
      (occTop < 0.005
        ? `Hiding any one patch (fill: ${fillName}) changes the probability of ${predicted} by less than 0.005.`
        : `Hiding patch ${j} (fill: ${fillName}) changes the probability of ${predicted} most: it ${occScores[j] >= 0 ? "drops" : "rises"} by ${round(Math.abs(occScores[j]))}.`);
    if (status.textContent !== text) status.textContent = text;
    const ds = result$.dataset;
    ds.occlusion = JSON.stringify(Array.from(occScores));
    ds.occlusionComputeMs = String(computeMs);
    // from the input to the occlusion map drawn, the frame painted between included
    ds.occlusionMs = String(performance.now() - updateStarted);
    ds.occluded = ds.updates;
  }

  function save() {
    model.set("pixels", Array.from(pixels));
    model.save_changes();
  }

  function setCell(i, j, value) {
    const at = i * SIDE + j;
    if (pixels[at] === value) return false;
    pixels[at] = value;
    start.value = "";
    return true;
  }

  function cellAt(event) {
    const rect = canvas.getBoundingClientRect();
    const j = Math.floor(((event.clientX - rect.left) / rect.width) * SIDE);
    const i = Math.floor(((event.clientY - rect.top) / rect.height) * SIDE);
    return i >= 0 && i < SIDE && j >= 0 && j < SIDE ? [i, j] : null;
  }

  function paint(event) {
    const cell = cellAt(event);
    if (!cell) return;
    focus = cell;
    if (setCell(cell[0], cell[1], Number(pen.value))) update();
  }

  canvas.addEventListener("pointerdown", (event) => {
    drawing = true;
    try {
      canvas.setPointerCapture(event.pointerId);
    } catch {
      // a synthetic or already-ended pointer: draw without capture
    }
    event.preventDefault();
    paint(event);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (drawing) paint(event);
  });
  const stop = () => {
    if (drawing) save();
    drawing = false;
  };
  canvas.addEventListener("pointerup", stop);
  canvas.addEventListener("pointercancel", stop);
  canvas.addEventListener("keydown", (event) => {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[event.key]) {
      const [di, dj] = moves[event.key];
      focus = [Math.max(0, Math.min(SIDE - 1, focus[0] + di)), Math.max(0, Math.min(SIDE - 1, focus[1] + dj))];
      canvas.setAttribute("aria-label", `8 by 8 drawing grid; focus on row ${focus[0]}, column ${focus[1]}, ink ${round(pixels[focus[0] * SIDE + focus[1]])}`);
      if (result) drawGrid(canvas, pixels, focus, true, arch.patch_size);
      event.preventDefault();
    } else if (event.key === " " || event.key === "Enter") {
      const at = focus[0] * SIDE + focus[1];
      const value = pixels[at] > 0 ? 0 : Number(pen.value) || 1;
      setCell(focus[0], focus[1], value);
      update();
      save();
      event.preventDefault();
    }
  });
  canvas.addEventListener("focus", () => {
    focused = true;
    if (result) drawGrid(canvas, pixels, focus, true, arch.patch_size);
  });
  canvas.addEventListener("blur", () => {
    focused = false;
    if (result) drawGrid(canvas, pixels, focus, false, arch.patch_size);
  });
  clear.addEventListener("click", () => {
    pixels = new Float64Array(SIDE * SIDE);
    start.value = "";
    update();
    save();
  });
  start.addEventListener("change", () => {
    const example = (model.get("examples") || [])[Number(start.value)];
    if (start.value === "" || !example) return;
    pixels = Float64Array.from(example.ink, (v) => v / 16);
    update();
    save();
  });
  fillSelect.addEventListener("change", () => {
    update();
    model.set("fill", fillSelect.value);
    model.save_changes();
  });

  function onPixels() {
    const values = model.get("pixels") || [];
    if (values.length === pixels.length && values.every((v, i) => v === pixels[i])) return;
    readPixels();
    update();
  }
  function onFill() {
    if (model.get("fill") !== fillSelect.value) {
      fillSelect.value = model.get("fill");
      update();
    }
  }
  function onWeights() {
    weights = model.get("weights"); // a kernel sends raw float16 bytes
    loadModel();
    update();
  }

  fillSelect.value = model.get("fill") || "zero";
  loadModel();
  readPixels();
  // Name the test image the pixels are, if they are one.
  const shownExample = (model.get("examples") || []).findIndex((e) => e.ink.every((v, i) => v / 16 === pixels[i]));
  if (shownExample >= 0) start.value = String(shownExample);
  update();
  model.on("change:pixels", onPixels);
  model.on("change:fill", onFill);
  model.on("change:weights", onWeights);
  return () => {
    model.off("change:pixels", onPixels);
    model.off("change:fill", onFill);
    model.off("change:weights", onWeights);
    if (frame !== null) cancelAnimationFrame(frame);
    if (pending !== null) clearTimeout(pending);
    app.remove();
  };
}

export default { render };
