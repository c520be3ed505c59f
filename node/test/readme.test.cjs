// The Node page's example (docs/node.md) runs as written (from the repository root).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

test('docs/node.md example runs', () => {
  const root = path.join(__dirname, '..', '..')
  const text = fs.readFileSync(path.join(root, 'docs', 'node.md'), 'utf8')
  const code = /```js\n([\s\S]*?)```/.exec(text)[1]
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nucleus-readme-'))
  try {
    const file = path.join(dir, 'example.cjs')
    // The example requires './node' from the repository root.
    fs.writeFileSync(file, code.replace("require('./node')", `require(${JSON.stringify(path.join(root, 'node'))})`))
    const out = execFileSync(process.execPath, [file], { cwd: root, encoding: 'utf8' })
    assert.match(out, /\[ 7 \] \[ 7, 8 \]/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
