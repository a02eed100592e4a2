// tests/e2b/life.mjs — a sandbox's life with the real E2B SDK (SPEC §18,
// issue 32.2): pause, connect, autoPause / autoResume, kill and setTimeout
// of a paused one, its state in getInfo and list.  One mode a run (run by
// tests/e2b/life.sh, which restarts the runner between before and after):
//   pause      pause keeps memory: its processes go on after connect
//   files      pause({keepMemory: false}): files kept, processes not
//   auto       lifecycle {onTimeout: 'pause', autoResume: true}
//   kill       kill of a paused sandbox; setTimeout on one; unknown ids
//   caps       under --e2b-max-paused 1 --e2b-paused-bytes 3000000
//   fork       fork({count}): new sandboxes with the source's files, not its processes
//   forkcap    under --max-sessions 3: one entry per fork, the one over it an error
//   snap       createSnapshot, a sandbox from it, listSnapshots, deleteSnapshot
//   snapres    a sandbox made from a snapshot, changed, paused files-only and
//              resumed: exactly its files at the pause, not the snapshot's
//   snapbefore the same paused, the runner then restarted: its id on stdout
//   snapafter ID  resumed after the restart: its files at the pause
//   before     paused, the runner then restarted: its id on stdout
//   after ID   resumed after the restart: its files, not its processes
import * as e2b from 'e2b'
import { checks, eq, sleep } from './checks.mjs'
const { Sandbox, SandboxNotFoundError, SandboxError } = e2b

const mode = process.argv[2]
const { check, failed } = checks(`e2b life ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b life ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const counter = 'i=0; while :; do i=$((i+1)); echo $i > /home/user/count; sleep 0.2; done'
const count = async (sbx) => Number((await sbx.files.read('/home/user/count')).trim())
const state = async (id) => (await Sandbox.getInfo(id)).state
const listed = async (st) => (await Sandbox.list({ query: { state: st } }).nextItems()).map((s) => s.sandboxId)
const throwsA = async (fn, cls) => { try { await fn(); return false } catch (e) { if (!(e instanceof cls)) throw e; return true } }

if (mode === 'pause') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/a.txt', 'kept')
  await sbx.commands.run(counter, { background: true, timeoutMs: 0 })
  await sleep(700)
  await check('pause answers true', async () => eq(await sbx.pause(), true))
  await check('pausing a paused sandbox answers false (409)', async () => eq(await sbx.pause(), false))
  await check('getInfo says paused', async () => eq(await state(sbx.sandboxId), 'paused'))
  await check('list state paused has it, running has not', async () =>
    (await listed(['paused'])).includes(sbx.sandboxId) && !(await listed(['running'])).includes(sbx.sandboxId))
  await check('list without a state has it', async () =>
    (await Sandbox.list().nextItems()).some((s) => s.sandboxId === sbx.sandboxId && s.state === 'paused'))
  await check('setTimeout on a paused sandbox: SandboxNotFoundError (404)', async () =>
    throwsA(() => sbx.setTimeout(60_000), SandboxNotFoundError))
  await check('a command on a paused sandbox fails (502: not running), it stays paused', async () =>
    (await throwsA(() => sbx.commands.run('echo hi'), SandboxError)) && eq(await state(sbx.sandboxId), 'paused'))
  await check('isRunning is false while paused (502)', async () => eq(await sbx.isRunning(), false))
  const other = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 })
  await check('connect resumes it: the same id', async () => eq(other.sandboxId, sbx.sandboxId))
  await check('getInfo says running', async () => eq(await state(sbx.sandboxId), 'running'))
  await check('the old object still works (same tokens): its file', async () => eq(await sbx.files.read('/home/user/a.txt'), 'kept'))
  await check('its process kept its memory and goes on', async () => {
    const a = await count(sbx); await sleep(800); const b = await count(sbx); return a > 1 && b > a
  })
  await check('connect to a running one: 200, it stays running', async () => {
    await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 }); return eq(await state(sbx.sandboxId), 'running')
  })
  await sbx.pause()
  const cold = await Sandbox.connect(sbx.sandboxId, { onResume: 'reboot' })
  await check("connect({onResume: 'reboot'}) of a frozen one: its files, not its processes", async () => {
    const a = await count(cold); await sleep(800)
    return eq(await count(cold), a) && eq(await cold.files.read('/home/user/a.txt'), 'kept')
  })
  await check('pause of an unknown sandbox: SandboxNotFoundError', async () =>
    throwsA(() => Sandbox.pause('nosuchsandbox0'), SandboxNotFoundError))
  await check('connect to an unknown sandbox: SandboxNotFoundError', async () =>
    throwsA(() => Sandbox.connect('nosuchsandbox0'), SandboxNotFoundError))
  await sbx.kill()
} else if (mode === 'files') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/d/b.txt', 'files only')
  await sbx.commands.run(counter, { background: true, timeoutMs: 0 })
  await sleep(700)
  await check('pause({keepMemory: false}) answers true', async () => eq(await sbx.pause({ keepMemory: false }), true))
  await check('getInfo says paused', async () => eq(await state(sbx.sandboxId), 'paused'))
  const back = await Sandbox.connect(sbx.sandboxId)
  await check('connect resumes it under the same id', async () => eq(back.sandboxId, sbx.sandboxId))
  await check('its files are back', async () => eq(await back.files.read('/home/user/d/b.txt'), 'files only'))
  await check('its processes are not (the counter stands still)', async () => {
    const a = await count(back); await sleep(800); return eq(await count(back), a)
  })
  await check('the old object works too (the same tokens)', async () => eq((await sbx.commands.run('cat d/b.txt')).stdout, 'files only'))
  await sbx.kill()
} else if (mode === 'auto') {
  const sbx = await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await sbx.files.write('/home/user/a.txt', 'auto')
  await check('getInfo: lifecycle onTimeout pause, autoResume', async () => {
    const i = await Sandbox.getInfo(sbx.sandboxId); return i.lifecycle && i.lifecycle.onTimeout === 'pause' && i.lifecycle.autoResume === true
  })
  let st = 'running'
  for (let i = 0; i < 40 && st === 'running'; i++) { await sleep(250); st = await state(sbx.sandboxId) }
  await check('at its timeout it is paused, not killed', async () => eq(st, 'paused'))
  await check('the next data-plane call resumes it (autoResume)', async () => eq(await sbx.files.read('/home/user/a.txt'), 'auto'))
  await check('and it runs again', async () => eq(await state(sbx.sandboxId), 'running'))
  const plain = await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause' } })
  st = 'running'
  for (let i = 0; i < 40 && st === 'running'; i++) { await sleep(250); st = await state(plain.sandboxId) }
  await check('without autoResume: paused at its timeout', async () => eq(st, 'paused'))
  await check('without autoResume: a data-plane call does not resume it', async () =>
    (await throwsA(() => plain.commands.run('echo hi'), SandboxError)) && eq(await state(plain.sandboxId), 'paused'))
  const guarded = await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  st = 'running'
  for (let i = 0; i < 40 && st === 'running'; i++) { await sleep(250); st = await state(guarded.sandboxId) }
  await check('hostile: a data-plane call with a wrong token does not resume it (401)', async () => {
    const r = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, { headers: { 'E2b-Sandbox-Id': guarded.sandboxId, 'X-Access-Token': 'f'.repeat(32) } })
    return eq(r.status, 401) && eq(await state(guarded.sandboxId), 'paused')
  })
  // a call answered at once on a running sandbox (commands.list) is, on a
  // paused one, run where the resume may wait (a worker): it resumes it
  await check('autoResume by a call that never waits otherwise (commands.list)', async () =>
    Array.isArray(await guarded.commands.list()) && eq(await state(guarded.sandboxId), 'running'))
  await guarded.kill()
  const dies = await Sandbox.create({ timeoutMs: 2_000 })
  await sleep(4_500)
  await check('without autoPause: killed at its timeout', async () => throwsA(() => state(dies.sandboxId), SandboxNotFoundError))
  await sbx.kill(); await plain.kill()
} else if (mode === 'kill') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/a.txt', 'x')
  await sbx.pause()
  console.log(`ID ${sbx.sandboxId}`)
  await check('kill of a paused sandbox answers true', async () => eq(await sbx.kill(), true))
  await check('then it is gone: getInfo SandboxNotFoundError', async () => throwsA(() => state(sbx.sandboxId), SandboxNotFoundError))
  await check('and connect cannot resume it', async () => throwsA(() => Sandbox.connect(sbx.sandboxId), SandboxNotFoundError))
  await check('a second kill answers false', async () => eq(await sbx.kill(), false))
} else if (mode === 'caps') {
  const a = await Sandbox.create({ timeoutMs: 120_000 })
  const b = await Sandbox.create({ timeoutMs: 120_000 })
  await b.commands.run('head -c 4000000 /dev/zero > big')
  await check('files beyond --e2b-paused-bytes: the pause is refused (507)', async () => {
    try { await b.pause(); return false } catch (e) { return e instanceof SandboxError && /507/.test(e.message) }
  })
  await check('and that sandbox runs on, its files whole', async () =>
    eq((await b.commands.run('stat -c %s big')).stdout.trim(), '4000000'))
  await check('a first pause fits', async () => eq(await a.pause(), true))
  await check('a second one is over --e2b-max-paused 1: refused (429)', async () => {
    await b.commands.run('rm big')
    try { await b.pause({ requestTimeoutMs: 5_000 }); return false } catch (e) { return e instanceof e2b.RateLimitError || /429/.test(e.message) }
  })
  await check('b still runs', async () => eq(await state(b.sandboxId), 'running'))
  const auto = await Sandbox.create({ timeoutMs: 3_000, lifecycle: { onTimeout: 'pause' } })
  let gone = false
  for (let i = 0; i < 60 && !gone; i++) { await sleep(250); gone = await throwsA(() => state(auto.sandboxId), SandboxNotFoundError) }
  await check('an autoPause over the caps is refused: it ends at its timeout (not kept alive)', async () => gone)
  await a.kill(); await b.kill()
} else if (mode === 'fork') {
  const src = await Sandbox.create({ timeoutMs: 120_000, metadata: { role: 'src' } })
  await src.files.write('/home/user/data/a.txt', 'from the source')
  await src.commands.run(counter, { background: true, timeoutMs: 0 })
  await sleep(500)
  const forks = await src.fork({ count: 2, timeoutMs: 60_000 })
  await check('fork({count: 2}) gives two sandboxes', async () => eq(forks.filter((f) => f instanceof Sandbox).length, 2))
  const [f1, f2] = forks
  await check('new ids, not the source\'s', async () => f1.sandboxId !== src.sandboxId && f1.sandboxId !== f2.sandboxId)
  await check('each has the source\'s files', async () =>
    eq(await f1.files.read('/home/user/data/a.txt'), 'from the source') && eq(await f2.files.read('/home/user/data/a.txt'), 'from the source'))
  await check('files only: the source\'s counter does not run in a fork', async () => {
    const a = await count(f1); await sleep(800); return eq(await count(f1), a)
  })
  await check('the source runs on', async () => { const a = await count(src); await sleep(800); return (await count(src)) > a })
  await check('a fork is its own: a write in one is not in the other or the source', async () => {
    await f1.files.write('/home/user/data/a.txt', 'changed in f1')
    return eq(await f2.files.read('/home/user/data/a.txt'), 'from the source') && eq(await src.files.read('/home/user/data/a.txt'), 'from the source')
  })
  await check('a fork keeps the source\'s metadata and is listed running', async () => {
    const i = await Sandbox.getInfo(f1.sandboxId); return eq(i.metadata, { role: 'src' }) && eq(i.state, 'running')
  })
  await src.pause()
  await check('a paused sandbox cannot be forked (409)', async () => {
    try { await src.fork(); return false } catch (e) { return e instanceof SandboxError && /409/.test(e.message) }
  })
  await check('fork of an unknown sandbox: SandboxNotFoundError', async () =>
    throwsA(() => Sandbox.fork('nosuchsandbox0'), SandboxNotFoundError))
  await src.kill(); await f1.kill(); await f2.kill()
} else if (mode === 'forkcap') {
  const src = await Sandbox.create({ timeoutMs: 120_000 })
  const r = await src.fork({ count: 3, timeoutMs: 60_000 })
  await check('count 3 under --max-sessions 3 (the source is one): two sandboxes, one error', async () =>
    eq(r.map((f) => (f instanceof Sandbox ? 'sandbox' : 'error')).sort(), ['error', 'sandbox', 'sandbox']))
  await check('the error is the SDK\'s for a 429', async () => r.some((f) => f instanceof e2b.RateLimitError))
  await check('count 101: 400', async () => {
    try { await src.fork({ count: 101 }); return false } catch (e) { return /400/.test(e.message) }
  })
  for (const f of r) if (f instanceof Sandbox) await f.kill()
  await src.kill()
} else if (mode === 'snap') {
  const src = await Sandbox.create({ timeoutMs: 120_000 })
  await src.files.write('/home/user/proj/a.txt', 'snapshotted')
  await src.commands.run('mkdir -p proj/deep && echo deep > proj/deep/b.txt && ln -s a.txt proj/link')
  const s1 = await src.createSnapshot({ name: 'snap-one' })
  await check('createSnapshot answers its id and names', async () => eq(s1, { snapshotId: 'snap-one', names: ['snap-one'] }))
  console.log(`SNAP ${src.sandboxId}`)
  await check('the source runs on', async () => eq((await src.commands.run('echo on')).stdout, 'on\n'))
  await sleep(1100) // a second later: a time that would show in the layer shows
  const again = await src.createSnapshot({ name: 'snap-two' })
  await check('a second snapshot with nothing changed', async () => eq(again.snapshotId, 'snap-two'))
  const unnamed = await src.createSnapshot()
  await check('an unnamed snapshot gets a name of its own', async () => typeof unnamed.snapshotId === 'string' && unnamed.snapshotId.startsWith(src.sandboxId))
  await src.files.write('/home/user/proj/a.txt', 'changed after')
  const made = await Sandbox.create('snap-one', { timeoutMs: 60_000 })
  await check('Sandbox.create(snapshotID): its files as they were', async () =>
    eq(await made.files.read('/home/user/proj/a.txt'), 'snapshotted') && eq(await made.files.read('/home/user/proj/deep/b.txt'), 'deep\n'))
  await check('... a link kept as a link', async () => eq((await made.commands.run('readlink proj/link')).stdout, 'a.txt\n'))
  await check('... owned by the sandbox\'s user, writable', async () => eq((await made.commands.run('echo w >> proj/a.txt && stat -c %U proj/a.txt')).stdout, 'user\n'))
  const listed = async (o) => (await Sandbox.listSnapshots(o).nextItems()).map((s) => s.snapshotId).sort()
  await check('listSnapshots lists them', async () => { const l = await listed(); return l.includes('snap-one') && l.includes('snap-two') && l.includes(unnamed.snapshotId) })
  await check('listSnapshots({sandboxId}) filters', async () => (await listed({ sandboxId: src.sandboxId })).length === 3 && (await listed({ sandboxId: made.sandboxId })).length === 0)
  await check('deleteSnapshot answers true', async () => eq(await Sandbox.deleteSnapshot('snap-two'), true))
  await check('then it is not listed, and a second delete answers false', async () =>
    !(await listed()).includes('snap-two') && eq(await Sandbox.deleteSnapshot('snap-two'), false))
  await check('a deleted snapshot is no template any more (400)', async () => {
    try { await Sandbox.create('snap-two'); return false } catch (e) { return /400/.test(e.message) }
  })
  await check('createSnapshot of an unknown sandbox: SandboxNotFoundError', async () =>
    throwsA(() => Sandbox.createSnapshot('nosuchsandbox0', { name: 'x' }), SandboxNotFoundError))
  await made.kill(); await src.kill()
} else if (mode === 'snapother') {
  // another API key: alice's snapshot is neither listed, used, nor deleted
  await check('another key does not list it', async () => !(await Sandbox.listSnapshots().nextItems()).some((s) => s.snapshotId === 'snap-one'))
  await check('another key cannot create from it (400)', async () => {
    try { await Sandbox.create('snap-one'); return false } catch (e) { if (/400/.test(e.message)) return true; throw e }
  })
  await check('another key cannot delete it', async () => eq(await Sandbox.deleteSnapshot('snap-one'), false))
} else if (mode === 'snapres' || mode === 'snapbefore') {
  const src = await Sandbox.create({ timeoutMs: 120_000 })
  await src.commands.run('mkdir -p p && echo orig > p/changed.txt && echo orig > p/gone.txt && echo orig > p/kept.txt')
  const snap = (await src.createSnapshot({ name: `snap-${mode}` })).snapshotId
  await src.kill()
  const sbx = await Sandbox.create(snap, { timeoutMs: 120_000 })
  await sbx.commands.run('rm p/gone.txt && echo new > p/changed.txt && echo made > p/made.txt')
  const home = async (s) => (await s.commands.run('cd p && for f in *; do printf "%s=%s " $f "$(cat $f)"; done')).stdout
  const want = 'changed.txt=new kept.txt=orig made.txt=made '
  await check('from the snapshot, changed', async () => eq(await home(sbx), want))
  await check('pause({keepMemory: false})', async () => eq(await sbx.pause({ keepMemory: false }), true))
  if (mode === 'snapbefore') {
    console.log(`ID ${sbx.sandboxId}`)
  } else {
    const back = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 })
    await check('resumed: the deleted file stays deleted, the changed one keeps its change', async () => eq(await home(back), want))
    await back.pause()
    const cold = await Sandbox.connect(sbx.sandboxId, { onResume: 'reboot' })
    await check('frozen, resumed cold: the same files', async () => eq(await home(cold), want))
    await cold.pause({ keepMemory: false })
    await Sandbox.deleteSnapshot(snap)
    await check('its snapshot deleted, it still resumes, with its files', async () => {
      const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 }); return eq(await home(again), want)
    })
    await check('getInfo still names the snapshot as its template', async () => eq((await Sandbox.getInfo(sbx.sandboxId)).templateId, snap))
    await Sandbox.kill(sbx.sandboxId)
  }
} else if (mode === 'snapafter') {
  const back = await Sandbox.connect(process.argv[3], { timeoutMs: 60_000 })
  await check('after the restart: the deleted file stays deleted, the changed one keeps its change', async () =>
    eq((await back.commands.run('cd p && for f in *; do printf "%s=%s " $f "$(cat $f)"; done')).stdout,
      'changed.txt=new kept.txt=orig made.txt=made '))
  await back.kill()
} else if (mode === 'before') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/keep/a.txt', 'survives')
  await sbx.commands.run(counter, { background: true, timeoutMs: 0 })
  await sleep(500)
  await check('paused before the restart', async () => eq(await sbx.pause(), true))
  console.log(`ID ${sbx.sandboxId}`)
} else if (mode === 'after') {
  const id = process.argv[3]
  await check('after the restart: listed as paused', async () => (await listed(['paused'])).includes(id))
  const sbx = await Sandbox.connect(id, { timeoutMs: 60_000 })
  await check('connect resumes it', async () => eq(await state(id), 'running'))
  await check('its files came through the restart', async () => eq(await sbx.files.read('/home/user/keep/a.txt'), 'survives'))
  await check('its processes did not (the counter stands still)', async () => {
    const a = await count(sbx); await sleep(800); return eq(await count(sbx), a)
  })
  await check('commands run in it', async () => eq((await sbx.commands.run('echo hi')).stdout, 'hi\n'))
  await sbx.kill()
}
process.exit(failed() ? 1 : 0)
