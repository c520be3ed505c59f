// The repository's llama.cpp sampling vectors (testdata/vectors/llama-test-sampling.json)
// and the common_params_sampling values that build each recorded chain.
const fs = require('node:fs')
const path = require('node:path')

const file = path.join(__dirname, '..', '..', 'testdata', 'vectors', 'llama-test-sampling.json')
const vectors = JSON.parse(fs.readFileSync(file, 'utf8'))

const num = (x) => (x === '-inf' ? -Infinity : x === 'inf' ? Infinity : x)

/** derived_reference.inputs.generator: a 32-bit LCG, logits in [-10, 10) in 0.001 steps. */
function generatedLogits(seed, n) {
  const out = new Float32Array(n)
  let x = seed >>> 0
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    out[i] = Math.fround(Math.fround(((x >>> 8) % 20000)) / 1000) - 10
  }
  return out
}

function inputLogits(name) {
  if (name === 'logits_4096_seed11') return generatedLogits(11, 4096)
  return Float32Array.from(vectors.derived_reference.inputs[name].values.map(num))
}

function recorded(id) {
  const ch = vectors.derived_reference.chains.find((c) => c.id === id)
  if (!ch) throw new Error(`no recorded chain ${id}`)
  return ch
}

// camelCase here; the snake_case spelling is exercised by the tests too. chain_dry is absent:
// its breakers are token ids, which a sampler without a vocabulary cannot express.
const CHAIN_PARAMS = {
  chain_default: { seed: 1234 },
  chain_penalties: {
    seed: 1234,
    penaltyRepeat: 1.1,
    penaltyFreq: 0.1,
    penaltyPresent: 0.2,
    samplers: ['penalties', 'top_k', 'top_p', 'min_p', 'temperature'],
  },
  chain_dynatemp: { seed: 42, topK: 0, topP: 0.9, minP: 0.02, minKeep: 1, temp: 1.0, dynatempRange: 0.5, samplers: 'kpmt' },
  chain_xtc: { seed: 42, topK: 40, xtcProbability: 0.5, xtcThreshold: 0.05, minKeep: 1, samplers: 'top_k;xtc' },
  chain_topnsigma: { seed: 7, topNSigma: 1.0, samplers: ['top_n_sigma'] },
  chain_typical: { seed: 7, typP: 0.9, minKeep: 1, samplers: ['typ_p'] },
  chain_mirostat1: { seed: 42, mirostat: 1, mirostatTau: 5.0, mirostatEta: 0.1, temp: 1.0 },
  chain_mirostat2: { seed: 42, mirostat: 2, mirostatTau: 5.0, mirostatEta: 0.1, temp: 0.8 },
  chain_adaptive_p: { seed: 42, minP: 0.05, minKeep: 1, adaptiveTarget: 0.3, adaptiveDecay: 0.9, samplers: ['min_p', 'adaptive_p'] },
  chain_adaptive_p_disabled: {
    seed: 42,
    minP: 0.05,
    minKeep: 1,
    adaptiveTarget: -1.0,
    adaptiveDecay: 0.9,
    samplers: ['min_p', 'adaptive_p'],
  },
  chain_logit_bias: { seed: 9, topK: 40, logitBias: { 5: 3.0, 17: -Infinity, 200: 1.5 }, samplers: ['top_k'] },
}

module.exports = { vectors, inputLogits, recorded, CHAIN_PARAMS }
