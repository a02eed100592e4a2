// bench/e2b_life.mjs — an E2B sandbox's life through the real SDK (run by
// bench/e2b_life.sh): on a sandbox holding 100 MB of files in its home and
// a process holding 100 MB of memory, interleaved rounds of
// commands.run('true') (the floor of a call), pause() (frozen, its files
// written to --e2b-state), connect() (the resume), pause({keepMemory:
// false}) and its connect() (a new session, the files restored),
// fork() of one and, as its baseline, Sandbox.create().  Prints medians
// and p90 (ms) as JSON.
import { Sandbox } from 'e2b'
import fs from 'node:fs'
import { execSync } from 'node:child_process'
const N = Number(process.env.BENCH_LIFE_N || 8)
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const now = () => Number(process.hrtime.bigint()) / 1e6
const timed = async (fn) => { const t = now(); await fn(); return now() - t }
const sbx = await Sandbox.create({ timeoutMs: 1_200_000 })
await sbx.commands.run('head -c 100000000 /dev/urandom > data', { timeoutMs: 120_000 })
await sbx.commands.run('head -c 100000000 /dev/urandom | python3 -c "import sys, time; b = sys.stdin.buffer.read(); time.sleep(3600)"', { background: true, timeoutMs: 0 })
for (let i = 0; i < 100; i++) { // its 100 MB read in
  const m = (await sbx.commands.run('ps -o rss= -C python3 | head -1')).stdout.trim()
  if (Number(m) > 95_000) break
  await new Promise((r) => setTimeout(r, 100))
}
const t = { run: [], pause: [], resume: [], pause_files: [], resume_files: [], create: [], fork: [], snapshot: [], snapshot_again: [] }
const layers = () => fs.readdirSync(`${process.env.STORE}/layers/sha256`).filter((n) => !n.endsWith('.owners'))
const layerBytes = () => layers().reduce((a, n) => a + Number(execSync(`du -sb ${process.env.STORE}/layers/sha256/${n}`).toString().split('\t')[0]), 0)
let layerGrowth = 0
for (let i = 0; i < N; i++) {
  t.run.push(await timed(() => sbx.commands.run('true')))
  t.pause.push(await timed(() => sbx.pause()))
  t.resume.push(await timed(() => Sandbox.connect(sbx.sandboxId)))
  t.create.push(await timed(async () => { const s = await Sandbox.create({ timeoutMs: 60_000 }); await s.kill() }))
  let forks
  t.fork.push(await timed(async () => { forks = await sbx.fork({ count: 1, timeoutMs: 60_000 }) }))
  if (!(forks[0] instanceof Sandbox)) throw new Error(`fork: ${forks[0]}`)
  await forks[0].kill()
  await sbx.commands.run(`echo ${i} > round`) // changed: a new layer
  t.snapshot.push(await timed(() => sbx.createSnapshot({ name: `bench-${i}` })))
  const before = layerBytes()
  t.snapshot_again.push(await timed(() => sbx.createSnapshot({ name: `bench-${i}-again` })))
  layerGrowth += layerBytes() - before
}
// files only (its process ends at the first): last, fewer rounds
for (let i = 0; i < Math.max(2, N / 2); i++) {
  t.pause_files.push(await timed(() => sbx.pause({ keepMemory: false })))
  t.resume_files.push(await timed(() => Sandbox.connect(sbx.sandboxId)))
}
const size = (await sbx.commands.run('stat -c %s data')).stdout.trim()
await sbx.kill()
const out = { n: N, data_bytes: Number(size), unchanged_snapshot_layer_bytes: layerGrowth }
for (const [k, v] of Object.entries(t)) out[k] = { median: q(v, 0.5), p90: q(v, 0.9) }
console.log(JSON.stringify(out))
