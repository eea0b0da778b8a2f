#!/usr/bin/env node
// The node half of make_sentencepiece_fixture.sh (run that, not this), in three commands:
//   corpus              the seeded training corpus, on stdout;
//   rules               a subset of spm's nmt_nfkc rules (spm_normalize --decompile TSV on stdin)
//                       small enough for the fixture: the model stays a few KB;
//   expected <folder>   <folder>/spiece.model encoded by HF's Rust tokenizers (node binding) as
//                       transformers' XLNetConverter + XLNetTokenizerFast set them up, for every case
//                       of cases.json, written to <folder>/expected.json.
'use strict';

const fs = require('fs');
const path = require('path');
const tk = require('tokenizers');

const TOKENIZERS_VERSION = require('tokenizers/package.json').version;
const CASES = JSON.parse(fs.readFileSync(path.join(__dirname, 'cases.json'), 'utf8')).cases;
const MADE_BY = `HF tokenizers ${TOKENIZERS_VERSION} (node binding), XLNetConverter-equivalent pipeline, ` +
  'via scripts/hf_tokenizer_fixtures/make_sentencepiece_fixture.sh';

// --- corpus ----------------------------------------------------------------------------------------

// mulberry32: a tiny seeded generator, so the corpus (and so the model) never changes.
function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STEMS = `the a and or but of to in on at for with from by about into over after before under
this that these those it he she they we you who what which when where how is are was were be been
have has had do does did will would can could should may might must not no very really again only
movie film story plot actor director scene character music ending performance camera script review
season episode series show drama comedy thriller horror romance documentary animation sequel screen
good great bad terrible awful excellent wonderful beautiful boring funny sad long short slow fast
interesting brilliant stunning weak strong predictable surprising original classic modern simple
love hate like enjoy watch see think feel make take give find know tell play work try recommend
time year day night people man woman child family friend world life way thing part place end home
ship sea ocean river mountain forest island road train car plane war peace history future book
believe understand appoint entertain whelm mark establish fragile text token length pair review
leading trailing space tab line mix price deal shop limit today number symbol quote single letter
width control case word accent compose first second last tiny both fair here also maximum allow
anyone film cafe naive resume facade school street zero`.split(/\s+/);

const PREFIXES = ['un', 're', 'dis', 'over', 'under', 'pre', 'anti', 'super', 'mis', 'non'];
const SUFFIXES = ['s', 'ed', 'ing', 'ly', 'er', 'est', 'ness', 'able', 'ment', 'ful', 'less', 'ism', 'ist', 'ity'];
const CONTRACTIONS = ["don't", "won't", "it's", "we're", "y'all", "I'd", "can't", "she'll", "they've", "isn't"];
const EXTRAS = ['café', 'naïve', 'résumé', 'Ångström', 'über', 'straße', 'İstanbul', 'École', '中文', '日本語',
  'ＡＢＣ', 'ﬁne', '©', '®', '™', '—', '“', '”', '‘', '’', '«', '»', '😀', '…', '£', '€', '–'];
const AFTER = [',', '.', '!', '?', ';', ':', '...', ')', '"', "'", "''"];
const BEFORE = ['(', '"', "'", '[', '{', '#', '@', '$', '-', '``'];

function makeCorpus(random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const int = (n) => Math.floor(random() * n);
  const number = () => {
    const r = random();
    if (r < 0.3) return String(int(100));
    if (r < 0.5) return int(1000) + ',' + String(int(1000)).padStart(3, '0');
    if (r < 0.7) return `${int(10)}.${int(100)}`;
    if (r < 0.85) return `${int(100)}%`;
    return `$${int(100)}.${String(int(100)).padStart(2, '0')}`;
  };
  const word = () => {
    const r = random();
    let w = pick(STEMS);
    if (r < 0.15) w = pick(PREFIXES) + w;
    if (r > 0.6) w += pick(SUFFIXES);
    if (r > 0.93) return pick(CONTRACTIONS);
    // Numbers are often followed by a comma ("In 1999, ...", "5, 10, 15"): with split_by_number
    // off, pieces such as "5," form, which XLNetConverter scores down.
    if (r > 0.90) return number() + (random() < 0.5 ? ',' : '');
    if (r > 0.88) return pick(EXTRAS);
    return w;
  };
  const decorate = (w) => {
    const r = random();
    if (r < 0.04) return w.toUpperCase();
    if (r < 0.12) return w[0].toUpperCase() + w.slice(1);
    if (r < 0.15) return pick(BEFORE) + w;
    if (r < 0.28) return w + pick(AFTER);
    return w;
  };
  const lines = [];
  for (let i = 0; i < 6000; ++i) {
    const words = [];
    for (let j = 0, n = 4 + int(16); j < n; ++j) words.push(decorate(word()));
    words[0] = words[0][0].toUpperCase() + words[0].slice(1);
    lines.push(words.join(' ') + pick(['.', '.', '!', '?', '']));
  }
  return lines.join('\n') + '\n';
}

// --- rules -----------------------------------------------------------------------------------------
// nmt_nfkc compiles to ~200 KB. Kept: the single-character rules of the blocks the cases touch
// (controls and spaces, Latin, Greek, punctuation, letterlike and number forms, CJK punctuation,
// ligatures, variation selectors, BOM, fullwidth forms) and Latin letter + combining mark.

const RULE_BLOCKS = [[0x0000, 0x024f], [0x0300, 0x036f], [0x0370, 0x03ff], [0x2000, 0x218f], [0x2460, 0x24ff],
  [0x3000, 0x303f], [0xfb00, 0xfb4f], [0xfe00, 0xfe0f], [0xfeff, 0xfeff], [0xff00, 0xffef]];

function keepRule(source) {
  const inBlocks = (c) => RULE_BLOCKS.some(([low, high]) => c >= low && c <= high);
  if (source.length === 1) return inBlocks(source[0]);
  return source.length === 2 && source[0] < 0x250 && source[1] >= 0x300 && source[1] <= 0x36f;
}

function filterRules(tsv) {
  return tsv.split('\n').filter((line) => {
    if (!line) return false;
    const source = line.split('\t')[0].split(' ').map((hex) => parseInt(hex, 16));
    return keepRule(source);
  }).join('\n') + '\n';
}

// --- expected --------------------------------------------------------------------------------------

// The ModelProto fields the converter reads, with a minimal protobuf wire-format reader.
function* protoFields(bytes) {
  let pos = 0;
  const varint = () => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[pos++];
      value |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
  };
  while (pos < bytes.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) yield { field, value: varint() };
    else if (wire === 1) { yield { field, bytes: bytes.subarray(pos, pos + 8) }; pos += 8; }
    else if (wire === 5) { yield { field, bytes: bytes.subarray(pos, pos + 4) }; pos += 4; }
    else if (wire === 2) {
      const size = Number(varint());
      yield { field, bytes: bytes.subarray(pos, pos + size) };
      pos += size;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const PIECE_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 };

function readModel(file) {
  const model = { pieces: [], unkId: 0, modelType: 1, charsmap: Buffer.alloc(0) };
  for (const f of protoFields(fs.readFileSync(file))) {
    if (f.field === 1) {
      const piece = { piece: '', score: 0, type: PIECE_TYPE.NORMAL };
      for (const p of protoFields(f.bytes)) {
        if (p.field === 1) piece.piece = Buffer.from(p.bytes).toString('utf8');
        if (p.field === 2) piece.score = Buffer.from(p.bytes).readFloatLE(0);
        if (p.field === 3) piece.type = Number(p.value);
      }
      model.pieces.push(piece);
    } else if (f.field === 2) {
      for (const t of protoFields(f.bytes)) {
        if (t.field === 3) model.modelType = Number(t.value);
        if (t.field === 40) model.unkId = Number(t.value);
      }
    } else if (f.field === 3) {
      for (const n of protoFields(f.bytes)) if (n.field === 2) model.charsmap = Buffer.from(n.bytes);
    }
  }
  return model;
}

// Python's str.isdigit on one character, for the ones a small model can hold.
const isDigit = (c) => /\p{Nd}/u.test(c) || '²³¹⁰⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉'.includes(c);
// convert_slow_tokenizer.check_number_comma: false for a piece ending in digit + ",".
function checkNumberComma(piece) {
  const chars = [...piece];
  return chars.length < 2 || chars[chars.length - 1] !== ',' || !isDigit(chars[chars.length - 2]);
}

// XLNetTokenizer's special tokens; transformers marks them special (and gives <mask> lstrip).
const XLNET_SPECIALS = ['<s>', '</s>', '<unk>', '<sep>', '<pad>', '<cls>', '<mask>', '<eop>', '<eod>'];

// tokenizer.json as transformers writes it for XLNetTokenizerFast converted from this spiece.model
// (XLNet's defaults: keep_accents=False, do_lower_case=False).
function xlnetTokenizerJson(model, { keepAccents = false, doLowerCase = false } = {}) {
  if (model.modelType !== 1) throw new Error('XLNetConverter needs a unigram model');
  const id = (piece) => model.pieces.findIndex((p) => p.piece === piece);
  // SpmConverter.tokenizer: control (type 3) and user-defined (type 4) pieces become AddedTokens,
  // normalized=False; then XLNetTokenizerFast's special tokens, <mask> with lstrip=True.
  const added = model.pieces
    .map((p, i) => ({ p, i }))
    .filter(({ p }) => p.type === PIECE_TYPE.CONTROL || p.type === PIECE_TYPE.USER_DEFINED || p.piece === '<unk>')
    .map(({ p, i }) => ({
      id: i, content: p.piece, single_word: false, lstrip: p.piece === '<mask>', rstrip: false, normalized: false,
      special: p.type === PIECE_TYPE.CONTROL || XLNET_SPECIALS.includes(p.piece),
    }));
  const normalizers = [
    { type: 'Replace', pattern: { String: '``' }, content: '"' },
    { type: 'Replace', pattern: { String: "''" }, content: '"' },
  ];
  if (!keepAccents) normalizers.push({ type: 'NFKD' }, { type: 'StripAccents' });
  if (doLowerCase) normalizers.push({ type: 'Lowercase' });
  if (model.charsmap.length) normalizers.push({ type: 'Precompiled', precompiled_charsmap: model.charsmap.toString('base64') });
  normalizers.push({ type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' });
  const special = (piece) => ({ id: piece, ids: [id(piece)], tokens: [piece] });
  const seq = (name, typeId) => ({ Sequence: { id: name, type_id: typeId } });
  const tok = (name, typeId) => ({ SpecialToken: { id: name, type_id: typeId } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'Sequence', normalizers },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [seq('A', 0), tok('<sep>', 0), tok('<cls>', 2)],
      pair: [seq('A', 0), tok('<sep>', 0), seq('B', 1), tok('<sep>', 1), tok('<cls>', 2)],
      special_tokens: { '<sep>': special('<sep>'), '<cls>': special('<cls>') },
    },
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: {
      type: 'Unigram',
      unk_id: model.unkId,
      vocab: model.pieces.map((p) => [p.piece, checkNumberComma(p.piece) ? p.score : p.score - 100]),
      byte_fallback: false,
    },
  };
}

// transformers' tokenizer(text, pair, truncation=True, max_length=n): longest_first, right side.
async function encodeCases(tokenizer) {
  const results = [];
  for (const c of CASES) {
    const pair = c.pair === undefined ? null : c.pair;
    const maxLength = c.max_length || 0;
    tokenizer.disableTruncation();
    const plain = await tokenizer.encode(c.text, null, { addSpecialTokens: false });
    if (maxLength > 0) tokenizer.setTruncation(maxLength, { strategy: 'LongestFirst', direction: 'right', stride: 0 });
    const full = pair === null ? await tokenizer.encode(c.text) : await tokenizer.encode(c.text, pair);
    results.push({
      text: c.text, pair, max_length: maxLength,
      tokens: plain.getTokens(), input_ids: full.getIds(), token_type_ids: full.getTypeIds(),
    });
  }
  tokenizer.disableTruncation();
  return results;
}

async function writeExpected(folder) {
  const model = readModel(path.join(folder, 'spiece.model'));
  const tokenizer = tk.Tokenizer.fromString(JSON.stringify(xlnetTokenizerJson(model)));
  const expected = {
    made_by: MADE_BY,
    kind: 'sentencepiece',
    options: { lowercase: false, strip_accents: true, add_prefix_space: false },
    files: { vocab: 'spiece.model', merges: null },
    cases: await encodeCases(tokenizer),
  };
  fs.writeFileSync(path.join(folder, 'expected.json'), JSON.stringify(expected, null, 1) + '\n');
}

async function main() {
  const [command, folder] = process.argv.slice(2);
  if (command === 'corpus') process.stdout.write(makeCorpus(seededRandom(20240612)));
  else if (command === 'rules') process.stdout.write(filterRules(fs.readFileSync(0, 'utf8')));
  else if (command === 'expected' && folder) await writeExpected(folder);
  else throw new Error('usage: make_sentencepiece_fixture.js corpus | rules < nmt_nfkc.tsv | expected <folder>');
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { readModel, xlnetTokenizerJson };
