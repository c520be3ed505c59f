// Speculative decoding with a draft model: `new Model(path, { draftModel })` and generate's
// `speculative: { type: 'draft' }`. No larger model of SmolLM2's vocabulary ships on the
// registries, so SmolLM2 is its own draft: the tokens are those of plain decoding (greedy and a
// seeded sampled chain) and, greedy, every draft token is accepted, which proves the bookkeeping.
// The errors: a missing file, an unknown name, another vocabulary, `type: 'draft'` without a
// draft model, an unknown option.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')

const { Model } = require('..')

const PROMPT = 'Here is a list of fruits: apple, banana, cherry, date. Write it again, then add two more:'
let drafted
const getDrafted = () => (drafted ??= new Model('smollm2', { draftModel: 'smollm2' }))

async function run(model, options) {
  const g = model.generate(PROMPT, { maxTokens: 32, ...options })
  const tokens = []
  for await (const t of g) tokens.push(t)
  return { tokens, stats: g.speculative }
}

for (const params of [{ temp: 0 }, { seed: 42, temp: 0.9 }]) {
  test(`own draft gives the plain tokens: ${JSON.stringify(params)}`, async () => {
    const m = getDrafted()
    assert.equal(m.hasDraftModel, true)
    const plain = await run(m, params)
    assert.equal(plain.stats, null)
    for (const speculative of [{ type: 'draft', draftMax: 8 }, {}, { type: 'draft', draft_min: 2 }]) {
      const spec = await run(m, { ...params, speculative })
      assert.deepEqual(spec.tokens, plain.tokens, JSON.stringify(speculative))
      const s = spec.stats
      assert.ok(s.drafted > 0 && s.passesSaved === s.accepted && s.accepted <= s.drafted, JSON.stringify(s))
      if (params.temp === 0) {
        // The draft model is the model: its greedy proposals are the greedy tokens.
        assert.ok(s.accepted === s.drafted && s.acceptanceRate === 1, JSON.stringify(s))
        assert.ok(s.verifyPasses < plain.tokens.length / 2, JSON.stringify(s))
      }
    }
    // n-gram drafts still work beside a draft model.
    const ngram = await run(m, { ...params, speculative: { type: 'ngram' } })
    assert.deepEqual(ngram.tokens, plain.tokens)
    assert.notEqual(ngram.stats, null)
  })
}

test('draft without a draft model is refused', () => {
  const m = new Model('smollm2')
  assert.equal(m.hasDraftModel, false)
  assert.throws(
    () => m.generate(PROMPT, { speculative: { type: 'draft' } }),
    (e) => e.message.startsWith("Invalid 'speculative.type': 'draft' needs a draft model"),
  )
})

test('bad draft models throw', () => {
  const missing = path.join(__dirname, '..', '..', 'no-such-draft.gguf')
  assert.throws(() => new Model('smollm2', { draftModel: missing }), /draftModel: model file .* does not exist/)
  assert.throws(() => new Model('smollm2', { draftModel: 'no-such-model-name' }), /draftModel: unknown model/)
  assert.throws(() => new Model('smollm2', { draftModel: 3 }), /`draftModel` must be a string/)
  assert.throws(() => new Model('smollm2', { draftModle: 'smollm2' }), /unknown option `draft_modle`/)
})

test('a draft model of another vocabulary is refused', (t) => {
  try {
    new Model('smollm2', { draftModel: 'gemma3' })
  } catch (e) {
    if (/not downloaded/.test(e.message)) return t.skip('gemma3 is not pulled (nucleus pull gemma3)')
    assert.match(e.message, /vocabulary has 262144 tokens and the model's 49152/)
    return
  }
  assert.fail('gemma3 was accepted as a draft model for smollm2')
})
