// The ES module entry loads the same binding as CommonJS and gives llama.cpp's stream.
import test from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

import nucleus, { Sampler } from 'nucleus-sampler'

const require = createRequire(import.meta.url)
const { inputLogits, recorded, CHAIN_PARAMS } = require('./vectors.cjs')

test('ESM import: named and default exports, same stream as llama.cpp', () => {
  assert.equal(nucleus.Sampler, Sampler)
  assert.equal(require('..').Sampler, Sampler)
  const ch = recorded('chain_default')
  const logits = inputLogits(ch.input)
  const s = new Sampler(logits.length, CHAIN_PARAMS.chain_default)
  assert.deepEqual(Array.from({ length: ch.steps }, () => s.sample(logits)), ch.selected_tokens)
})
