// Chapter 13's live explorer, "a date of your own": the reader types a date in
// any format; the page runs the chapter's two GRU encoder-decoders
// (attnbook.seq2seq.GRUSeq2Seq, with and without attention) on it, shows both
// answers side by side and the cross-attention heatmap (output character x
// source character), and says whether the input is written in one of the four
// formats the models were trained on. An anywidget module: `export default { render }`.
import { additiveAttention, argmax, asBytes, bidirectionalGru, blue, bridgeState, element, embedding, greedyDecode, gruCell, linear, round, unpack } from "./runtime.js";

// ---------------------------------------------------------------- the model

// The packed weights (bytes) and arch (attnbook.widgets.live._pack_dates) as a model.
export function loadGruSeq2Seq(weights, arch) {
  if (!arch || arch.format !== 1 || arch.model !== "gru-seq2seq") {
    throw new TypeError("arch must describe a GRU encoder-decoder in format 1");
  }
  const t = unpack(asBytes(weights), arch.tensors);
  const get = (name) => (t[name] ? t[name].data : null);
  return {
    arch,
    sourceEmbed: get("encoder.embedding.weight"),
    encoder: {
      ih: get("encoder.gru.weight_ih_l0"), hh: get("encoder.gru.weight_hh_l0"),
      bih: get("encoder.gru.bias_ih_l0"), bhh: get("encoder.gru.bias_hh_l0"),
      ihReverse: get("encoder.gru.weight_ih_l0_reverse"), hhReverse: get("encoder.gru.weight_hh_l0_reverse"),
      bihReverse: get("encoder.gru.bias_ih_l0_reverse"), bhhReverse: get("encoder.gru.bias_hh_l0_reverse"),
    },
    bridge: arch.bridge ? { weight: get("bridge.weight"), bias: get("bridge.bias") } : null,
    targetEmbed: get("embedding.weight"),
    cell: { ih: get("cell.weight_ih"), hh: get("cell.weight_hh"), bih: get("cell.bias_ih"), bhh: get("cell.bias_hh") },
    attention: arch.attention ? { Ws: get("attention.W_s.weight"), Wh: get("attention.W_h.weight"), v: get("attention.v.weight") } : null,
    output: { weight: get("output.weight"), bias: get("output.bias") },
  };
}

function concat(a, b) {
  const out = new Float64Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

// Source ids (not empty) -> {tokens, logits: [step] (target vocab), weights:
// [step] (n) or null}: GRUSeq2Seq's encoder, bridge and greedy decoding.
export function forward(net, ids) {
  const a = net.arch;
  const n = ids.length;
  if (n < 1 || n > a.max_len) throw new RangeError(`the source must hold 1 to ${a.max_len} symbols, got ${n}`);
  for (const id of ids) {
    if (!Number.isInteger(id) || id < 1 || id >= a.source_vocab) throw new RangeError(`source symbol ${id} is outside 1..${a.source_vocab - 1}`);
  }
  const E = a.embed;
  const C = 2 * a.enc_hiddens;
  const S = a.dec_hiddens;
  const V = a.target_vocab;
  const xs = embedding(net.sourceEmbed, E, ids);
  const { states, final } = bidirectionalGru(xs, n, E, a.enc_hiddens, net.encoder);
  const start = net.bridge ? bridgeState(final, C, net.bridge.weight, S, net.bridge.bias) : new Float64Array(S);
  const A = a.attn_hiddens;
  const projected = net.attention ? linear(states, n, C, net.attention.Wh, A) : null;
  const { cell, output } = net;
  function step(previous, s) {
    const y = embedding(net.targetEmbed, E, [previous]);
    if (!net.attention) {
      const next = gruCell(concat(y, final), s, E + C, S, cell.ih, cell.hh, cell.bih, cell.bhh);
      return { logits: linear(concat(next, final), 1, S + C, output.weight, V, output.bias), state: next, weights: null };
    }
    const next = gruCell(y, s, E, S, cell.ih, cell.hh, cell.bih, cell.bhh); // the query
    const { context, weights } = additiveAttention(next, S, projected, states, n, C, A, net.attention.Ws, net.attention.v);
    return { logits: linear(concat(next, context), 1, S + C, output.weight, V, output.bias), state: next, weights };
  }
  const out = greedyDecode(step, start, a.target_length, 0);
  return { ...out, weights: net.attention ? out.weights : null };
}

// The characters written (the start symbol, id 0, is skipped, as TARGET_VOCAB.decode).
export function answerText(tokens, symbols) {
  return tokens.filter((t) => t !== 0).map((t) => symbols[t]).join("");
}

// ---------------------------------------------------------------- the input

// Text -> {text, unknown, dropped}: the characters of the source vocabulary
// (symbols, index 0 the padding), at most maxLen, of the text in Unicode's NFC
// form (an "e" and a combining accent read as one "é"); the others are left out
// and listed once each in `unknown`; `dropped` counts those past maxLen.
// Nothing but spaces reads as nothing.
export function readSource(input, symbols, maxLen) {
  const known = new Set(symbols.slice(1));
  const kept = [];
  const unknown = [];
  for (const c of String(input).normalize("NFC")) {
    if (known.has(c)) kept.push(c);
    else if (!unknown.includes(c)) unknown.push(c);
  }
  if (kept.every((c) => c === " ")) return { text: "", unknown, dropped: 0 }; // nothing but spaces
  return { text: kept.slice(0, maxLen).join(""), unknown, dropped: Math.max(0, kept.length - maxLen) };
}

// A character as the note names it: quoted, or by its code point ("U+0009")
// when it prints as nothing or as blank space (a tab, a no-break space, a
// zero-width space, a lone combining mark).
export function characterName(c) {
  if (/^[\p{C}\p{Z}\p{M}]/u.test(c)) return `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  return `“${c}”`;
}

export const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
export const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const SHORT = MONTHS.map((m) => m.slice(0, 3).toLowerCase());
// Matched without regard to case ("Nov 25, 2026" has the short format's shape);
// a spelling the training data do not use gets the verdict "spelling".
const PATTERNS = {
  long: new RegExp(`^([0-9]{1,2}) (${MONTHS.join("|")}) ([0-9]{4})$`, "i"),
  short: new RegExp(`^(${SHORT.join("|")}) ([0-9]{1,2}), ([0-9]{4})$`, "i"),
  numeric: /^([0-9]{2})\/([0-9]{2})\/([0-9]{2})$/,
  weekday: new RegExp(`^(${WEEKDAYS.join("|")}) ([0-9]{1,2}) (${MONTHS.map((m) => m.slice(0, 3)).join("|")}) ([0-9]{4})$`, "i"),
};
// One example of each training format (25 November 2026, as attnbook.dates writes it).
export const EXAMPLES = { long: "25 November 2026", short: "nov 25, 2026", numeric: "25/11/26", weekday: "Wednesday 25 Nov 2026" };

const pad = (x, width = 2) => String(x).padStart(width, "0");
const monthOf = (name) => SHORT.indexOf(name.slice(0, 3).toLowerCase()) + 1;

// attnbook.dates.format_date.
function formatDate(year, month, day, weekday, fmt) {
  const name = MONTHS[month - 1];
  if (fmt === "long") return `${day} ${name} ${year}`;
  if (fmt === "short") return `${name.slice(0, 3).toLowerCase()} ${day}, ${year}`;
  if (fmt === "numeric") return `${pad(day)}/${pad(month)}/${pad(year % 100)}`;
  return `${WEEKDAYS[weekday]} ${day} ${name.slice(0, 3)} ${year}`;
}

// Is text a date in one of the four training formats? The same verdict as
// attnbook.widgets.live._pack_dates.training_format: {format, date, reason},
// reason "ok", "format" (none of the four shapes), "no date" (31 February),
// "range" (outside years, the training's first and last year, arch.years),
// "weekday" (not that date's) or "spelling" (the training data write the date
// otherwise: a leading zero, another case, a space too many or at either end);
// `written` is the date as the training data write it ("ok", "spelling") or null.
// The shapes are matched on the text with runs of spaces made one and trimmed.
export function trainingFormat(text, years) {
  if (!Array.isArray(years) || years.length !== 2 || !years.every(Number.isInteger)) {
    throw new TypeError(`years must be [first, last] (arch.years), got ${JSON.stringify(years)}`);
  }
  const plain = String(text).replace(/ +/g, " ").replace(/^ | $/g, "");
  for (const [fmt, pattern] of Object.entries(PATTERNS)) {
    const found = pattern.exec(plain);
    if (!found) continue;
    const p = found.slice(1);
    let day, month, year;
    if (fmt === "long") [day, month, year] = [Number(p[0]), monthOf(p[1]), Number(p[2])];
    else if (fmt === "short") [day, month, year] = [Number(p[1]), monthOf(p[0]), Number(p[2])];
    else if (fmt === "numeric") {
      [day, month, year] = [Number(p[0]), Number(p[1]), Number(p[2])];
      year += year >= 50 ? 1900 : 2000;
    } else [day, month, year] = [Number(p[1]), monthOf(p[2]), Number(p[3])];
    const when = new Date(0);
    when.setUTCFullYear(year, month - 1, day);
    if (year < 1 || month < 1 || month > 12 || when.getUTCDate() !== day || when.getUTCMonth() !== month - 1) {
      return { format: fmt, date: null, reason: "no date", written: null };
    }
    const date = `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
    if (year < years[0] || year > years[1]) return { format: fmt, date, reason: "range", written: null };
    const weekday = (when.getUTCDay() + 6) % 7; // Monday 0, as Python's weekday()
    if (fmt === "weekday" && p[0].toLowerCase() !== WEEKDAYS[weekday].toLowerCase()) return { format: fmt, date, reason: "weekday", written: null };
    const written = formatDate(year, month, day, weekday, fmt);
    if (written !== text) return { format: fmt, date, reason: "spelling", written };
    return { format: fmt, date, reason: "ok", written };
  }
  return { format: null, date: null, reason: "format", written: null };
}

// The verdict in plain words (years: arch.years).
export function verdictText(text, verdict, years) {
  const { format: fmt, date, reason } = verdict;
  const examples = Object.values(EXAMPLES).map((e) => `“${e}”`);
  const formats = `${examples.slice(0, 3).join(", ")} or ${examples[3]}`;
  if (reason === "ok") return `A date in one of the four training formats (${fmt}, like “${EXAMPLES[fmt]}”): the right answer is ${date}.`;
  if (reason === "format") {
    return `Outside the training formats: the models only ever saw dates written like ${formats}. Whatever they write here is a guess from familiar-looking pieces, not a reading.`;
  }
  if (reason === "no date") return `Shaped like the training's ${fmt} format, but it names no real day: the models never saw one.`;
  if (reason === "range") return `A real date, ${date}, but outside the years ${years[0]}-${years[1]} the models were trained on.`;
  if (reason === "weekday") return `Shaped like the training's weekday format, but the weekday is wrong for ${date}: the training data never had a wrong weekday.`;
  return `Close to the training's ${fmt} format, but the training data write this date “${verdict.written}”.`;
}

// ---------------------------------------------------------------- the view

const CELL = 16; // pixels per heatmap cell
const LEFT = 22; // room for the output characters
const TOP = 20; // room for the source characters

let counter = 0;

function drawHeatmap(canvas, weights, source, answer) {
  const n = source.length;
  const m = weights.length;
  const width = LEFT + Math.max(n, 1) * CELL;
  const height = TOP + m * CELL;
  const ratio = globalThis.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = "#000";
  ctx.font = "12px monospace";
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let j = 0; j < n; j++) ctx.fillText(source[j] === " " ? "·" : source[j], LEFT + j * CELL + CELL / 2, TOP / 2);
  for (let t = 0; t < m; t++) {
    ctx.fillStyle = "#000";
    ctx.fillText(answer[t] ?? "", LEFT / 2, TOP + t * CELL + CELL / 2);
    for (let j = 0; j < n; j++) {
      ctx.fillStyle = blue(weights[t][j]);
      ctx.fillRect(LEFT + j * CELL, TOP + t * CELL, CELL, CELL);
    }
  }
}

// The characters of each output step (the start symbol shown as "∅").
function stepCharacters(tokens, symbols) {
  return tokens.map((t) => (t === 0 ? "∅" : symbols[t]));
}

export function render({ model, el }) {
  const id = `attnbook-live-${++counter}`;
  let net = null;
  let plain = null;

  const field = element("input", {
    type: "text", id: `${id}-date`, spellcheck: false, autocomplete: "off",
    style: "flex:1 1 14em;min-width:0;font-family:monospace;font-size:1em;padding:0.2em",
  });
  const label = element("label", { htmlFor: `${id}-date` }, "A date, in any format");
  const tries = element("div", { style: "display:flex;flex-wrap:wrap;gap:0.3em;align-items:center;font-size:0.9em" }, "Try:");
  const note = element("p", { className: "attnbook-live-note", hidden: true, "aria-live": "polite", style: "margin:0.3em 0;padding:0.3em 0.5em;border-left:4px solid #e6550d;background:#fff5eb;color:#5a2d0c" });
  const verdict = element("p", { className: "attnbook-live-verdict", style: "margin:0.2em 0;line-height:1.4" });
  const answerStyle = "flex:1 1 12em;margin:0;padding:0.3em 0.5em;border:1px solid #ccc;border-radius:4px";
  const withBox = element("p", { className: "attnbook-live-answer", style: answerStyle });
  const withoutBox = element("p", { className: "attnbook-live-answer", style: answerStyle });
  const answers = element("div", { style: "display:flex;flex-wrap:wrap;gap:0.6em" }, withBox, withoutBox);
  const canvas = element("canvas", { role: "img", "aria-label": "cross-attention heatmap" });
  const caption = element("figcaption", { style: "font-size:0.9em" }, "Cross-attention of the model with attention: one row per output character, one column per input character");
  const figure = element("figure", { className: "attnbook-live-map", style: "margin:0;display:flex;flex-direction:column;gap:0.3em" }, caption,
    element("div", { className: "attnbook-live-strip", tabindex: 0, role: "group", "aria-label": "heatmap (scrolls sideways on a narrow screen)", style: "overflow-x:auto;max-width:100%" }, canvas));
  const legend = element("p", { style: "margin:0;font-size:0.85em;line-height:1.35" },
    "Darker blue is more weight; each row's weights add up to 1. Spaces in the input are shown as “·”. The model without attention has no map: it sees the input only through one summary vector.");
  const status = element("p", { className: "attnbook-live-status", role: "status", style: "margin:0.4em 0;line-height:1.4" });
  const result$ = element("div", { className: "attnbook-live-result", hidden: true });
  const app = element("div", { className: "attnbook-live attnbook-live-dates", style: "display:flex;flex-direction:column;gap:0.5em;font-family:sans-serif;max-width:100%" },
    element("div", { style: "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center" }, label, field),
    tries, note, verdict, answers, figure, legend, status, result$);
  el.append(app);

  for (const example of ["3 March 1999", "1999/3/3", "march 3rd 99", "3 March 2077", "hello there"]) {
    const button = element("button", { type: "button" }, example);
    button.addEventListener("click", () => {
      field.value = example;
      onType();
    });
    tries.append(button);
  }

  function showNote(text) {
    note.textContent = text;
    note.hidden = !text;
    result$.dataset.note = text;
  }

  function loadModels() {
    try {
      net = loadGruSeq2Seq(model.get("weights"), model.get("arch"));
      plain = loadGruSeq2Seq(model.get("plain_weights"), model.get("plain_arch"));
    } catch (error) {
      net = plain = null;
      showNote(`The models could not be loaded: ${error.message}`);
    }
  }

  function describeAnswer(box, who, answer, date) {
    let mark = "";
    if (date) mark = answer === date ? " (right)" : ` (wrong: ${date})`;
    box.replaceChildren(`${who}: `, element("strong", { style: "font-family:monospace;font-size:1.15em" }, answer || "(nothing)"), mark);
  }

  function update() {
    if (!net) return;
    const started = performance.now();
    const a = net.arch;
    const read = readSource(field.value, a.source_symbols, a.max_len);
    const notes = [];
    if (read.unknown.length) {
      const shown = read.unknown.slice(0, 6).map(characterName).join(", ");
      notes.push(`Left out ${shown}${read.unknown.length > 6 ? " and more" : ""}: the models know only the ${a.source_symbols.length - 1} characters of the training dates (digits, space, “,”, “/” and the letters of the month and weekday names).`);
    }
    if (read.dropped) notes.push(`The explorer reads at most ${a.max_len} characters (the longest training date has ${a.longest_training}); the last ${read.dropped} are left out.`);
    if (!read.text) notes.push(read.unknown.length ? "Nothing is left to read." : "Type a date to see the models' answers.");
    showNote(notes.join(" "));
    const ds = result$.dataset;
    const source = Array.from(read.text);
    let out = null;
    let base = null;
    let check = { format: null, date: null, reason: "empty", written: null };
    if (source.length) {
      const ids = source.map((c) => a.source_symbols.indexOf(c));
      out = forward(net, ids);
      base = forward(plain, ids);
      check = trainingFormat(read.text, a.years);
    }
    const computed = performance.now();
    const answer = out ? answerText(out.tokens, a.target_symbols) : "";
    const baseAnswer = base ? answerText(base.tokens, plain.arch.target_symbols) : "";
    const expected = check.reason === "ok" || check.reason === "range" || check.reason === "spelling" ? check.date : null;
    verdict.textContent = out ? verdictText(read.text, check, a.years) : "";
    describeAnswer(withBox, "With attention", answer, expected);
    describeAnswer(withoutBox, "Without attention", baseAnswer, expected);
    // No map without a result (an inline display would override `hidden`).
    figure.style.display = out && out.weights ? "flex" : "none";
    let text = "No input: nothing to show.";
    if (out) {
      const outChars = stepCharacters(out.tokens, a.target_symbols);
      if (out.weights) drawHeatmap(canvas, out.weights, source, outChars);
      const looks = out.weights
        ? out.weights.map((w, t) => {
          const j = argmax(w);
          return `“${outChars[t]}” on “${source[j] === " " ? "space" : source[j]}” (${round(w[j])})`;
        })
        : [];
      text = `Input “${read.text}”. With attention the model writes ${answer || "nothing"}; without attention, ${baseAnswer || "nothing"}. ${verdict.textContent}` +
        (looks.length ? ` Largest weight of each output character: ${looks.join(", ")}.` : "");
      canvas.setAttribute("aria-label", `cross-attention heatmap of ${source.length} input characters and ${out.tokens.length} output characters`);
    }
    if (status.textContent !== text) status.textContent = text;
    // The numbers, for tests and the benchmark.
    ds.input = field.value;
    ds.text = read.text;
    ds.answer = answer;
    ds.plainAnswer = baseAnswer;
    ds.tokens = JSON.stringify(out ? out.tokens : []);
    ds.plainTokens = JSON.stringify(base ? base.tokens : []);
    ds.logits = JSON.stringify(out ? out.logits.flatMap((l) => Array.from(l)) : []);
    ds.plainLogits = JSON.stringify(base ? base.logits.flatMap((l) => Array.from(l)) : []);
    ds.weights = JSON.stringify(out && out.weights ? out.weights.flatMap((w) => Array.from(w)) : []);
    ds.format = String(check.format);
    ds.reason = check.reason;
    ds.computeMs = String(computed - started);
    ds.drawMs = String(performance.now() - computed);
    ds.updates = String(Number(ds.updates || 0) + 1);
    if (!ds.firstAt) ds.firstAt = String(performance.now());
  }

  function onType() {
    update();
    model.set("text", field.value);
    model.save_changes();
  }

  function onModelText() {
    if (model.get("text") !== field.value) {
      field.value = model.get("text");
      update();
    }
  }

  function onWeights() {
    loadModels();
    update();
  }

  field.value = model.get("text") || "";
  loadModels();
  update();
  field.addEventListener("input", onType);
  model.on("change:text", onModelText);
  model.on("change:weights", onWeights);
  model.on("change:plain_weights", onWeights);
  return () => {
    model.off("change:text", onModelText);
    model.off("change:weights", onWeights);
    model.off("change:plain_weights", onWeights);
    app.remove();
  };
}

export default { render };
