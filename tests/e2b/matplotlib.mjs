// tests/e2b/matplotlib.mjs — the code interpreter's matplotlib figures as
// `png` results, with the real @e2b/code-interpreter SDK, in a sandbox made
// from the template (ward serve --image) named by argv[2].  Run by
// tests/e2b/matplotlib.sh; prints PASS:/FAIL: lines.
import { Sandbox } from '@e2b/code-interpreter'
import { checks, eq } from './checks.mjs'

const { pass, fail, check, failed } = checks('e2b matplotlib')
const SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
// the PNG's width and height (its IHDR), or throws saying what is wrong
function png(b64) {
  if (typeof b64 !== 'string') throw new Error(`png is ${typeof b64}`)
  const b = Buffer.from(b64, 'base64')
  if (b.length < 33 || !b.subarray(0, 8).equals(SIG)) throw new Error(`not a PNG: ${b.subarray(0, 16).toString('hex')} (${b.length} bytes)`)
  if (b.subarray(12, 16).toString('latin1') !== 'IHDR') throw new Error('no IHDR chunk first')
  return [b.readUInt32BE(16), b.readUInt32BE(20)]
}
const pngs = (e) => e.results.filter((r) => r.png)
const describe = (e) => JSON.stringify({ results: e.results.map((r) => r.formats()), error: e.error && e.error.name, stderr: e.logs.stderr }).slice(0, 600)

const template = process.argv[2] || 'mpl'
const sbx = await Sandbox.create(template, { timeoutMs: 120_000 })
pass(`code interpreter sandbox created from template ${template}`)

await check('matplotlib is in the image', async () => {
  const e = await sbx.runCode('import matplotlib; matplotlib.__version__')
  if (e.error) throw new Error(`${e.error.name}: ${e.error.value}`)
  console.log(`# matplotlib ${e.text}`)
  return /^3\./.test(e.text) // E2B strips the quotes of a str result
})

await check('plt.show(): one png result, its base64 a PNG', async () => {
  const got = []
  const e = await sbx.runCode("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.show()",
    { onResult: (r) => got.push(r) })
  if (e.error) throw new Error(`${e.error.name}: ${e.error.value}`)
  const p = pngs(e)
  if (p.length !== 1) throw new Error(`${p.length} png results: ${describe(e)}`)
  const [w, h] = png(p[0].png)
  return eq(p[0].formats().includes('png'), true) && w > 0 && h > 0 && got.some((r) => r.png === p[0].png)
})

await check('a figure is shown once: the next cell has no png', async () => {
  const e = await sbx.runCode('1 + 1')
  return eq([pngs(e).length, e.text], [0, '2'])
})

await check('two figures, one png each', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1,2])\nplt.figure(); plt.bar([1,2],[3,4])\nplt.show()')
  const p = pngs(e)
  if (p.length !== 2) throw new Error(`${p.length} png results: ${describe(e)}`)
  p.forEach((r) => png(r.png))
  return p[0].png !== p[1].png
})

await check('plt.show() in a loop: a png each time, each its own figure', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nfor i in range(3):\n    plt.plot([1, i + 2])\n    plt.show()')
  const p = pngs(e)
  if (p.length !== 3) throw new Error(`${p.length} png results: ${describe(e)}`)
  p.forEach((r) => png(r.png))
  return new Set(p.map((r) => r.png)).size === 3
})

await check('plt.show() shows there and then: the png before the output printed after it', async () => {
  const order = []
  const e = await sbx.runCode("import matplotlib.pyplot as plt\nprint('before')\nplt.plot([2,1])\nplt.show()\nprint('after')",
    { onStdout: (m) => order.push(m.line.trim()), onResult: (r) => order.push(r.png ? 'png' : 'other') })
  return eq(order, ['before', 'png', 'after']) && eq(e.logs.stderr, [])
})

await check('a figure as the last expression: the main result, with its png, shown once', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(4, 3), dpi=50)\nax.plot([3,1,2])\nfig')
  const p = pngs(e)
  if (p.length !== 1 || !p[0].isMainResult) throw new Error(`not one main png result: ${describe(e)}`)
  return eq(png(p[0].png), [200, 150]) && /^<Figure size 200x150/.test(e.text)
})

await check('a plot left open at the end of a cell: a png result', async () => {
  const e = await sbx.runCode("import matplotlib.pyplot as plt\nplt.scatter([1,2],[2,1])\nprint('drawn')")
  const p = pngs(e)
  if (p.length !== 1) throw new Error(`${p.length} png results: ${describe(e)}`)
  png(p[0].png)
  return eq(e.logs.stdout, ['drawn\n'])
})

await check('a cell that fails: its figure shown with the error, none left for the next cell', async () => {
  const e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1,2])\n1/0')
  const next = await sbx.runCode('2 + 2')
  return eq([e.error && e.error.name, pngs(e).length, pngs(next).length, next.text], ['ZeroDivisionError', 1, 0, '4'])
})

await sbx.kill()
process.exit(failed() ? 1 : 0)
