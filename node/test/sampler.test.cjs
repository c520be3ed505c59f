// Sampler (CommonJS) against llama.cpp's recorded token streams, bit for bit, and the binding's
// own contract: parameter names and errors, arrays read in place, lastProbs and statistics.
const test = require('node:test')
const assert = require('node:assert/strict')

const { Sampler, sampleBatch } = require('..')
const { vectors, inputLogits, recorded, CHAIN_PARAMS } = require('./vectors.cjs')

const snake = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase()), v]))

for (const id of Object.keys(CHAIN_PARAMS).sort()) {
  test(`recorded chain ${id} bit for bit (camelCase and snake_case)`, () => {
    const ch = recorded(id)
    const logits = inputLogits(ch.input)
    for (const params of [CHAIN_PARAMS[id], snake(CHAIN_PARAMS[id])]) {
      const s = new Sampler(logits.length, params)
      const got = Array.from({ length: ch.steps }, () => s.sample(logits))
      assert.deepEqual(got, ch.selected_tokens)
    }
  })

  test(`recorded chain ${id}: clone continues, reset replays`, () => {
    const ch = recorded(id)
    const logits = inputLogits(ch.input)
    const half = ch.steps >> 1
    const s = new Sampler(logits.length, CHAIN_PARAMS[id])
    assert.deepEqual(Array.from({ length: half }, () => s.sample(logits)), ch.selected_tokens.slice(0, half))
    const twin = s.clone()
    const rest = Array.from({ length: ch.steps - half }, () => s.sample(logits))
    assert.deepEqual(rest, ch.selected_tokens.slice(half))
    if (!id.startsWith('chain_adaptive_p')) {
      // adaptive-p's clone restarts its random stream, as llama.cpp's does
      assert.deepEqual(Array.from({ length: ch.steps - half }, () => twin.sample(logits)), rest)
    }
    s.reset()
    assert.deepEqual(Array.from({ length: ch.steps }, () => s.sample(logits)), ch.selected_tokens)
  })
}

test('dist streams', () => {
  const streams = vectors.derived_reference.dist_streams
  assert.equal(streams.length, 10)
  for (const st of streams) {
    const logits = inputLogits(st.input)
    const s = new Sampler(logits.length, { seed: st.seed, samplers: [] })
    assert.deepEqual(Array.from({ length: st.steps }, () => s.sample(logits)), st.selected_tokens, `seed ${st.seed}`)
  }
})

test('apply + accept equals sample', () => {
  const ch = recorded('chain_penalties')
  const logits = inputLogits(ch.input)
  const s = new Sampler(logits.length, CHAIN_PARAMS.chain_penalties)
  const got = []
  for (let i = 0; i < ch.steps; i++) {
    const t = s.apply(logits)
    s.accept(t)
    got.push(t)
  }
  assert.deepEqual(got, ch.selected_tokens)
})

test("llama.cpp's defaults", () => {
  assert.equal(
    new Sampler(10).describe(),
    'Sampler(nVocab=10, chain=[?penalties, ?dry, ?top-n-sigma, top-k, ?typical, top-p, min-p, ?xtc, temp-ext, dist])',
  )
})

test('bad values throw naming the field', () => {
  const cases = [
    [{ topP: 1.5 }, 'top_p'],
    [{ min_p: -0.1 }, 'min_p'],
    [{ temp: NaN }, 'temp'],
    [{ topK: '40' }, 'top_k'],
    [{ topK: 1.5 }, 'top_k'],
    [{ penaltyRepeat: 0 }, 'penalty_repeat'],
    [{ mirostat: 3 }, 'mirostat'],
    [{ samplers: ['top_k', 'nope'] }, 'samplers'],
    [{ logitBias: { 99: 1 } }, 'logit_bias'],
    [{ logitBias: { 1: Infinity } }, 'logit_bias'],
    [{ dryMultiplier: 0.8 }, 'dry_sequence_breakers'],
    [{ topk: 3 }, 'topk'],
  ]
  for (const [params, field] of cases) {
    assert.throws(() => new Sampler(10, params), (e) => e instanceof Error && e.message.includes(field), JSON.stringify(params))
  }
  assert.throws(() => new Sampler(0), /nVocab/)
})

test('bad logits throw', () => {
  const s = new Sampler(4, { seed: 1 })
  assert.throws(() => s.sample(new Float32Array(5)), /nVocab/)
  assert.throws(() => s.sample(Float32Array.from([0, NaN, 0, 0])), /NaN/)
  assert.throws(() => s.sample(new Float64Array(4)))
  assert.throws(() => s.sample(new Float32Array(4).fill(-Infinity)))
  assert.throws(() => s.accept(4), /vocabulary/)
  assert.throws(() => s.lastProbs(2), /no token/)
})

test('a subarray view is read in place', () => {
  const logits = inputLogits('logits_256')
  const big = new Float32Array(256 * 3)
  big.set(logits, 256)
  const view = big.subarray(256, 512)
  const a = new Sampler(256, { seed: 5 })
  const b = new Sampler(256, { seed: 5 })
  const want = Array.from({ length: 16 }, () => a.sample(logits))
  assert.deepEqual(Array.from({ length: 16 }, () => b.sample(view)), want)
})

test('lastProbs, entropy, surprisal, perplexity', () => {
  const logits = inputLogits('logits_4096_seed11')
  const s = new Sampler(logits.length, { seed: 3, trackPerplexity: true })
  const tokens = Array.from({ length: 5 }, () => s.sample(logits))
  const probs = s.lastProbs(5)
  assert.equal(probs.length, 5)
  for (let i = 0; i < 4; i++) assert.ok(probs[i].p >= probs[i + 1].p)
  assert.ok(s.lastProbs(40).some((t) => t.token === tokens[4]))
  let max = -Infinity
  for (const x of logits) max = Math.max(max, x)
  let sum = 0
  for (const x of logits) sum += Math.exp(x - max)
  let h = 0
  for (const x of logits) {
    const p = Math.exp(x - max) / sum
    if (p > 0) h -= p * Math.log(p)
  }
  const prob = (t) => Math.exp(logits[t] - max) / sum
  assert.ok(Math.abs(s.entropy() - h) < 1e-9 * h)
  assert.ok(Math.abs(s.surprisal() + Math.log2(prob(tokens[4]))) < 1e-4)
  const ppl = Math.exp(-tokens.reduce((a, t) => a + Math.log(prob(t)), 0) / tokens.length)
  assert.ok(Math.abs(s.perplexity() - ppl) < 1e-4 * ppl)
  assert.throws(() => new Sampler(4).perplexity(), /trackPerplexity/)
})

test('sample does not copy the logits (peak RSS)', () => {
  // A 64 MiB row: after a warm-up call, sampling it again must not raise the peak resident
  // size by anything like a row.
  const v = 1 << 24
  const logits = new Float32Array(v)
  for (let i = 0; i < v; i++) logits[i] = Math.sin(i * 0.37) * 4
  const s = new Sampler(v, { seed: 1 })
  s.sample(logits)
  const before = process.resourceUsage().maxRSS
  for (let i = 0; i < 5; i++) s.sample(logits)
  const grownKiB = process.resourceUsage().maxRSS - before
  assert.ok(grownKiB < 8 * 1024, `peak RSS grew by ${grownKiB} KiB while sampling`)
})

test('sampleBatch equals the single-row path', () => {
  const { sampleBatch } = require('..')
  const base = inputLogits('logits_4096_seed11')
  const v = base.length
  const b = 5
  const matrix = new Float32Array(b * v)
  for (let i = 0; i < b; i++) for (let j = 0; j < v; j++) matrix[i * v + j] = base[(j + 97 * i) % v]
  const params = (i) => ({ seed: 10 + i, topK: [40, 0][i % 2], trackPerplexity: true })
  const single = Array.from({ length: b }, (_, i) => new Sampler(v, params(i)))
  const batch = Array.from({ length: b }, (_, i) => new Sampler(v, params(i)))
  for (let step = 0; step < 4; step++) {
    const want = single.map((s, i) => s.sample(matrix.subarray(i * v, (i + 1) * v)))
    assert.deepEqual(sampleBatch(batch, matrix), want)
  }
  assert.ok(Math.abs(batch[2].perplexity() - single[2].perplexity()) < 1e-9)
  assert.throws(() => sampleBatch([batch[0], batch[0]], matrix.subarray(0, 2 * v)), /twice/)
  assert.throws(() => sampleBatch(batch, matrix.subarray(0, 3 * v)), /rows/)
  assert.deepEqual(sampleBatch([], matrix), [])
})

/** IEEE binary16 bits of `x` (round to nearest, ties to even), as a Uint16Array would hold them. */
function halfBits(x) {
  const f = new Float32Array([x])
  const u = new Uint32Array(f.buffer)[0]
  const sign = (u >>> 16) & 0x8000
  const exp = (u >>> 23) & 0xff
  let mant = u & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0)
  let e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    mant |= 0x800000
    const shift = 14 - e
    let h = mant >>> shift
    const rest = mant & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    if (rest > halfway || (rest === halfway && (h & 1))) h++
    return sign | h
  }
  let h = (e << 10) | (mant >>> 13)
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++
  return sign | h
}

/** The value of binary16 bits `h`. */
function halfValue(h) {
  const s = h & 0x8000 ? -1 : 1
  const e = (h >>> 10) & 0x1f
  const m = h & 0x3ff
  if (e === 0) return s * m * 2 ** -24
  if (e === 0x1f) return m ? NaN : s * Infinity
  return s * (1 + m / 1024) * 2 ** (e - 15)
}

/** A row as float16 bits and its exact float32 widening. */
function toHalf(row) {
  const bits = Uint16Array.from(row, halfBits)
  return { bits, widened: Float32Array.from(bits, halfValue) }
}

/** bfloat16 bits of `x` (round to nearest even on the upper 16 bits) and the exact widening. */
function toBf16(row) {
  const u = new Uint32Array(Float32Array.from(row).buffer)
  const bits = Uint16Array.from(u, (x) => (x + 0x7fff + ((x >>> 16) & 1)) >>> 16)
  const widened = new Float32Array(new Uint32Array(Array.from(bits, (b) => (b << 16) >>> 0)).buffer)
  return { bits, widened }
}

for (const id of Object.keys(CHAIN_PARAMS).sort()) {
  test(`recorded chain ${id}: float16 and bfloat16 rows give the tokens of their float32 widening`, () => {
    const ch = recorded(id)
    const logits = inputLogits(ch.input)
    for (const [conv, dtype] of [[toHalf, undefined], [toHalf, 'float16'], [toBf16, 'bfloat16']]) {
      const { bits, widened } = conv(logits)
      const a = new Sampler(logits.length, CHAIN_PARAMS[id])
      const b = new Sampler(logits.length, CHAIN_PARAMS[id])
      const want = Array.from({ length: ch.steps }, () => a.sample(widened))
      assert.deepEqual(Array.from({ length: ch.steps }, () => b.sample(bits, dtype)), want, dtype)
    }
  })
}

test('float16: statistics, apply, sampleBatch, Float16Array, dtype errors', (t) => {
  const logits = inputLogits('logits_4096_seed11')
  const v = logits.length
  const { bits, widened } = toHalf(logits)
  const a = new Sampler(v, { seed: 3, trackPerplexity: true })
  const b = new Sampler(v, { seed: 3, trackPerplexity: true })
  for (let i = 0; i < 4; i++) assert.equal(b.sample(bits), a.sample(widened))
  assert.deepEqual(b.lastProbs(5), a.lastProbs(5))
  assert.equal(b.entropy(), a.entropy())
  assert.equal(b.surprisal(), a.surprisal())
  assert.equal(b.perplexity(), a.perplexity())
  assert.equal(b.apply(bits), a.apply(widened))
  const rows = 3
  const matrix = new Uint16Array(rows * v)
  for (let i = 0; i < rows; i++) matrix.set(bits, i * v)
  const batch = Array.from({ length: rows }, (_, i) => new Sampler(v, { seed: 20 + i }))
  const single = Array.from({ length: rows }, (_, i) => new Sampler(v, { seed: 20 + i }))
  assert.deepEqual(sampleBatch(batch, matrix), single.map((s) => s.sample(widened)))
  const s = new Sampler(v, { seed: 1 })
  assert.throws(() => s.sample(bits, 'float64'), /dtype/)
  assert.throws(() => s.sample(widened, 'bfloat16'), /dtype/)
  assert.throws(() => s.sample(new Int16Array(v)), /Float32Array, Float16Array or Uint16Array/)
  assert.throws(() => s.sample(bits.subarray(1)), /nVocab/)
  assert.throws(() => s.sample([1, 2, 3]), /Float32Array/)
  if (typeof globalThis.Float16Array !== 'function') {
    t.diagnostic(`Float16Array: not in this runtime (node ${process.version}), its path is untested here`)
    return
  }
  const f16 = new globalThis.Float16Array(bits.buffer)
  const c = new Sampler(v, { seed: 9 })
  const d = new Sampler(v, { seed: 9 })
  assert.deepEqual(Array.from({ length: 8 }, () => c.sample(f16)), Array.from({ length: 8 }, () => d.sample(widened)))
})
