// bench/e2b.mjs — the E2B SDK against ward serve --e2b (run by bench/e2b.sh):
// Sandbox.create() to the first commands.run('true') result, and
// commands.run('true') in a live sandbox, against a pooled POST /exec of
// `true` on the same server, interleaved.  Prints medians and p90 (ms) as JSON.
import { Sandbox } from 'e2b'
const N = Number(process.env.BENCH_E2B_N || 30)
const native = process.env.WARD_URL, tok = process.env.E2B_API_KEY
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const now = () => Number(process.hrtime.bigint()) / 1e6
async function exec() {
  const t = now()
  const r = await fetch(native + '/exec', { method: 'POST', headers: { Authorization: 'Bearer ' + tok, 'Content-Type': 'application/json' }, body: '{"argv":["true"]}' })
  const j = await r.json()
  if (j.status !== 'ok' && j.exit_code !== 0) throw new Error(JSON.stringify(j))
  return now() - t
}
const live = await Sandbox.create({ timeoutMs: 600_000 })
for (let i = 0; i < 5; i++) { await live.commands.run('true'); await exec() } // warm
const create = [], run = [], pooled = []
for (let i = 0; i < N; i++) {
  let t = now()
  const s = await Sandbox.create({ timeoutMs: 60_000 })
  await s.commands.run('true')
  create.push(now() - t)
  await s.kill()
  t = now()
  await live.commands.run('true')
  run.push(now() - t)
  pooled.push(await exec())
}
await live.kill()
const f = (a) => ({ median: +q(a, 0.5).toFixed(2), p90: +q(a, 0.9).toFixed(2) })
console.log(JSON.stringify({ n: N, create_to_first_result: f(create), command_in_live_sandbox: f(run), pooled_exec: f(pooled) }))
