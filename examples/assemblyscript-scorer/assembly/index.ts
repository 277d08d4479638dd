// The PHQ-9 scorer in AssemblyScript: the same rules, the same fixtures
// and the same output bytes as the Rust scorer in questionnaires/phq9/
// (its src/lib.rs cites the sources of every rule; they are repeated
// next to each rule here). It implements the plugin ABI by hand
// (docs/plugin-abi.md; the JSON it reads and writes is described by
// plugin-sdk/contract.schema.json):
//
//   memory                        the module's memory (exported by asc)
//   outcomes_abi_version() -> i32 1
//   outcomes_alloc(len) -> ptr    room for the input
//   outcomes_describe() -> i64    the manifest JSON, (ptr << 32) | len
//   outcomes_call(ptr, len) -> i64  ScorerInput JSON in, reply JSON out
//
// Built with `--runtime stub`: a bump allocator that never frees, which is
// all a module needs when every call gets a fresh instance. A failed
// assertion or a bounds check calls AssemblyScript's `env.abort`, which
// the host turns into a trap carrying the message.

import { Bytes, Reader, failure } from "./json";

const ABI_VERSION: i32 = 1;

// The manifest: the name and version the Rust scorer has, marked as this
// build (semver build metadata). It reads `values` alone, like the Rust
// scorer, so the host leaves questions and answered option keys out.
const MANIFEST =
  '{"name":"phq9","kind":"scorer","version":"1.1.1+assemblyscript","abi_version":1,' +
  '"questionnaires":["phq9"],"questions":false,"answers":false}';

/// The scored items, in form order (Kroenke, Spitzer & Williams 2001).
const ITEMS: StaticArray<string> = ["v_1", "v_2", "v_3", "v_4", "v_5", "v_6", "v_7", "v_8", "v_9"];

/// The items of the PHQ-8 (Kroenke et al. 2009): all but item 9.
const PHQ8_COUNT = 8;

/// At least this many answered items give a (prorated) total: up to two
/// missing (Arrieta et al. 2017).
const MIN_ANSWERED = 7;

/// The clinical cut-off (Kroenke et al. 2001).
const CUTOFF: f64 = 10.0;

export function outcomes_abi_version(): i32 {
  return ABI_VERSION;
}

export function outcomes_alloc(len: i32): usize {
  return heap.alloc(<usize>len);
}

export function outcomes_describe(): i64 {
  const out = new Bytes();
  out.text(MANIFEST);
  return out.packed();
}

// What the call reads from its input, kept in globals: AssemblyScript's
// function values cannot capture locals.
const values = new StaticArray<f64>(9);
const answered = new StaticArray<bool>(9);
let phq8 = false;
let normFound = false;
let normMean: f64 = 0;
let normSd: f64 = 0;
// The first score named `total` wins (QuestionnaireInfo::score).
let totalSeen = false;
// The score being read: its key, its norm.
let scoreIsTotal = false;
let scoreHasNorm = false;
let scoreMean: f64 = 0;
let scoreSd: f64 = 0;
let meanSeen = false;
let sdSeen = false;
const key = new Bytes();

function itemIndex(k: Bytes): i32 {
  for (let i = 0; i < ITEMS.length; i++) {
    if (k.is(ITEMS[i])) return i;
  }
  return -1;
}

function readValue(r: Reader, k: Bytes): void {
  const i = itemIndex(k);
  r.skipSpace();
  if (r.peek() == 0x6e) {
    r.literal("null");
    if (i >= 0) answered[i] = false;
    return;
  }
  const c = r.peek();
  if (c != 0x2d && (c < 0x30 || c > 0x39)) {
    r.error("a value must be a number or null");
    return;
  }
  const v = r.number();
  if (i >= 0) {
    values[i] = v;
    answered[i] = true;
  }
}

function readFlag(r: Reader, k: Bytes): void {
  r.skipSpace();
  let on = false;
  if (r.peek() == 0x74) {
    r.literal("true");
    on = true;
  } else if (r.peek() == 0x66) {
    r.literal("false");
  } else {
    r.error("a flag must be true or false");
    return;
  }
  if (k.is("phq8")) phq8 = on;
}

function readNormField(r: Reader, k: Bytes): void {
  if (k.is("mean")) {
    scoreMean = r.number();
    meanSeen = true;
  } else if (k.is("sd")) {
    scoreSd = r.number();
    sdSeen = true;
  } else {
    r.skip();
  }
}

function readScoreField(r: Reader, k: Bytes): void {
  if (k.is("key")) {
    const name = new Bytes();
    r.string(name);
    scoreIsTotal = name.is("total");
  } else if (k.is("norm")) {
    r.skipSpace();
    if (r.peek() == 0x6e) {
      r.literal("null");
      scoreHasNorm = false;
      return;
    }
    meanSeen = false;
    sdSeen = false;
    r.object(new Bytes(), readNormField);
    if (!meanSeen || !sdSeen) r.error("a norm needs mean and sd");
    scoreHasNorm = true;
  } else {
    r.skip();
  }
}

function readScores(r: Reader): void {
  if (!r.expect(0x5b)) return;
  r.skipSpace();
  if (r.peek() == 0x5d) {
    r.pos++;
    return;
  }
  while (r.ok()) {
    scoreIsTotal = false;
    scoreHasNorm = false;
    r.object(new Bytes(), readScoreField);
    if (scoreIsTotal && !totalSeen) {
      totalSeen = true;
      normFound = scoreHasNorm;
      normMean = scoreMean;
      normSd = scoreSd;
    }
    r.skipSpace();
    if (r.peek() == 0x2c) {
      r.pos++;
      continue;
    }
    r.expect(0x5d);
    return;
  }
}

function readQuestionnaireField(r: Reader, k: Bytes): void {
  if (k.is("scores")) readScores(r);
  else r.skip();
}

function readInputField(r: Reader, k: Bytes): void {
  if (k.is("values")) {
    // Every call starts from nothing: a key given twice keeps its last
    // value, as a map does.
    r.object(new Bytes(), readValue);
  } else if (k.is("flags")) {
    r.object(new Bytes(), readFlag);
  } else if (k.is("questionnaire")) {
    r.object(new Bytes(), readQuestionnaireField);
  } else {
    r.skip();
  }
}

/// f64::round: halves away from zero.
function roundAway(x: f64): f64 {
  let t = Math.trunc(x);
  if (Math.abs(x - t) >= 0.5) t += x < 0 ? -1.0 : 1.0;
  return t;
}

/// plugin_sdk::scoring::round_to.
function roundTo(value: f64, decimals: i32): f64 {
  const EXACT: f64 = 4503599627370496.0;
  const factor: f64 = decimals == 0 ? 1.0 : 10.0;
  const scaled = value * factor;
  if (!isFinite(scaled) || Math.abs(scaled) >= EXACT) return value;
  const rounded = roundAway(scaled) / factor;
  return rounded == 0 ? 0.0 : rounded;
}

/// Severity bands, each from its lowest total: 0–4 minimal, 5–9 mild,
/// 10–14 moderate, 15–19 moderately severe, 20–27 severe (Kroenke et al.
/// 2001; Kroenke & Spitzer 2002). Below 0 there is no band.
function severity(total: f64): string | null {
  if (total >= 20) return "severe";
  if (total >= 15) return "moderately severe";
  if (total >= 10) return "moderate";
  if (total >= 5) return "mild";
  if (total >= 0) return "minimal";
  return null;
}

/// T-score bands (plugin_sdk::scoring::TSCORE_BANDS).
function tscoreBand(t: f64): string {
  if (t >= 70) return "very high";
  if (t >= 60) return "high";
  if (t >= 40) return "average";
  if (t >= 30) return "low";
  return "very low";
}

function writeKeys(out: Bytes, keys: StaticArray<bool>, n: i32): void {
  out.push(0x5b);
  let first = true;
  for (let i = 0; i < n; i++) {
    if (!keys[i]) continue;
    if (!first) out.push(0x2c);
    out.quoted(ITEMS[i]);
    first = false;
  }
  out.push(0x5d);
}

/// The `total` score with its value, band, cut-off, status and t-score.
function writeTotal(out: Bytes, total: f64, withNorm: bool): void {
  out.text('{"value":');
  out.number(total);
  const band = severity(total);
  if (band !== null) {
    out.text(',"interpretation":');
    out.quoted(band);
  }
  out.text(',"norm":">= 10"');
  if (withNorm && normFound && normSd > 0) {
    // Linear T against the definition's norm, to one decimal.
    const t = 50.0 + (10.0 * (total - normMean)) / normSd;
    if (isFinite(t)) {
      const rounded = roundTo(t, 1);
      out.text(',"tscore":');
      out.number(rounded);
      out.text(',"tscore_interpretation":');
      out.quoted(tscoreBand(rounded));
    }
  }
  // At or above the cut-off the score needs attention; a severe total is
  // not an alarm (Kroenke & Spitzer 2002: treatment, not an urgent signal).
  if (total >= CUTOFF) out.text(',"status":"attention"');
  out.push(0x7d);
}

function writeMissing(out: Bytes, n: i32): void {
  const missing = new StaticArray<bool>(9);
  for (let i = 0; i < n; i++) missing[i] = !answered[i];
  out.text('{"missing_values":');
  writeKeys(out, missing, n);
  out.push(0x7d);
}

function score(out: Bytes): void {
  const n = phq8 ? PHQ8_COUNT : ITEMS.length;
  let count = 0;
  // f64's Sum starts from -0.0 (so that a sum of -0.0 stays -0.0).
  let sum: f64 = -0.0;
  for (let i = 0; i < n; i++) {
    if (answered[i]) {
      count++;
      sum += values[i];
    }
  }
  out.text('{"ok":{"scores":{"total":');
  if (phq8) {
    // The PHQ-8: every item answered, no proration, no t-score (the norm
    // is of the PHQ-9), no alarm or attention rule (Kroenke et al. 2009).
    if (count == n) writeTotal(out, sum, false);
    else writeMissing(out, n);
    out.text('},"alarm":null,"attention":null,"completion":');
  } else {
    if (count >= MIN_ANSWERED) {
      // All answered: the sum. One or two missing: the mean of the
      // answered items × 9 (Arrieta et al. 2017), rounded to a whole
      // point, halves up (the rounding is the service's).
      const raw = count == n ? sum : (sum / <f64>count) * <f64>n;
      writeTotal(out, roundTo(raw, 0), true);
    } else {
      writeMissing(out, n);
    }
    // Item 9 above "not at all" raises the alarm (PHQ instruction
    // manual); item 9 unanswered is listed in attention (the service's
    // rule: a skipped suicidality item must not read as "not at all").
    const alarm = answered[8] && values[8] > 0;
    out.text(alarm ? '},"alarm":["v_9"]' : '},"alarm":[]');
    out.text(answered[8] ? ',"attention":[]' : ',"attention":["v_9"]');
    out.text(',"completion":');
  }
  out.number(<f64>count / <f64>n);
  out.text("}}");
}

export function outcomes_call(ptr: usize, len: i32): i64 {
  const r = new Reader(ptr, <usize>len);
  r.object(key, readInputField);
  r.finish();
  const out = new Bytes();
  if (failure.length > 0) {
    out.text('{"error":{"message":"input does not match the contract: ');
    // The reader's messages are its own ASCII text; one may name a quote.
    for (let i = 0; i < failure.length; i++) {
      const c = failure.charCodeAt(i);
      if (c == 0x22 || c == 0x5c) out.push(0x5c);
      out.push(<u8>c);
    }
    out.text('"}}');
  } else {
    score(out);
  }
  return out.packed();
}
