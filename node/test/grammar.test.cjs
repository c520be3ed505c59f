// Grammar / TokenTrie: llama.cpp's grammar vectors through the Int32Array bitmask, the bitmask
// against the grammar's own token check, rollback and termination, the token-trie cases.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { Vocab, Grammar, TokenTrie } = require('..')

const vectors = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'testdata', 'vectors', 'llama-grammar.json'), 'utf8'))

// A byte-level vocabulary: token i < 256 is byte i, token 256 ends generation.
const EOG = 256
const byteVocab = new Vocab([...Array.from({ length: 256 }, (_, i) => Uint8Array.of(i)), new Uint8Array(0)], [EOG])

function allowedSet(g, nVocab) {
  const bm = new Int32Array(Math.ceil(nVocab / 32))
  g.fillNextTokenBitmask(bm)
  const out = new Set()
  for (let t = 0; t < nVocab; t++) if ((bm[t >>> 5] >>> (t & 31)) & 1) out.add(t)
  return out
}

function matchesThroughMasks(g, text) {
  g.reset()
  for (const b of Buffer.from(text, 'utf8')) {
    if (!allowedSet(g, 257).has(b)) {
      assert.equal(g.acceptToken(b), false, 'the mask refused a byte the grammar accepts')
      return false
    }
    assert.ok(g.acceptToken(b))
  }
  if (!allowedSet(g, 257).has(EOG)) return false
  assert.ok(g.acceptToken(EOG) && g.isTerminated())
  assert.equal(allowedSet(g, 257).size, 0)
  return true
}

const plain = (section) => vectors[section].filter((c) => [...c.passing, ...c.failing].every((x) => typeof x === 'string'))

test("llama.cpp's GBNF vectors through the bitmask", () => {
  const cases = plain('grammar_integration')
  assert.ok(cases.length >= 10)
  for (const c of cases) {
    const g = Grammar.fromGbnf(byteVocab, c.grammar)
    for (const s of c.passing) assert.ok(matchesThroughMasks(g, s), `${c.name}: should pass ${JSON.stringify(s)}`)
    for (const s of c.failing) assert.ok(!matchesThroughMasks(g, s), `${c.name}: should fail ${JSON.stringify(s)}`)
  }
})

test("llama.cpp's JSON Schema vectors through the bitmask (llama.cpp's converter)", () => {
  const cases = plain('schema_integration')
  assert.ok(cases.length >= 30)
  for (const c of cases) {
    const g = Grammar.fromJsonSchema(byteVocab, c.schema, true)
    for (const s of c.passing) assert.ok(matchesThroughMasks(g, s), `${c.name}: should pass ${JSON.stringify(s)}`)
    for (const s of c.failing) assert.ok(!matchesThroughMasks(g, s), `${c.name}: should fail ${JSON.stringify(s)}`)
  }
})

test('bitmask equals the allowed tokens and the per-token check; rollback restores', () => {
  const words = ['{"', '":', '",', '"}', 'name', 'age', '12', '345', '["', '"]', 'Al', 'ice', 'é']
  const pieces = [...Array.from({ length: 256 }, (_, i) => Uint8Array.of(i)), ...words, '</s>']
  const vocab = new Vocab(pieces, [pieces.length - 1])
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
    required: ['name', 'age'],
    additionalProperties: false,
  }
  const g = Grammar.fromJsonSchema(vocab, JSON.stringify(schema))
  const doc = ['{"', 'name', '":', '"', 'Al', 'ice', ' ', 'é', '",', '"', 'age', '":', '12', '345', '}']
  const ids = doc.map((p) => (p.length === 1 && p.charCodeAt(0) < 128 ? p.charCodeAt(0) : 256 + words.indexOf(p)))
  const masks = []
  const bm = new Int32Array(vocab.bitmaskWords * 2)
  for (const t of [...ids, pieces.length - 1]) {
    g.fillNextTokenBitmask(bm, 1)
    const got = []
    for (let x = 0; x < vocab.nVocab; x++) if ((bm[vocab.bitmaskWords + (x >>> 5)] >>> (x & 31)) & 1) got.push(x)
    assert.deepEqual(got, g.allowedTokens())
    assert.deepEqual(got, [...Array(vocab.nVocab).keys()].filter((x) => g.isAllowed(x)))
    assert.ok(got.includes(t), `token ${t}`)
    masks.push(got)
    assert.ok(g.acceptToken(t))
  }
  assert.ok(bm.subarray(0, vocab.bitmaskWords).every((w) => w === 0))
  assert.ok(g.isTerminated())
  assert.equal(g.acceptToken(ids[0]), false)
  g.rollback(3)
  assert.deepEqual(g.allowedTokens(), masks[masks.length - 3])
  assert.equal(g.numAccepted, ids.length - 2)
  assert.throws(() => g.rollback(100), /roll back/)
  g.reset()
  assert.deepEqual(g.allowedTokens(), masks[0])
  assert.throws(() => g.fillNextTokenBitmask(new Int32Array(3)), /words/)
  assert.throws(() => Grammar.fromGbnf(vocab, 'root ::= "a'), /line 1, column 12/)
  assert.throws(() => Grammar.fromJsonSchema(vocab, { properties: { x: { if: {} } } }), /if at #\/properties\/x/)
})

const descriptor = {
  modelId: 'toy',
  descriptors: [
    {
      path: 'action',
      leaves: [
        { name: 'THINK', tokens: [100, 101] },
        { name: 'TALK', tokens: [100, 102, 103, 104] },
        { name: 'STOP', tokens: [7] },
      ],
    },
  ],
}

test('token trie', () => {
  const t = new TokenTrie(descriptor, 'greedy', { nVocab: 200 })
  assert.deepEqual(t.allowed().sort((a, b) => a - b), [7, 100])
  assert.deepEqual(t.forced(), [])
  assert.equal(t.complete(), null)
  t.advance(100)
  assert.deepEqual(t.allowed().sort((a, b) => a - b), [101, 102])
  t.advance(102)
  assert.deepEqual(t.forced(), [103, 104])
  assert.throws(() => t.advance([103, 5]), /does not continue/)
  t.advance(t.forced())
  assert.equal(t.complete(), 'TALK')
  assert.ok(t.isFinished())
  const bm = new Int32Array(7)
  t.fillNextTokenBitmask(bm)
  assert.deepEqual(Array.from(bm), [-1, -1, -1, -1, -1, -1, 0xff]) // finished: everything allowed, padding bits clear
  t.reset()
  t.fillNextTokenBitmask(bm)
  assert.deepEqual(Array.from(bm), [1 << 7, 0, 0, 1 << 4, 0, 0, 0])
  const sampled = new TokenTrie(JSON.stringify(descriptor), 'sampled', { path: 'action', nVocab: 200 })
  assert.equal(sampled.allowed().length, 2)
  assert.equal(sampled.mode, 'sampled')
  assert.throws(() => new TokenTrie(descriptor, 'sampled', { modelId: 'other' }), /modelId/)
  assert.throws(() => new TokenTrie(descriptor, 'greedy', { nVocab: 50 }), /outside the vocabulary/)
  assert.throws(() => new TokenTrie(descriptor, 'greedy', { path: 'nope' }), /no descriptor/)
  assert.throws(() => new TokenTrie(descriptor, 'fast'), /mode/)
})

test('TokenTrie(descriptor, mode): the only path, nVocab from the largest id, greedy by default', () => {
  const t = new TokenTrie(descriptor)
  assert.deepEqual([t.path, t.mode, t.nVocab], ['action', 'greedy', 105])
  assert.deepEqual(t.allowed().sort((a, b) => a - b), [7, 100])
  assert.equal(new TokenTrie(descriptor, 'sampled').mode, 'sampled')
  const two = { ...descriptor, descriptors: [...descriptor.descriptors, { path: 'target', leaves: [{ name: 'ME', tokens: [9] }] }] }
  assert.throws(() => new TokenTrie(two), /2 paths \(action, target\).*path/)
  assert.deepEqual(new TokenTrie(two, 'greedy', { path: 'target' }).allowed(), [9])
})
