#!/usr/bin/env node
// Makes the WordPiece (BERT, cased and uncased) and byte-level BPE (RoBERTa) parity fixtures in
// tests/data/tokenizers/ with HF's Rust `tokenizers` through its official node binding:
//   1. a seeded, English-ish corpus (accents, punctuation, digits, CJK, contractions);
//   2. tiny vocabularies trained on it by HF's own trainers;
//   3. the tokenizers configured as the hub's tokenizer.json files for bert-base-uncased,
//      bert-base-cased and roberta-base configure them, loaded from the written vocab files;
//   4. every case of cases.json encoded, written to <folder>/expected.json.
// Run from this folder: `npm install && node make_wordpiece_bpe_fixtures.js [--retrain]`.
// The vocabulary files in the repository are kept (steps 1-2 are skipped) unless --retrain is
// given or they are missing: HF's WordPiece trainer breaks ties between equally frequent merges by
// the order of a randomly seeded hash map, so each training gives a different (equally valid)
// vocabulary. The byte-level BPE training is deterministic.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const tk = require('tokenizers');

const TOKENIZERS_VERSION = require('tokenizers/package.json').version;
const REPO_ROOT = path.resolve(__dirname, '..', '..');
const OUT_ROOT = path.join(REPO_ROOT, 'tests', 'data', 'tokenizers');
const RETRAIN = process.argv.includes('--retrain');
const CASES = JSON.parse(fs.readFileSync(path.join(__dirname, 'cases.json'), 'utf8')).cases;
const MADE_BY = `HF tokenizers ${TOKENIZERS_VERSION} (node binding) via scripts/hf_tokenizer_fixtures/make_wordpiece_bpe_fixtures.js`;

const VOCAB_SIZE = 1000;
const CORPUS_LINES = 3000;
const BERT_SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const ROBERTA_SPECIALS = ['<s>', '<pad>', '</s>', '<unk>', '<mask>'];

// --- 1. The corpus ---------------------------------------------------------------------------------

// mulberry32: a tiny seeded generator, so the corpus (and so the vocabularies) never change.
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

const WORDS = `the a an and or but of to in on at for with from by about as into over after before
under between through during without again very really quite too so not no yes this that these those
it its he she they we you i me him her them us my your his our their who what which when where why how
is are was were be been being have has had do does did will would can could should may might must
movie film story plot actor actress director scene scenes character characters music score ending
beginning performance performances camera script dialogue screen cinema theater audience critic review
reviews season episode series show drama comedy thriller horror romance documentary animation sequel
good great bad terrible awful excellent wonderful beautiful boring funny sad long short slow fast
interesting brilliant stunning weak strong predictable surprising original classic modern simple
dark bright young old new first last best worst better worse little big small huge entire whole
love loved hate hated like liked enjoy enjoyed watch watched see saw seen think thought feel felt
make made take took give gave find found know knew tell told play played work worked try tried
time times year years day days night people man woman men women child children family friend friends
world life way thing things part place end home house city town country water money book books
ship ships sea ocean river mountain forest island road train car plane war peace history future
reading writing running thinking working playing laughing crying waiting talking walking starting
unbelievable unfortunately understanding disappointing entertaining overwhelming remarkable
beautifully wonderfully surprisingly absolutely completely certainly probably definitely
everything everyone nothing something anything somebody nobody whatever however therefore
because although though while until since unless whether either neither both each every
one two three four five six seven eight nine ten hundred thousand million`.split(/\s+/);

const ACCENTED = `café naïve résumé façade Ångström über straße jalapeño São Paulo crème brûlée Zürich
Málaga Øresund déjà vu piñata Müller Gödel Dvořák Łódź Ærø fiancée coöperate señor niño Ελλάδα
μουσική Σωκράτης İstanbul Kraków Besançon Noël Chloë Renée Zoë élan rôle tête-à-tête`.split(/\s+/);

const NAMES = `Alice Bob Carol David Emma Frank Grace Henry Isabel Jack London Paris Tokyo Berlin Rome
Hollywood Netflix Oscar Monday Friday January December English French Spanish German`.split(/\s+/);

const CONTRACTIONS = `don't won't it's we're y'all I'd can't she'll they've isn't wasn't didn't
couldn't wouldn't shouldn't I'm you're he's that's there's let's`.split(/\s+/);

const CJK = `中文 日本語 电影 很好 你好 世界 故事 演员 音乐 非常 喜欢 字符 映画 東京 北京`.split(/\s+/);

const PUNCTUATION_AFTER = [',', '.', '!', '?', ';', ':', '...', '!!', '?!', ')', '"', "'"];
const PUNCTUATION_BEFORE = ['(', '"', "'", '[', '{', '#', '@', '$', '-'];
const SYMBOLS = ['&', '%', '/', '+', '=', '*', '—', '–', '©', '®', '™', '€', '£', '…', '“', '”', '«', '»', '<', '>', '|', '~', '^', '_'];

function makeCorpus(random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  const number = () => {
    const r = random();
    if (r < 0.3) return String(Math.floor(random() * 100));
    if (r < 0.5) return String(Math.floor(random() * 100000));
    if (r < 0.7) return `${Math.floor(random() * 100)}.${Math.floor(random() * 100)}`;
    if (r < 0.85) return `${Math.floor(random() * 100)}%`;
    return `$${Math.floor(random() * 1000)}.${String(Math.floor(random() * 100)).padStart(2, '0')}`;
  };
  const word = () => {
    const r = random();
    if (r < 0.72) return pick(WORDS);
    if (r < 0.78) return pick(ACCENTED);
    if (r < 0.83) return pick(NAMES);
    if (r < 0.88) return pick(CONTRACTIONS);
    if (r < 0.91) return pick(CJK);
    if (r < 0.96) return number();
    return pick(SYMBOLS);
  };
  const decorate = (w) => {
    const r = random();
    if (r < 0.04) return w.toUpperCase();
    if (r < 0.10) return w[0].toUpperCase() + w.slice(1);
    if (r < 0.13) return pick(PUNCTUATION_BEFORE) + w;
    if (r < 0.25) return w + pick(PUNCTUATION_AFTER);
    return w;
  };
  const lines = [];
  for (let i = 0; i < CORPUS_LINES; ++i) {
    const n = 4 + Math.floor(random() * 16);
    const words = [];
    for (let j = 0; j < n; ++j) words.push(decorate(word()));
    words[0] = words[0][0].toUpperCase() + words[0].slice(1);
    lines.push(words.join(random() < 0.03 ? '\t' : ' ') + pick(['.', '.', '.', '!', '?', '']));
  }
  return lines.join('\n') + '\n';
}

// --- 2. Training -------------------------------------------------------------------------------------
// The node binding trains only with a model's default trainer (vocab_size 30000, no special tokens,
// no initial alphabet). The settings the BERT and RoBERTa recipes give their trainers are applied to
// its result instead, which gives what a trainer set up so would: it puts the special tokens first,
// then the alphabet sorted by character, then one token per merge in merge order, and stops at
// vocab_size; the merges do not depend on characters the corpus never shows.

function trainedModel(tokenizer, corpusFile) {
  tokenizer.train([corpusFile]);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tbench-hf-')), 'tokenizer.json');
  tokenizer.save(file, false);
  return JSON.parse(fs.readFileSync(file, 'utf8')).model;
}

function tokensById(vocab) {
  return Object.entries(vocab).sort((x, y) => x[1] - y[1]).map(([token]) => token);
}

// BERT recipe: BertNormalizer, BertPreTokenizer, WordPiece trainer with the 5 special tokens first.
function trainWordPiece(corpusFile, lowercase) {
  const tokenizer = new tk.Tokenizer(tk.WordPiece.empty());
  tokenizer.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase }));
  tokenizer.setPreTokenizer(tk.bertPreTokenizer());
  const trained = tokensById(trainedModel(tokenizer, corpusFile).vocab);
  return BERT_SPECIALS.concat(trained.filter((t) => !BERT_SPECIALS.includes(t))).slice(0, VOCAB_SIZE);
}

// RoBERTa recipe: ByteLevel(add_prefix_space=false), BPE trainer with <s> <pad> </s> <unk> <mask>
// (ids 0..4) and the whole byte-level alphabet as initial alphabet.
function trainByteLevelBpe(corpusFile) {
  const tokenizer = new tk.Tokenizer(tk.BPE.empty());
  tokenizer.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
  const model = trainedModel(tokenizer, corpusFile);
  const merges = model.merges.map((m) => (Array.isArray(m) ? m : m.split(' ')));
  const alphabet = [...new Set(tk.byteLevelAlphabet())].sort((x, y) => x.codePointAt(0) - y.codePointAt(0));
  const tokens = ROBERTA_SPECIALS.concat(alphabet);
  const known = new Set(tokens);
  const keptMerges = [];
  for (const [left, right] of merges) {
    if (tokens.length >= VOCAB_SIZE) break;
    keptMerges.push([left, right]);
    if (!known.has(left + right)) {
      known.add(left + right);
      tokens.push(left + right);
    }
  }
  return { tokens, merges: keptMerges };
}

// --- 3. The hub's tokenizer.json configurations ----------------------------------------------------

function addedToken(content, id, lstrip = false) {
  return { id, content, single_word: false, lstrip, rstrip: false, normalized: false, special: true };
}

function asVocab(tokens) {
  return Object.fromEntries(tokens.map((t, id) => [t, id]));
}

// bert-base-uncased / bert-base-cased: strip_accents null (follows lowercase).
function bertTokenizerJson(tokens, lowercase) {
  const id = (t) => tokens.indexOf(t);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: BERT_SPECIALS.map((t) => addedToken(t, id(t))),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', id('[SEP]')], cls: ['[CLS]', id('[CLS]')] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: asVocab(tokens) },
  };
}

// roberta-base: <mask> strips the space on its left (lstrip), as the hub's file says.
function robertaTokenizerJson(tokens, merges) {
  const id = (t) => tokens.indexOf(t);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: ROBERTA_SPECIALS.map((t) => addedToken(t, id(t), t === '<mask>')),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', id('</s>')], cls: ['<s>', id('<s>')], trim_offsets: true, add_prefix_space: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: asVocab(tokens), merges,
    },
  };
}

// --- 4. Files and expected encodings ----------------------------------------------------------------

// A vocab.json as HF writes one: tokens in id order, non-ASCII as \u escapes (Python's
// json.dumps(ensure_ascii=True)).
function vocabJson(tokens) {
  const entries = tokens.map((token, id) => `${JSON.stringify(token)}:${id}`).join(',');
  return `{${entries}}`.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function readVocabTxt(file) {
  return fs.readFileSync(file, 'utf8').split('\n').slice(0, -1);
}

function readBpeFiles(vocabFile, mergesFile) {
  const vocab = JSON.parse(fs.readFileSync(vocabFile, 'utf8'));
  const merges = fs.readFileSync(mergesFile, 'utf8').split('\n').slice(1).filter((l) => l !== '').map((l) => l.split(' '));
  return { tokens: tokensById(vocab), merges };
}

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
      text: c.text,
      pair,
      max_length: maxLength,
      tokens: plain.getTokens(),
      input_ids: full.getIds(),
      token_type_ids: full.getTypeIds(),
    });
  }
  tokenizer.disableTruncation();
  return results;
}

function writeExpected(folder, kind, options, files, cases) {
  const expected = { made_by: MADE_BY, kind, options, files, cases };
  fs.writeFileSync(path.join(folder, 'expected.json'), JSON.stringify(expected, null, 1) + '\n');
}

async function makeWordPieceFixture(corpus, lowercase) {
  const folder = path.join(OUT_ROOT, lowercase ? 'wordpiece-uncased' : 'wordpiece-cased');
  fs.mkdirSync(folder, { recursive: true });
  const vocabFile = path.join(folder, 'vocab.txt');
  if (RETRAIN || !fs.existsSync(vocabFile)) {
    fs.writeFileSync(vocabFile, trainWordPiece(corpus(), lowercase).join('\n') + '\n');
  }
  // Encode with what was written, as tbench will read it.
  const tokenizer = tk.Tokenizer.fromString(JSON.stringify(bertTokenizerJson(readVocabTxt(vocabFile), lowercase)));
  const cases = await encodeCases(tokenizer);
  writeExpected(folder, 'wordpiece', { lowercase, strip_accents: null, add_prefix_space: false },
                { vocab: 'vocab.txt', merges: null }, cases);
  return folder;
}

async function makeByteLevelBpeFixture(corpus) {
  const folder = path.join(OUT_ROOT, 'bpe');
  fs.mkdirSync(folder, { recursive: true });
  const vocabFile = path.join(folder, 'vocab.json');
  const mergesFile = path.join(folder, 'merges.txt');
  if (RETRAIN || !fs.existsSync(vocabFile) || !fs.existsSync(mergesFile)) {
    const { tokens, merges } = trainByteLevelBpe(corpus());
    fs.writeFileSync(vocabFile, vocabJson(tokens));
    fs.writeFileSync(mergesFile, '#version: 0.2\n' + merges.map((m) => m.join(' ')).join('\n') + '\n');
  }
  const written = readBpeFiles(vocabFile, mergesFile);
  const tokenizer = tk.Tokenizer.fromString(JSON.stringify(robertaTokenizerJson(written.tokens, written.merges)));
  const cases = await encodeCases(tokenizer);
  writeExpected(folder, 'bpe', { lowercase: false, strip_accents: null, add_prefix_space: false },
                { vocab: 'vocab.json', merges: 'merges.txt' }, cases);
  return folder;
}

async function main() {
  let corpusFile = null;  // written on first use: only a training needs it
  const corpus = () => {
    if (!corpusFile) {
      corpusFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tbench-corpus-')), 'corpus.txt');
      fs.writeFileSync(corpusFile, makeCorpus(seededRandom(20240611)));
    }
    return corpusFile;
  };
  const folders = [
    await makeWordPieceFixture(corpus, true),
    await makeWordPieceFixture(corpus, false),
    await makeByteLevelBpeFixture(corpus),
  ];
  for (const folder of folders) console.log(`wrote ${path.relative(REPO_ROOT, folder)}/ (${CASES.length} cases)`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
