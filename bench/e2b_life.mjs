// bench/e2b_life.mjs — an E2B sandbox's life through the real SDK (run by
// bench/e2b_life.sh): on a sandbox holding 100 MB of files in its home and
// a process holding 100 MB of memory, interleaved rounds of
// commands.run('true') (the floor of a call), pause() (frozen, its files
// written to --e2b-state), connect() (the resume), pause({keepMemory:
// false}) and its connect() (a new session, the files restored),
// fork() of one and, as its baseline, Sandbox.create().  Each round also
// times the kernel's copy of the same 100 MB from a tmpfs (FLOOR_SRC) to
// the state directory's filesystem (FLOOR_DST), the floor of a pause that
// writes the files; with BEFORE_URL (a second server, another build) a
// sandbox prepared alike on each server that does nothing but pause and
// resume, the two interleaved (the main sandbox's forks and snapshots
// leave writeback behind that slows the next copy: not a fair twin).
// Prints medians and p90 (ms) as JSON.
import { Sandbox } from 'e2b'
import fs from 'node:fs'
import { execSync } from 'node:child_process'
const N = Number(process.env.BENCH_LIFE_N || 8)
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
const now = () => Number(process.hrtime.bigint()) / 1e6
const timed = async (fn) => { const t = now(); await fn(); return now() - t }
const prepared = async (opts) => { // 100 MB of files, a process holding 100 MB
  const s = await Sandbox.create({ timeoutMs: 1_200_000, ...opts })
  await s.commands.run('head -c 100000000 /dev/urandom > data', { timeoutMs: 120_000 })
  await s.commands.run('head -c 100000000 /dev/urandom | python3 -c "import sys, time; b = sys.stdin.buffer.read(); time.sleep(3600)"', { background: true, timeoutMs: 0 })
  for (let i = 0; i < 100; i++) { // its 100 MB read in
    const m = (await s.commands.run('ps -o rss= -C python3 | head -1')).stdout.trim()
    if (Number(m) > 95_000) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return s
}
const sbx = await prepared({})
const beforeConn = process.env.BEFORE_URL ? { apiUrl: process.env.BEFORE_URL, sandboxUrl: process.env.BEFORE_URL } : null
const sbxBefore = beforeConn ? await prepared(beforeConn) : null
const sbxTwin = beforeConn ? await prepared({}) : null
const t = { run: [], pause: [], resume: [], pause_files: [], resume_files: [], create: [], fork: [], snapshot: [], snapshot_again: [], copy_floor: [], twin_pause: [], twin_resume: [], before_pause: [], before_resume: [] }
const layers = () => fs.readdirSync(`${process.env.STORE}/layers/sha256`).filter((n) => !n.endsWith('.owners'))
const layerBytes = () => layers().reduce((a, n) => a + Number(execSync(`du -sb ${process.env.STORE}/layers/sha256/${n}`).toString().split('\t')[0]), 0)
let layerGrowth = 0
for (let i = 0; i < N; i++) {
  t.run.push(await timed(() => sbx.commands.run('true')))
  t.pause.push(await timed(() => sbx.pause()))
  t.resume.push(await timed(() => Sandbox.connect(sbx.sandboxId)))
  const ours = async () => {
    t.twin_pause.push(await timed(() => sbxTwin.pause()))
    t.twin_resume.push(await timed(() => Sandbox.connect(sbxTwin.sandboxId)))
  }
  const theirs = async () => {
    t.before_pause.push(await timed(() => sbxBefore.pause()))
    t.before_resume.push(await timed(() => Sandbox.connect(sbxBefore.sandboxId, beforeConn)))
  }
  if (sbxBefore && i % 2) { await theirs(); await ours() } else if (sbxBefore) { await ours(); await theirs() } // neither always first
  if (process.env.FLOOR_SRC) {
    t.copy_floor.push(await timed(async () => fs.copyFileSync(process.env.FLOOR_SRC, `${process.env.FLOOR_DST}/copy`)))
    fs.unlinkSync(`${process.env.FLOOR_DST}/copy`)
  }
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
if (sbxBefore) { await sbxBefore.kill(); await sbxTwin.kill() }
const out = { n: N, data_bytes: Number(size), unchanged_snapshot_layer_bytes: layerGrowth }
for (const [k, v] of Object.entries(t)) if (v.length) out[k] = { median: q(v, 0.5), p90: q(v, 0.9) }
console.log(JSON.stringify(out))
