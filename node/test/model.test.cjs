// Model: a real SmolLM2 generation through the async iterator, token for token the same as
// `nucleus generate`, with the event loop ticking while the model decodes.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const { Model, TokenTrie } = require('..')

const PROMPT = 'The capital of France is'
let model
const getModel = () => (model ??= new Model('smollm2'))

test('generate: same tokens as nucleus generate, event loop keeps ticking', async () => {
  const m = getModel()
  let ticks = 0
  const timer = setInterval(() => ticks++, 1)
  const got = []
  for await (const t of m.generate(PROMPT, { maxTokens: 16, seed: 42 })) got.push(t)
  clearInterval(timer)
  assert.equal(got.length, 16)
  assert.ok(ticks > 3, `the event loop ticked ${ticks} times during the generation`)
  const target = process.env.CARGO_TARGET_DIR || path.join(__dirname, '..', '..', 'target')
  const cli = path.join(target, 'release', 'nucleus')
  // The comparison is the point of this test: a missing binary is a failure, not a skip.
  assert.ok(fs.existsSync(cli), `${cli} is missing: build it with \`cargo build --release -p nucleus\` (the README's test command does)`)
  const out = execFileSync(cli, ['generate', '-p', PROMPT, '-n', '16', '--seed', '42', '-t', '1', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  // The last line is the {"done": ...} summary.
  const want = out.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)).filter((w) => !('done' in w))
  assert.deepEqual(got.map((t) => t.token), want.map((w) => w.id))
  assert.equal(got.map((t) => t.text).join(''), want.map((w) => w.text).join(''))
})

test('chat prompt, stop strings, early exit, tokenizer, errors', async () => {
  const m = getModel()
  let text = ''
  for await (const t of m.generate([{ role: 'user', content: 'Name three colors.' }], { maxTokens: 32, seed: 42, temp: 0, stop: ['\n'] })) {
    text += t.text
  }
  assert.ok(text.length > 0 && !text.includes('\n'))
  let n = 0
  for await (const _ of m.generate(PROMPT, { maxTokens: 200, seed: 3 })) if (++n === 2) break
  assert.equal(n, 2)
  const ids = m.tokenize('Hello world', false)
  assert.equal(m.detokenize(ids), 'Hello world')
  assert.throws(() => m.generate(PROMPT, { topP: 2 }), /top_p/)
  assert.throws(() => m.generate(42), /prompt/)
})

const LEAVES = [' Paris', ' a city in Europe', ' the city of lights', ' London']

/** A token-trie descriptor for SmolLM2 whose leaves are `words` (no leaf a prefix of another). */
function trieDescriptor(m, words = LEAVES) {
  const leaves = words.map((w) => ({ name: w.trim(), tokens: m.tokenize(w, false) }))
  return { descriptor: { modelId: m.modelId, descriptors: [{ path: 'answer', leaves }] }, leaves }
}

const tokensOf = async (gen) => {
  const out = []
  for await (const t of gen) out.push(t.token)
  return out
}

test('setTokenTrie: a generation is exactly one leaf; clearTokenTrie: unconstrained again', async () => {
  const m = getModel()
  assert.equal(m.modelId, 'smollm2')
  const free = await tokensOf(m.generate(PROMPT, { maxTokens: 8, seed: 42 }))
  const { descriptor, leaves } = trieDescriptor(m)
  const isLeaf = (toks) => leaves.some((l) => JSON.stringify(l.tokens) === JSON.stringify(toks))
  m.setTokenTrie(new TokenTrie(descriptor))
  try {
    const got = await tokensOf(m.generate(PROMPT, { maxTokens: 32, seed: 42 }))
    assert.ok(isLeaf(got), `greedy: ${got} is not a leaf`)
    const sampled = new TokenTrie(descriptor, 'sampled')
    for (const seed of [1, 2, 3]) {
      // per call, in place of the model's trie
      const toks = await tokensOf(m.generate(PROMPT, { maxTokens: 32, seed, temp: 1.5, tokenTrie: sampled }))
      assert.ok(isLeaf(toks), `sampled (seed ${seed}): ${toks} is not a leaf`)
    }
  } finally {
    m.clearTokenTrie()
  }
  assert.deepEqual(await tokensOf(m.generate(PROMPT, { maxTokens: 8, seed: 42 })), free)
  // The multi-token leaf is forced after its first token: its text comes out whole.
  const only = new TokenTrie(trieDescriptor(m, [' the city of lights']).descriptor)
  let text = ''
  for await (const t of m.generate(PROMPT, { seed: 42, tokenTrie: only })) text += t.text
  assert.equal(text, ' the city of lights')
})

test('token trie errors', () => {
  const m = getModel()
  const { descriptor } = trieDescriptor(m)
  assert.throws(() => m.setTokenTrie(new TokenTrie({ ...descriptor, modelId: 'gemma3' })), /modelId/)
  const big = { modelId: 'smollm2', descriptors: [{ path: 'p', leaves: [{ name: 'x', tokens: [60000] }] }] }
  assert.throws(() => m.setTokenTrie(new TokenTrie(big)), /outside the vocabulary/)
  assert.throws(() => m.generate(PROMPT, { tokenTrie: { descriptor } }), /tokenTrie.*TokenTrie/)
})
