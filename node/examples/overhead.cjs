// The Node side of the per-call overhead figure (docs/PERFORMANCE.md): Sampler.sample at
// V = 151936 on the same logits and chains as python/examples/overhead.rs. Run after
// `npm run build`: `node node/examples/overhead.cjs`.
const { Sampler } = require('..')

const V = Number(process.argv[2] || 151936) // a tiny V isolates the per-call cost
const row = new Float32Array(V)
let x = 11
for (let i = 0; i < V; i++) {
  x = (Math.imul(x, 1103515245) + 12345) >>> 0
  row[i] = Math.fround(((x >>> 8) % 20000) / 1000) - 10
}

for (const [name, params] of [
  ['default chain (top-k 40 ...)', { seed: 42 }],
  ['dist only', { seed: 42, samplers: [] }],
  ['greedy (temp 0)', { seed: 42, temp: 0 }],
]) {
  const s = new Sampler(V, params)
  for (let i = 0; i < 200; i++) s.sample(row)
  const perCall = []
  for (let r = 0; r < 7; r++) {
    const n = 2000
    const t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) s.sample(row)
    perCall.push(Number(process.hrtime.bigint() - t) / 1e3 / n)
  }
  perCall.sort((a, b) => a - b)
  console.log(`node   V=${String(V).padEnd(6)} ${name.padEnd(32)} median ${perCall[3].toFixed(2).padStart(7)} µs/call  (min ${perCall[0].toFixed(2)})`)
}
