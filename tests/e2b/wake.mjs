// tests/e2b/wake.mjs — a stream answers when its sandbox's process has
// something, not at the server's next tick (tests/e2b/wake.sh starts the
// server with a tick of an hour: a stream that waited for it never ends).
// Each call has 30 s: an SDK call that waited for the tick fails its check.
import * as e2b from 'e2b'
import { Sandbox as CI } from '@e2b/code-interpreter'
import { checks, eq } from './checks.mjs'
const { Sandbox } = e2b

const { check, failed } = checks('e2b wake')
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b wake: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const opts = { requestTimeoutMs: 30_000 }
const sbx = await Sandbox.create({ timeoutMs: 120_000, ...opts })
await check("commands.run('echo hi') ends, its output whole, without a tick", async () => {
  const r = await sbx.commands.run('echo hi', { timeoutMs: 30_000, ...opts })
  return eq(`${r.exitCode} ${r.stdout}`, '0 hi\n')
})
await check('a command that prints in steps streams each line, then ends', async () => {
  const seen = []
  const r = await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.2; done', { timeoutMs: 30_000, onStdout: (d) => seen.push(d), ...opts })
  return eq(`${r.exitCode} ${seen.join('')}`, '0 1\n2\n3\n')
})
await check('a background command: wait() ends with its output', async () => {
  const h = await sbx.commands.run('sleep 0.3; echo late', { background: true, timeoutMs: 30_000, ...opts })
  const r = await h.wait()
  return eq(`${r.exitCode} ${r.stdout}`, '0 late\n')
})
await sbx.kill()
const ci = await CI.create({ timeoutMs: 120_000, ...opts })
await check("runCode('print(6*7)') answers, without a tick", async () => {
  const ex = await ci.runCode('print(6*7)', { timeoutMs: 30_000, ...opts })
  return eq(ex.logs.stdout.join(''), '42\n')
})
await ci.kill()
process.exit(failed() ? 1 : 0)
