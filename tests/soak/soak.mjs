// tests/soak/soak.mjs — the soak's clients (tests/soak/soak.sh runs it from
// the E2B SDK's install, build/e2b-node): SOAK_CLIENTS clients at once, each
// a loop of mixed calls, until SOAK_REQUESTS HTTP requests have been made or
// SOAK_SECONDS have passed.  The calls, by weight:
//   native  POST /exec (a command, one with files and stdin, bad JSON: 400,
//           an unknown path: 404), POST /judge (two tests), a session (create,
//           a background process and its followed output, a foreground exec,
//           PUT and GET of a file, DELETE)
//   piston  the real piston-client (npm 1.0.2, tests/dialect's lock): execute
//   judge0  Judge0's documented API: POST /submissions?wait=true, and
//           POST /submissions then GET /submissions/{token} until it is done
//   e2b     the real e2b SDK (2.51.0, tests/e2b's lock): Sandbox.create, a
//           command, a background command waited for, files.write and read,
//           kill
// Every answer is checked (a wrong one is a failure, named with the first
// few of its kind); requests are counted where they are sent (fetch, which
// the e2b SDK uses too, and each piston-client call).  Prints PASS:/FAIL:
// lines and a last line "SOAK requests=N seconds=S" for soak.sh.
import { Sandbox } from 'e2b'
import { pathToFileURL } from 'url'

const env = process.env
const NATIVE = env.NATIVE_URL, PISTON = env.PISTON_URL, JUDGE0 = env.JUDGE0_URL
const WANT = Number(env.SOAK_REQUESTS || 300), CLIENTS = Number(env.SOAK_CLIENTS || 4)
const DEADLINE = Date.now() + 1000 * Number(env.SOAK_SECONDS || 600)
const { piston } = await import(pathToFileURL(`${env.PISTON_CLIENT_DIR}/index.js`).href)
const pc = piston({ server: PISTON })

let sent = 0
const realFetch = globalThis.fetch
globalThis.fetch = (...a) => { sent++; return realFetch(...a) }

const bad = new Map() // kind -> [count, first details]
const done = new Map()
const note = (kind, ok, detail) => {
  done.set(kind, (done.get(kind) || 0) + 1)
  if (ok) return
  const b = bad.get(kind) || [0, []]
  b[0]++
  if (b[1].length < 3) b[1].push(String(detail).slice(0, 300))
  bad.set(kind, b)
}
const H = (client) => ({ 'Content-Type': 'application/json', 'X-Ward-Client': client })
async function call (base, method, path, body, headers) {
  const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) })
  const text = await r.text()
  let json = null
  try { json = JSON.parse(text) } catch {}
  return { status: r.status, text, json }
}

const ops = {
  async exec (c, i) {
    const r = await call(NATIVE, 'POST', '/exec', { command: `echo soak ${i}` }, H(c))
    note('exec', r.status === 200 && r.json?.stdout === `soak ${i}\n`, `${r.status} ${r.text}`)
  },
  async execFiles (c, i) {
    const r = await call(NATIVE, 'POST', '/exec', { command: 'cat a/b.txt; wc -c', files: [{ path: 'a/b.txt', content: `f${i}\n` }], stdin: 'abc' }, H(c))
    note('exec with files and stdin', r.status === 200 && r.json?.stdout === `f${i}\n3\n`, `${r.status} ${r.text}`)
  },
  async execBad (c) {
    const r = await call(NATIVE, 'POST', '/exec', '{"command": ', H(c))
    const n = await call(NATIVE, 'GET', '/nothing/here', undefined, H(c))
    note('refusals (400, 404)', r.status === 400 && n.status === 404, `${r.status} ${n.status}`)
  },
  async judge (c, i) {
    const r = await call(NATIVE, 'POST', '/judge', {
      language: 'python3', files: [{ content: 'a, b = map(int, input().split())\nprint(a + b)\n' }],
      tests: [{ stdin: `${i} 1\n`, expected_stdout: `${i + 1}\n` }, { stdin: '2 2\n', expected_stdout: '5\n' }]
    }, H(c))
    const t = r.json?.tests || []
    note('judge', r.status === 200 && t.length === 2 && t[0].verdict === 'AC' && t[1].verdict === 'WA', `${r.status} ${r.text}`)
  },
  async session (c, i) {
    const s = await call(NATIVE, 'POST', '/sessions', { limits: { timeout_seconds: 10 } }, H(c))
    const id = s.json?.id
    if (s.status !== 201 && s.status !== 200) return note('session', false, `create ${s.status} ${s.text}`)
    try {
      const bg = await call(NATIVE, 'POST', `/sessions/${id}/exec`, { command: `sleep 0.1; echo bg ${i}`, background: true }, H(c))
      const pid = bg.json?.pid
      const fg = await call(NATIVE, 'POST', `/sessions/${id}/exec`, { command: 'echo fg' }, H(c))
      const put = await call(NATIVE, 'PUT', `/sessions/${id}/files/d/x.txt`, `x${i}`, { 'X-Ward-Client': c })
      const get = await call(NATIVE, 'GET', `/sessions/${id}/files/d/x.txt`, undefined, H(c))
      const out = await call(NATIVE, 'GET', `/sessions/${id}/processes/${pid}/output?follow=1`, undefined, H(c))
      note('session', bg.status === 202 && pid > 0 && fg.json?.stdout === 'fg\n' && put.status < 300 && get.text === `x${i}` &&
        out.text.includes(`bg ${i}`), `${bg.status} ${bg.text} | ${fg.text} | ${put.status} | ${get.text} | ${out.text}`)
    } finally {
      const d = await call(NATIVE, 'DELETE', `/sessions/${id}`, undefined, H(c))
      note('session deleted', d.status === 204 || d.status === 200, `${d.status} ${d.text}`)
    }
  },
  async piston (c, i) {
    sent++
    const r = await pc.execute('python', 'import sys\nprint(input(), len(sys.argv))', { stdin: `p${i}` })
    note('piston-client execute', r?.run?.stdout === `p${i} 4\n` && r.run.code === 0, JSON.stringify(r))
  },
  async judge0Wait (c, i) {
    const r = await call(JUDGE0, 'POST', '/submissions?base64_encoded=false&wait=true',
      { language_id: 71, source_code: 'print(int(input()) * 2)', stdin: `${i}`, expected_output: `${2 * i}` }, H(c))
    note('judge0 wait=true', r.status === 201 && r.json?.status?.id === 3 && r.json?.stdout === `${2 * i}\n`, `${r.status} ${r.text}`)
  },
  async judge0Poll (c, i) {
    const p = await call(JUDGE0, 'POST', '/submissions?base64_encoded=true',
      { language_id: 71, source_code: Buffer.from('print("j0")').toString('base64') }, H(c))
    const tok = p.json?.token
    let g
    // poll as a client does, for up to 2 minutes (a loaded runner queues it)
    for (const until = Date.now() + 120_000; tok && Date.now() < until;) {
      g = await call(JUDGE0, 'GET', `/submissions/${tok}?base64_encoded=true&fields=status_id,stdout`, undefined, H(c))
      if (g.json && g.json.status_id > 2) break
      await new Promise((res) => setTimeout(res, 100))
    }
    note('judge0 submit and poll', p.status === 201 && g?.json?.status_id === 3 &&
      Buffer.from(g.json.stdout || '', 'base64').toString() === 'j0\n', `${p.status} ${p.text} | ${g?.text}`)
  },
  async e2b (c, i) {
    let sbx
    try {
      sbx = await Sandbox.create({ timeoutMs: 60_000 })
      const r = await sbx.commands.run(`echo e2b ${i}`)
      const h = await sbx.commands.run('sleep 0.1; echo back', { background: true })
      const w = await h.wait()
      await sbx.files.write('/home/user/s.txt', `s${i}`)
      const f = await sbx.files.read('/home/user/s.txt')
      note('e2b sandbox', r.stdout === `e2b ${i}\n` && w.stdout === 'back\n' && f === `s${i}`, `${r.stdout} | ${w.stdout} | ${f}`)
    } catch (e) {
      note('e2b sandbox', false, e)
    } finally {
      if (sbx) note('e2b kill', await sbx.kill().catch(() => false), 'kill failed')
    }
  }
}
// weights: what a shared runner's day looks like, every kind in every run
const plan = [['exec', 30], ['execFiles', 8], ['execBad', 4], ['judge', 6], ['session', 6], ['piston', 10],
  ['judge0Wait', 8], ['judge0Poll', 4], ['e2b', 2]]
const wheel = plan.flatMap(([k, w]) => Array(w).fill(k))

let seq = 0
async function client (n) {
  const name = `soak-${n}`
  for (let k = n; sent < WANT && Date.now() < DEADLINE; k += CLIENTS) {
    const kind = wheel[(k * 7919) % wheel.length]
    const i = seq++
    try { await ops[kind](name, i) } catch (e) { note(kind, false, e) }
  }
}
const t0 = Date.now()
// every kind once first (so that a short run still has each), then the wheel
await Promise.all(Object.keys(ops).map((k) => ops[k]('soak-first', seq++).catch((e) => note(k, false, e))))
await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)))
const secs = (Date.now() - t0) / 1000
for (const [kind, n] of [...done.entries()].sort()) {
  const b = bad.get(kind)
  console.log(b ? `FAIL: soak: ${kind}: ${b[0]} of ${n} wrong: ${b[1].join(' || ')}` : `PASS: soak: ${kind} (${n} answered right)`)
}
const inTime = sent >= WANT
console.log(inTime ? `PASS: soak: ${sent} requests from ${CLIENTS} clients in ${secs.toFixed(1)} s` : `FAIL: soak: only ${sent} of ${WANT} requests within SOAK_SECONDS (${secs.toFixed(1)} s)`)
console.log(`SOAK requests=${sent} seconds=${secs.toFixed(1)}`)
process.exit(0)
