// Chapter 13's live explorer (lib/attnbook/widgets/live/dates.js): both GRU
// models' greedy decoding on the shipped float16 weights against PyTorch's on
// the same weights (tests/live/fixtures/dates.json, tools/live_export.py
// dates-fixtures): the same tokens, 1e-4 on logits, 1e-5 on every attention
// weight; the reading of the text box and the training-format verdict as
// Python's (attnbook.widgets.live._pack_dates).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { answerText, characterName, forward, loadGruSeq2Seq, readSource, trainingFormat, verdictText } from "../../lib/attnbook/widgets/live/dates.js";

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
    const years = archs.attention.years;
    assert.deepEqual(trainingFormat(c.text, years), { format: c.format, date: c.date, reason: c.reason, written: c.written });
    assert.ok(verdictText(c.text, trainingFormat(c.text, years), years).length > 20);
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
  const years = archs.attention.years;
  const says = (text) => verdictText(text, trainingFormat(text, years), years);
  assert.match(says("3 March 1999"), /right answer is 1999-03-03/);
  assert.match(says("1999/3/3"), /^Outside the training formats/);
  assert.match(says("3 March 2077"), /outside the years 1950-2049/);
  assert.match(says("31/02/99"), /no real day/);
  assert.match(says("Monday 3 Mar 1999"), /weekday is wrong/);
  assert.match(says("03 March 1999"), /write this date “3 March 1999”/);
  assert.equal(trainingFormat("29/02/00", years).reason, "ok"); // 2000 was a leap year
  assert.equal(trainingFormat("29/02/50", years).reason, "no date");
  assert.equal(trainingFormat("3 March 0000", years).reason, "no date");
  // The years come from the arch, not from the page's code.
  assert.equal(trainingFormat("3 March 2077", [1950, 2099]).reason, "ok");
  assert.throws(() => trainingFormat("3 March 1999"), TypeError);
});

test("a space too many or a capital letter is a spelling of a training date, with its answer", () => {
  const years = archs.attention.years;
  for (const text of ["3 March 1999 ", " 3 March 1999", "3  March 1999", "3 march 1999"]) {
    assert.deepEqual(trainingFormat(text, years), { format: "long", date: "1999-03-03", reason: "spelling", written: "3 March 1999" });
  }
  assert.deepEqual(trainingFormat("Nov 25, 2026", years), { format: "short", date: "2026-11-25", reason: "spelling", written: "nov 25, 2026" });
  assert.equal(trainingFormat("WEDNESDAY 25 nov 2026", years).reason, "spelling");
  assert.equal(trainingFormat("monday 25 Nov 2026", years).reason, "weekday");
  assert.equal(trainingFormat("  3 March   2077 ", years).reason, "range");
  assert.equal(trainingFormat("3March 1999", years).reason, "format");
  // ASCII case only, as Python's re.ASCII: the long s is no "s".
  assert.equal(trainingFormat("Wednesday 25 Nov 2026".replace("s", "\u017f"), years).reason, "format");
  // The models read these as 1999-03-03 (test_live_dates.py); so the page marks them.
  const read = readSource("3 March 1999 ", archs.attention.source_symbols, archs.attention.max_len);
  assert.equal(read.text, "3 March 1999 ");
  const out = forward(nets.attention, Array.from(read.text).map((c) => archs.attention.source_symbols.indexOf(c)));
  assert.equal(answerText(out.tokens, archs.attention.target_symbols), "1999-03-03");
});

test("the input is read in NFC; invisible characters are named by code point", () => {
  const { source_symbols: symbols, max_len: maxLen } = archs.attention;
  assert.deepEqual(readSource("3 Marche\u0301 1999", symbols, maxLen), { text: "3 March 1999", unknown: ["é"], dropped: 0 });
  assert.equal(characterName("\t"), "U+0009");
  assert.equal(characterName("\u00a0"), "U+00A0");
  assert.equal(characterName("\u200b"), "U+200B");
  assert.equal(characterName("\u0301"), "U+0301");
  assert.equal(characterName("K"), "“K”");
  assert.equal(characterName("😀"), "“😀”");
  assert.equal(archs.attention.longest_training, 21);
});

test("the model refuses a source outside the vocabulary or over max_len", () => {
  assert.throws(() => forward(nets.attention, [0]), RangeError);
  assert.throws(() => forward(nets.attention, [45]), RangeError);
  assert.throws(() => forward(nets.attention, Array(41).fill(5)), RangeError);
  assert.throws(() => loadGruSeq2Seq(new Uint8Array(4), archs.attention), RangeError);
  assert.throws(() => loadGruSeq2Seq(new Uint8Array(4), { format: 2 }), TypeError);
});
