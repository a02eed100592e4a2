// tests/mcp/client.mjs — the real MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, pinned in package.json) against ward's MCP
// server, unchanged: over stdio (StdioClientTransport spawning `ward mcp`)
// or streamable HTTP (StreamableHTTPClientTransport against ward serve
// --mcp).  Run by tests/mcp/*.sh; prints PASS:/FAIL:/SKIP: lines.
//   node client.mjs stdio|http PART...
// env: WARD (the binary), WARD_ROOT (the checkout), MCP_URL and MCP_TOKEN
// (http), MCP_ARGS (more options of ward mcp, space-separated).
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError, ListResourcesResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { readFileSync, readdirSync } from 'node:fs'

const [mode, ...parts] = process.argv.slice(2)
let failed = 0
const pass = (n) => console.log(`PASS: mcp ${mode}: ${n}`)
const fail = (n, why) => { failed++; console.log(`FAIL: mcp ${mode}: ${n}: ${why}`) }
const skip = (n, why) => console.log(`SKIP: mcp ${mode}: ${n}: ${why}`)
async function check(name, fn) {
  try {
    const r = await fn()
    if (r === false) fail(name, 'check was false')
    else pass(name)
  } catch (e) {
    fail(name, `${e && e.constructor && e.constructor.name}: ${e && e.message}`)
  }
}
const eq = (a, b) => { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${JSON.stringify(a)} != ${JSON.stringify(b)}`); return true }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
// the JSON-RPC error a call must fail with
async function rejects(code, p, pattern) {
  try {
    await p
  } catch (e) {
    if (!(e instanceof McpError)) throw new Error(`not an McpError: ${e && e.message}`)
    if (e.code !== code) throw new Error(`code ${e.code}, not ${code}: ${e.message}`)
    if (pattern && !pattern.test(e.message)) throw new Error(`message ${e.message} does not match ${pattern}`)
    return true
  }
  throw new Error('the call succeeded')
}

function transport() {
  if (mode === 'stdio') {
    const args = ['mcp', '--max-concurrent', '4', ...(process.env.MCP_ARGS || '').split(' ').filter(Boolean)]
    return new StdioClientTransport({ command: process.env.WARD, args, stderr: 'ignore' })
  }
  const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {}
  return new StreamableHTTPClientTransport(new URL(`${process.env.MCP_URL}/mcp`), { requestInit: { headers } })
}

async function connect() {
  const client = new Client({ name: 'ward-test', version: '1.0.0' })
  await client.connect(transport())
  return client
}

const call = (c, name, args, opts) => c.callTool({ name, arguments: args }, undefined, opts)

async function tools(c) {
  await check('ping', async () => eq(await c.ping(), {}))
  await check('the server says who it is and offers tools', () => {
    const v = c.getServerVersion(), caps = c.getServerCapabilities()
    return eq([v.name, !!caps.tools], ['ward', true])
  })
  const { tools } = await c.listTools()
  await check('tools/list: the seven tools', () =>
    eq(tools.map((t) => t.name).sort(), ['list_files', 'list_languages', 'read_file', 'run_code', 'run_command', 'run_in_session', 'write_file']))
  await check('every tool has an object inputSchema and an outputSchema', () =>
    tools.every((t) => t.inputSchema.type === 'object' && t.outputSchema && t.outputSchema.type === 'object'))
  await check('run_code needs language and code', () => {
    const t = tools.find((x) => x.name === 'run_code')
    return eq(t.inputSchema.required, ['language', 'code']) && !!t.inputSchema.properties.limits
  })
}

// each enabled language runs tests/dialect/programs' program on stdin "2 3"
const programs = { c: 'main.c', cpp: 'main.cpp', python: 'main.py', javascript: 'main.js', java: 'Main.java', go: 'main.go', rust: 'main.rs', ruby: 'main.rb', php: 'main.php', bash: 'main.sh', lua: 'main.lua', perl: 'main.pl' }
async function languages(c) {
  const r = await call(c, 'list_languages', {})
  const enabled = r.structuredContent.languages.map((l) => l.id)
  await check('list_languages names python', () => enabled.includes('python'))
  for (const [id, file] of Object.entries(programs)) {
    if (!enabled.includes(id)) { skip(`run_code ${id}`, 'its toolchain is not installed here'); continue }
    await check(`run_code ${id}`, async () => {
      const code = readFileSync(`${process.env.WARD_ROOT}/tests/dialect/programs/${file}`, 'utf8')
      const r = await call(c, 'run_code', { language: id, code, stdin: '2 3\n', limits: { timeout_s: 60 } })
      const s = r.structuredContent
      if (r.isError) throw new Error(`isError: ${r.content[0].text.slice(0, 300)}`)
      return eq([s.status, s.exit_code, s.stdout.trim(), s.language], ['ok', 0, 'sum 5 args 0', id])
    })
  }
}

async function runs(c) {
  await check('run_code: a failing program is a tool error with its exit code', async () => {
    const r = await call(c, 'run_code', { language: 'python', code: 'import sys\nprint("out")\nsys.exit(3)' })
    return eq([r.isError, r.structuredContent.status, r.structuredContent.exit_code, r.structuredContent.stdout], [true, 'nonzero', 3, 'out\n'])
  })
  await check('run_code: files beside the code', async () => {
    const r = await call(c, 'run_code', { language: 'python', code: 'print(open("data.txt").read())', files: [{ path: 'data.txt', content: 'aGVsbG8=', encoding: 'base64' }] })
    return eq([r.isError, r.structuredContent.stdout], [false, 'hello\n'])
  })
  await check('run_code: a timeout is status timeout', async () => {
    const r = await call(c, 'run_code', { language: 'python', code: 'while True: pass', limits: { timeout_s: 1 } })
    return eq([r.isError, r.structuredContent.status], [true, 'timeout'])
  })
  await check('run_code: the sandbox has no network and no host files', async () => {
    const r = await call(c, 'run_code', { language: 'bash', code: 'cat /etc/shadow; ls /root; getent hosts example.com || echo nonet' })
    return r.structuredContent.stdout.includes('nonet') && !r.structuredContent.stdout.includes('root:')
  })
  await check('run_command: a shell command', async () => {
    const r = await call(c, 'run_command', { command: 'echo hi; echo err >&2; exit 2' })
    return eq([r.isError, r.structuredContent.stdout, r.structuredContent.stderr, r.structuredContent.exit_code, r.structuredContent.status], [true, 'hi\n', 'err\n', 2, 'nonzero'])
  })
  await check('run_command: an argv, stdin and env', async () => {
    const r = await call(c, 'run_command', { argv: ['sh', '-c', 'read x; echo "$x $K"'], stdin: 'in\n', env: { K: 'v' } })
    return eq([r.isError, r.structuredContent.stdout], [false, 'in v\n'])
  })
  await check('run_command: the text content carries the result too', async () => {
    const r = await call(c, 'run_command', { command: 'echo text-too' })
    return r.content[0].type === 'text' && JSON.parse(r.content[0].text).stdout === 'text-too\n'
  })
}

async function files(c) {
  let sid
  await check('write_file into the connection\'s session', async () => {
    const r = await call(c, 'write_file', { path: 'dir/a.txt', content: 'one\n' })
    sid = r.structuredContent.session_id
    return eq([r.isError, r.structuredContent.size], [false, 4])
  })
  await check('run_in_session sees it, and leaves a file', async () => {
    const r = await call(c, 'run_in_session', { command: 'cat dir/a.txt; echo two > b.txt; pwd' })
    return eq([r.structuredContent.stdout, r.structuredContent.session_id], ['one\n/work\n', sid])
  })
  await check('read_file reads what the session wrote', async () => {
    const r = await call(c, 'read_file', { path: 'b.txt' })
    return eq([r.structuredContent.content, r.structuredContent.encoding], ['two\n', 'utf-8'])
  })
  await check('bytes round-trip in base64', async () => {
    await call(c, 'write_file', { path: 'bin', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' })
    const r = await call(c, 'read_file', { path: 'bin' })
    return eq([r.structuredContent.encoding, r.structuredContent.content], ['base64', 'AP8B'])
  })
  await check('list_files lists /work', async () => {
    const r = await call(c, 'list_files', {})
    return eq(r.structuredContent.entries.map((e) => [e.name, e.type]), [['b.txt', 'file'], ['bin', 'file'], ['dir', 'directory']])
  })
  await check('a path out of /work is refused (-32602)', () => rejects(-32602, call(c, 'read_file', { path: '../etc/passwd' }), /refused/))
  await check('a symlink the sandbox planted reads inside, never the host', async () => {
    await call(c, 'run_in_session', { command: 'ln -s /etc/shadow sh; ln -s /proc/1/root/etc/hostname hn' })
    const a = await call(c, 'read_file', { path: 'sh' })
    return a.isError === true || !a.structuredContent.content.includes('root:')
  })
  await check('a missing file is a tool error', async () => {
    const r = await call(c, 'read_file', { path: 'nope' })
    return r.isError === true && /nope/.test(r.content[0].text)
  })
  await check('an unknown session_id is a tool error', async () => {
    const r = await call(c, 'read_file', { path: 'b.txt', session_id: 'x.0123' })
    return r.isError === true && /no such session/.test(r.content[0].text)
  })
  await check('a process left in the background stays in the session', async () => {
    await call(c, 'run_in_session', { command: '(sleep 1; echo late > late.txt) >/dev/null 2>&1 &' })
    for (let i = 0; i < 100; i++) {
      const r = await call(c, 'list_files', {})
      if (r.structuredContent.entries.some((e) => e.name === 'late.txt')) return true
      await sleep(100)
    }
    throw new Error('late.txt never came (the control of the cancellation test)')
  })
  return sid
}

async function progress(c) {
  await check('progress notifications on a long run, then its result', async () => {
    const seen = []
    const r = await call(c, 'run_command', { command: 'sleep 3; echo done', limits: { timeout_s: 20 } }, { onprogress: (p) => seen.push(p), timeout: 60000 })
    if (seen.length < 1) throw new Error('no progress notification')
    if (!seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress)) throw new Error(`progress not increasing: ${JSON.stringify(seen)}`)
    return eq([r.structuredContent.stdout, seen[0].total, typeof seen[0].message], ['done\n', 20, 'string'])
  })
}

async function cancel(c) {
  await check('cancellation kills the run\'s whole tree: its background child never writes its marker', async () => {
    const ac = new AbortController()
    const p = call(c, 'run_in_session', { command: 'touch started; (sleep 4; touch marker) >/dev/null 2>&1 & sleep 60' }, { signal: ac.signal, timeout: 90000 })
    p.catch(() => {})
    let up = false
    for (let i = 0; i < 200 && !up; i++) {
      const r = await call(c, 'list_files', {})
      up = r.structuredContent.entries.some((e) => e.name === 'started')
      if (!up) await sleep(100)
    }
    if (!up) throw new Error('the run never started')
    const t0 = Date.now()
    ac.abort('test')
    try { await p; throw new Error('the call was not aborted') } catch (e) { if (e.message === 'the call was not aborted') throw e }
    // the session is free again soon (the exec was killed), and stays so
    const r = await call(c, 'run_in_session', { command: 'echo alive' }, { timeout: 30000 })
    if (r.structuredContent.stdout !== 'alive\n') throw new Error('the session did not answer after the cancel')
    await sleep(Math.max(0, 6000 - (Date.now() - t0)))
    const l = await call(c, 'list_files', {})
    if (l.structuredContent.entries.some((e) => e.name === 'marker')) throw new Error('the background child survived the cancel and wrote its marker')
    return true
  })
  await check('cancellation of run_code kills its tree: its child process is gone from the host', async () => {
    const m = `${Math.floor(Math.random() * 1e9) + 1e9}`
    const ac = new AbortController()
    const p = call(c, 'run_code', { language: 'python', code: `import subprocess, time\nsubprocess.Popen(["sleep", "${m}"])\ntime.sleep(120)`, limits: { timeout_s: 150 } }, { signal: ac.signal, timeout: 200000 })
    p.catch(() => {})
    let up = false
    for (let i = 0; i < 300 && !up; i++) { up = markers(m) > 0; if (!up) await sleep(100) }
    if (!up) throw new Error('the child never started')
    ac.abort('test')
    await p.then(() => { throw new Error('not aborted') }, () => {})
    for (let i = 0; i < 100; i++) { if (markers(m) === 0) return true; await sleep(100) }
    throw new Error('the child outlived the cancel')
  })
}

// host processes running `sleep M` (a marker the sandbox started)
function markers(m) {
  let n = 0
  for (const d of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue
    try {
      const a = readFileSync(`/proc/${d}/cmdline`, 'latin1').split('\0')
      if (a[0].endsWith('sleep') && a[1] === m) n++
    } catch (e) {}
  }
  return n
}

async function hostile(c) {
  await check('wrong argument types are -32602', () => rejects(-32602, call(c, 'run_code', { language: 5, code: 'x' }), /language/))
  await check('a missing argument is -32602', () => rejects(-32602, call(c, 'run_code', { language: 'python' }), /code/))
  await check('an unknown argument is -32602', () => rejects(-32602, call(c, 'run_command', { command: 'true', rootfs: '/' }), /rootfs/))
  await check('an unknown tool is -32602', () => rejects(-32602, call(c, 'nope', {}), /unknown tool/))
  await check('an unknown language is -32602, naming the enabled ones', () => rejects(-32602, call(c, 'run_code', { language: 'cobol', code: 'x' }), /python/))
  await check('a limit over the runner\'s maximum is -32602 naming it', () => rejects(-32602, call(c, 'run_command', { command: 'true', limits: { memory_mb: 99999999 } }), /memory/))
  await check('a limit of the wrong type is -32602', () => rejects(-32602, call(c, 'run_command', { command: 'true', limits: { timeout_s: 'long' } }), /timeout/))
  await check('an unknown method is -32601', () => rejects(-32601, c.request({ method: 'resources/list', params: {} }, ListResourcesResultSchema)))
  await check('a fork bomb is held by the pids limit', async () => {
    const r = await call(c, 'run_command', { command: 'f(){ f|f& }; f; sleep 2; echo survived', limits: { pids: 32, timeout_s: 10 } })
    return typeof r.structuredContent.status === 'string'
  })
  await check('the server still answers', async () => eq(await c.ping(), {}))
}

const table = { tools, languages, runs, files, progress, cancel, hostile }
const c = await connect().catch((e) => { fail('connect', e.message); process.exit(1) })
pass(`connect (protocol ${c.transport && c.transport.protocolVersion ? c.transport.protocolVersion : 'negotiated'})`)
for (const p of parts.length ? parts : Object.keys(table)) {
  if (!table[p]) { fail(p, 'no such part'); continue }
  await table[p](c)
}
await c.close()
process.exit(failed ? 1 : 0)
