// The Node side of the per-call overhead figure (docs/PERFORMANCE.md): Sampler.sample at
// V = 151936 on the same logits and chains as python/examples/overhead.rs (and the same row in
// float16). Run after `npm run build`: `node node/examples/overhead.cjs`.
const { Sampler } = require('..')

const V = Number(process.argv[2] || 151936) // a tiny V isolates the per-call cost
const row = new Float32Array(V)
let x = 11
for (let i = 0; i < V; i++) {
  x = (Math.imul(x, 1103515245) + 12345) >>> 0
  row[i] = Math.fround(((x >>> 8) % 20000) / 1000) - 10
}

/** IEEE binary16 bits of `x`, round to nearest even (normal range: these logits are in [-10, 10)). */
function halfBits(x) {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0]
  if ((u & 0x7fffffff) === 0) return (u >>> 16) & 0x8000
  let h = ((u >>> 16) & 0x8000) | ((((u >>> 23) & 0xff) - 112) << 10) | ((u >>> 13) & 0x3ff)
  const rest = u & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++
  return h
}
const half = Uint16Array.from(row, halfBits) // the same row as float16 bits, read in place

for (const [name, params, logits] of [
  ['default chain (top-k 40 ...)', { seed: 42 }, row],
  ['dist only', { seed: 42, samplers: [] }, row],
  ['greedy (temp 0)', { seed: 42, temp: 0 }, row],
  ['default chain, float16 row', { seed: 42 }, half],
]) {
  const s = new Sampler(V, params)
  for (let i = 0; i < 200; i++) s.sample(logits)
  const perCall = []
  for (let r = 0; r < 7; r++) {
    const n = 2000
    const t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) s.sample(logits)
    perCall.push(Number(process.hrtime.bigint() - t) / 1e3 / n)
  }
  perCall.sort((a, b) => a - b)
  console.log(`node   V=${String(V).padEnd(6)} ${name.padEnd(32)} median ${perCall[3].toFixed(2).padStart(7)} µs/call  (min ${perCall[0].toFixed(2)})`)
}
