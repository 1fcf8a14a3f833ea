// Chapter 13's live explorer (lib/attnbook/widgets/live/dates.js): both GRU
// models' greedy decoding on the shipped float16 weights against PyTorch's on
// the same weights (tests/live/fixtures/dates.json, tools/live_export.py
// dates-fixtures): the same tokens, 1e-4 on logits, 1e-5 on every attention
// weight; the reading of the text box and the training-format verdict as
// Python's (attnbook.widgets.live._pack_dates).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { answerText, forward, loadGruSeq2Seq, readSource, trainingFormat, verdictText } from "../../lib/attnbook/widgets/live/dates.js";

const here = (path) => new URL(path, import.meta.url);
const fixture = JSON.parse(readFileSync(here("./fixtures/dates.json")));
const archs = JSON.parse(readFileSync(here("../../lib/attnbook/widgets/live/dates.json")));
const files = { attention: "dates.f16", no_attention: "dates_no_attention.f16" };
const nets = {};
for (const [kind, file] of Object.entries(files)) {
  nets[kind] = loadGruSeq2Seq(new Uint8Array(readFileSync(here(`../../lib/attnbook/widgets/live/${file}`))), archs[kind]);
}

function maxDifference(actual, expected) {
  assert.equal(actual.length, expected.length, "lengths differ");
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  return worst;
}

test("the fixtures cover the four formats, empty, blank, unknown characters, the longest and too long", () => {
  const names = fixture.cases.map((c) => c.name);
  for (const name of ["long", "short", "numeric", "weekday", "empty", "blank", "unknown characters", "only unknown characters", "longest", "too long", "one character"]) {
    assert.ok(names.includes(name), name);
  }
  const max = archs.attention.max_len;
  assert.equal(fixture.cases.find((c) => c.name === "longest").text.length, max);
  assert.ok(fixture.cases.find((c) => c.name === "too long").dropped > 0);
  for (const kind of Object.keys(files)) {
    const { source, ...arch } = archs[kind];
    assert.deepEqual(fixture.archs[kind], arch);
  }
});

for (const c of fixture.cases) {
  test(`input "${c.name}": read and judged as Python does; answers, logits and weights as PyTorch's`, () => {
    const read = readSource(c.input, archs.attention.source_symbols, archs.attention.max_len);
    assert.deepEqual(read, { text: c.text, unknown: c.unknown, dropped: c.dropped });
    assert.deepEqual(trainingFormat(c.text), { format: c.format, date: c.date, reason: c.reason, written: c.written });
    assert.ok(verdictText(c.text, trainingFormat(c.text)).length > 20);
    const ids = Array.from(c.text).map((ch) => archs.attention.source_symbols.indexOf(ch));
    for (const kind of Object.keys(files)) {
      const expected = c[kind];
      if (!c.text) {
        assert.equal(expected, null);
        assert.throws(() => forward(nets[kind], ids), RangeError);
        continue;
      }
      const out = forward(nets[kind], ids);
      assert.deepEqual(out.tokens, expected.tokens, `${kind}: tokens`);
      assert.equal(answerText(out.tokens, archs[kind].target_symbols), expected.answer);
      const logits = out.logits.flatMap((l) => Array.from(l));
      const logitDiff = maxDifference(logits, expected.logits);
      assert.ok(logitDiff < 1e-4, `${kind}: logits differ by ${logitDiff}`);
      if (expected.weights === null) assert.equal(out.weights, null);
      else {
        const weights = out.weights.flatMap((w) => Array.from(w));
        const weightDiff = maxDifference(weights, expected.weights);
        assert.ok(weightDiff < 1e-5, `${kind}: attention weights differ by ${weightDiff}`);
      }
    }
  });
}

test("the verdicts say in plain words what is outside the training data", () => {
  assert.match(verdictText("3 March 1999", trainingFormat("3 March 1999")), /right answer is 1999-03-03/);
  assert.match(verdictText("1999/3/3", trainingFormat("1999/3/3")), /^Outside the training formats/);
  assert.match(verdictText("3 March 2077", trainingFormat("3 March 2077")), /outside the years 1950-2049/);
  assert.match(verdictText("31/02/99", trainingFormat("31/02/99")), /no real day/);
  assert.match(verdictText("Monday 3 Mar 1999", trainingFormat("Monday 3 Mar 1999")), /weekday is wrong/);
  assert.match(verdictText("03 March 1999", trainingFormat("03 March 1999")), /write this date “3 March 1999”/);
  assert.equal(trainingFormat("29/02/00").reason, "ok"); // 2000 was a leap year
  assert.equal(trainingFormat("29/02/50").reason, "no date");
  assert.equal(trainingFormat("3 March 0000").reason, "no date");
});

test("the model refuses a source outside the vocabulary or over max_len", () => {
  assert.throws(() => forward(nets.attention, [0]), RangeError);
  assert.throws(() => forward(nets.attention, [45]), RangeError);
  assert.throws(() => forward(nets.attention, Array(41).fill(5)), RangeError);
  assert.throws(() => loadGruSeq2Seq(new Uint8Array(4), archs.attention), RangeError);
  assert.throws(() => loadGruSeq2Seq(new Uint8Array(4), { format: 2 }), TypeError);
});
