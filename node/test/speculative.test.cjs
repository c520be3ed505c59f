// Speculative decoding through generate's `speculative` option on the real SmolLM2: a greedy and
// a seeded sampled generation give the same tokens and text with and without it, greedy drafts
// on a repetitive prompt are accepted, and bad values throw naming the field (the server's words).
const test = require('node:test')
const assert = require('node:assert/strict')

const { Model } = require('..')

// A prompt the model copies from: its greedy continuation repeats the pattern.
const REPETITIVE =
  'Monday, Tuesday, Wednesday, Thursday, Friday.\nMonday, Tuesday, Wednesday, Thursday, Friday.\n' +
  'Monday, Tuesday, Wednesday, Thursday, Friday.\nMonday,'
let model
const getModel = () => (model ??= new Model('smollm2'))

async function run(options) {
  const g = getModel().generate(REPETITIVE, { maxTokens: 40, ...options })
  const tokens = []
  for await (const t of g) tokens.push(t)
  return { tokens, stats: g.speculative }
}

for (const params of [{ temp: 0 }, { seed: 42 }, { seed: 7, temp: 1, topK: 0, topP: 1, minP: 0 }]) {
  test(`same tokens with and without speculation: ${JSON.stringify(params)}`, async () => {
    const plain = await run(params)
    assert.equal(plain.stats, null)
    for (const speculative of [{ type: 'ngram', draftMax: 8 }, {}, { ngram_size_n: 2 }]) {
      const spec = await run({ ...params, speculative })
      assert.deepEqual(spec.tokens, plain.tokens, JSON.stringify(speculative))
      const s = spec.stats
      assert.deepEqual(Object.keys(s).sort(), ['acceptanceRate', 'accepted', 'drafted', 'passesSaved', 'verifyPasses'])
      assert.ok(s.passesSaved === s.accepted && s.accepted <= s.drafted)
      assert.equal(s.acceptanceRate, s.drafted ? s.accepted / s.drafted : 0)
      if (params.temp === 0) assert.ok(s.accepted > 0 && s.verifyPasses > 0, JSON.stringify(s))
    }
  })
}

test('speculation off by type or null', async () => {
  assert.equal((await run({ temp: 0, maxTokens: 8, speculative: { type: 'none' } })).stats, null)
  assert.equal((await run({ temp: 0, maxTokens: 8, speculative: null })).stats, null)
})

test('bad speculative values throw naming their field', () => {
  const m = getModel()
  const cases = [
    [{ draftMax: 0 }, 'speculative.draft_max'],
    [{ draft_max: 257 }, 'speculative.draft_max'],
    [{ draftMin: -1 }, 'speculative.draft_min'],
    [{ ngramSizeN: 1.5 }, 'speculative.ngram_size_n'],
    [{ draftMax: '8' }, 'speculative.draft_max'],
    [{ draftMin: 9, draftMax: 4 }, 'speculative.draft_min'],
    [{ type: 'medusa' }, 'speculative.type'],
    [{ type: 'draft' }, 'speculative.type'],
    [{ draftMx: 4 }, 'speculative.draft_mx'],
  ]
  for (const [speculative, field] of cases) {
    assert.throws(() => m.generate(REPETITIVE, { speculative }), (e) => e.message.includes(`'${field}'`), field)
  }
  assert.throws(() => m.generate(REPETITIVE, { speculative: 'ngram' }), /Invalid type for 'speculative': expected an object\./)
  assert.throws(
    () => m.generate(REPETITIVE, { speculative: { draftMax: 300 } }),
    (e) => e.message === "Invalid 'speculative.draft_max': integer above maximum value. Expected a value <= 256, but got 300 instead.",
  )
})
