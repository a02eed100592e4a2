// tests/e2b/sdk.mjs — the real E2B SDK (e2b, @e2b/code-interpreter, pinned
// in package.json) against ward serve --e2b.  Run by tests/e2b/sdk.sh with
// E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY set; prints PASS:/FAIL: lines.
// OTHER_KEY: a second ward token (another client).
import * as e2b from 'e2b'
const { Sandbox, CommandExitError, TimeoutError } = e2b
const SandboxNotFoundError = e2b.SandboxNotFoundError || e2b.NotFoundError
// older SDKs (the floor, 2.14.1) have NotFoundError where 2.51.0 has FileNotFoundError
const FileNotFoundError = e2b.FileNotFoundError || e2b.NotFoundError
import { Sandbox as CISandbox } from '@e2b/code-interpreter'
import { checks, eq } from './checks.mjs'

const { pass, fail, check, failed } = checks('e2b sdk')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const which = process.argv[2] || 'all'

async function core() {
  const t0 = Date.now()
  const sbx = await Sandbox.create('base', { timeoutMs: 120_000, envs: { GLOBAL_E: 'g1' }, metadata: { owner: 'ward test', k: 'v' } })
  pass(`create (${Date.now() - t0} ms)`)
  await check('sandboxId is [a-z0-9]', () => /^[a-z0-9]+$/.test(sbx.sandboxId))
  await check('domain is not E2B\'s', () => !/e2b\.(app|dev)/.test(sbx.sandboxDomain || '') && !!sbx.sandboxDomain)

  // commands
  await check('run echo', async () => { const r = await sbx.commands.run('echo hi'); return eq([r.exitCode, r.stdout], [0, 'hi\n']) })
  await check('run live onStdout/onStderr', async () => {
    const out = [], err = []
    const r = await sbx.commands.run('echo a; echo b >&2; sleep 0.3; echo c', { onStdout: (d) => out.push([d, Date.now()]), onStderr: (d) => err.push(d) })
    eq(out.map((x) => x[0]).join(''), 'a\nc\n'); eq(err.join(''), 'b\n')
    return out.length >= 2 && out[out.length - 1][1] - out[0][1] >= 200 // live, not at the end
  })
  await check('envs over sandbox envs', async () => {
    const r = await sbx.commands.run('echo $GLOBAL_E $FOO $HOME $USER', { envs: { FOO: 'bar' } })
    return eq(r.stdout, 'g1 bar /home/user user\n')
  })
  await check('cwd', async () => { await sbx.commands.run('mkdir -p /home/user/sub'); const r = await sbx.commands.run('pwd', { cwd: '/home/user/sub' }); return eq(r.stdout.trim(), '/home/user/sub') })
  await check('default cwd is /home/user', async () => eq((await sbx.commands.run('pwd')).stdout.trim(), '/home/user'))
  await check('user root accepted', async () => eq((await sbx.commands.run('echo ok', { user: 'root' })).stdout, 'ok\n'))
  await check('non-zero exit -> CommandExitError', async () => {
    try { await sbx.commands.run('echo oops >&2; exit 3'); return false } catch (e) { return e instanceof CommandExitError && e.exitCode === 3 && e.stderr === 'oops\n' && /exit status 3/.test(e.error) }
  })
  await check('timeoutMs kills the whole tree', async () => {
    const t = Date.now()
    try { await sbx.commands.run('sleep 30 & sleep 30', { timeoutMs: 1000 }); return false } catch (e) {
      if (!(e instanceof TimeoutError)) throw e
    }
    await sleep(500)
    const ps = await sbx.commands.run('ps -e -o comm= | grep -c sleep || true')
    return Date.now() - t < 5000 && eq(ps.stdout.trim(), '0')
  })
  await check('background + list + wait', async () => {
    const h = await sbx.commands.run('sleep 0.5; echo done', { background: true })
    const l = await sbx.commands.list()
    if (!l.some((p) => p.pid === h.pid)) throw new Error('not listed: ' + JSON.stringify(l))
    const r = await h.wait()
    return eq(r.stdout, 'done\n')
  })
  await check('stdin + sendStdin + closeStdin', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(h.pid, 'abc\n')
    await (h.sendStdin ? h.sendStdin('def\n') : sbx.commands.sendStdin(h.pid, 'def\n')) // 2.14.1: no handle.sendStdin
    if (!h.closeStdin) { // 2.14.1: no closeStdin either; the output so far, then a kill
      for (let i = 0; i < 50 && h.stdout !== 'abc\ndef\n'; i++) await sleep(100)
      await h.kill()
      return eq(h.stdout, 'abc\ndef\n')
    }
    await h.closeStdin()
    const r = await h.wait()
    return eq(r.stdout, 'abc\ndef\n')
  })
  await check('connect(pid) + kill(pid) -> signal: killed', async () => {
    const h = await sbx.commands.run('echo started; sleep 60', { background: true, timeoutMs: 0 })
    await h.disconnect()
    const h2 = await sbx.commands.connect(h.pid)
    await sleep(200)
    const killed = await sbx.commands.kill(h.pid)
    try { await h2.wait(); return false } catch (e) {
      return killed === true && e instanceof CommandExitError && e.exitCode === -1 && /killed/.test(e.error) && h2.stdout === 'started\n'
    }
  })
  await check('kill(unknown) -> false', async () => eq(await sbx.commands.kill(999999), false))
  await check('abandoned background stream: the process lives on', async () => {
    const h = await sbx.commands.run('sleep 20', { background: true, timeoutMs: 0 })
    await h.disconnect()
    await sleep(300)
    const l = await sbx.commands.list()
    const alive = l.some((p) => p.pid === h.pid)
    await sbx.commands.kill(h.pid)
    return alive
  })
  await check('kill while a command streams', async () => {
    const out = []
    const h = await sbx.commands.run('while true; do echo x; sleep 0.05; done', { background: true, onStdout: (d) => out.push(d) })
    await sleep(300)
    await h.kill()
    try { await h.wait(); return false } catch (e) { return e instanceof CommandExitError && out.length > 0 }
  })

  // files
  await check('write/read text', async () => { const i = await sbx.files.write('/home/user/a/b.txt', 'hello\n'); eq(i.path, '/home/user/a/b.txt'); return eq(await sbx.files.read('/home/user/a/b.txt'), 'hello\n') })
  await check('write/read bytes 0x00 0xff', async () => {
    const data = new Uint8Array([0, 255, 1, 254, 10, 13]).buffer
    await sbx.files.write('bin.dat', data)
    const back = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
    return eq(Array.from(back), [0, 255, 1, 254, 10, 13])
  })
  await check('read stream', async () => {
    const st = await sbx.files.read('/home/user/a/b.txt', { format: 'stream' })
    const chunks = []
    for await (const c of st) chunks.push(Buffer.from(c))
    return eq(Buffer.concat(chunks).toString(), 'hello\n')
  })
  await check('write many', async () => {
    const r = await sbx.files.write([{ path: '/home/user/m/1.txt', data: 'one' }, { path: 'm/2.txt', data: 'two' }])
    eq(r.map((x) => x.path), ['/home/user/m/1.txt', '/home/user/m/2.txt'])
    return eq(await sbx.files.read('/home/user/m/2.txt'), 'two')
  })
  await check('empty file', async () => { await sbx.files.write('/home/user/empty', ''); return eq(await sbx.files.read('/home/user/empty'), '') })
  await check('commands see written files', async () => eq((await sbx.commands.run('cat /home/user/m/1.txt')).stdout, 'one'))
  await check('list', async () => { const l = await sbx.files.list('/home/user/m'); return eq(l.map((e) => [e.name, e.type]), [['1.txt', 'file'], ['2.txt', 'file']]) })
  await check('exists true/false', async () => eq([await sbx.files.exists('/home/user/m/1.txt'), await sbx.files.exists('/home/user/nope')], [true, false]))
  await check('getInfo', async () => { const i = await sbx.files.getInfo('/home/user/m/1.txt'); return eq([i.name, i.type, i.size, i.path], ['1.txt', 'file', 3, '/home/user/m/1.txt']) })
  await check('makeDir true then false', async () => eq([await sbx.files.makeDir('/home/user/newdir'), await sbx.files.makeDir('/home/user/newdir')], [true, false]))
  await check('rename', async () => { const i = await sbx.files.rename('/home/user/m/1.txt', '/home/user/m/1b.txt'); return eq(i.path, '/home/user/m/1b.txt') && eq(await sbx.files.read('/home/user/m/1b.txt'), 'one') })
  await check('remove', async () => { await sbx.files.remove('/home/user/m/1b.txt'); return eq(await sbx.files.exists('/home/user/m/1b.txt'), false) })
  await check('missing read -> FileNotFoundError', async () => { try { await sbx.files.read('/home/user/nope'); return false } catch (e) { return e instanceof FileNotFoundError } })
  await check('watchDir gets a create event', async () => {
    const events = []
    const w = await sbx.files.watchDir('/home/user/newdir', (ev) => events.push(ev))
    await sleep(300)
    await sbx.files.write('/home/user/newdir/x.txt', 'x')
    for (let i = 0; i < 30 && !events.length; i++) await sleep(100)
    await w.stop()
    return events.some((e) => e.name === 'x.txt' && e.type === 'create')
  })
  // hostile paths
  // every path of the sandbox, as its user sees it (SPEC §18); more in shared.mjs paths
  await check('.. out of home: the sandbox\'s own /etc/passwd', async () => eq(await sbx.files.read('/home/user/../../etc/passwd'), (await sbx.commands.run('cat /etc/passwd')).stdout))
  await check('a path the sandbox\'s user may not read refused', async () => { try { await sbx.files.read('/etc/shadow'); return false } catch (e) { return true } })
  await check('planted symlink to a host path: the sandbox\'s view', async () => {
    await sbx.commands.run('ln -sf /etc/passwd /home/user/pw; ln -sf /proc/1/root/etc/hostname /home/user/hn')
    const mine = await sbx.commands.run('cat /etc/passwd')
    let got
    try { got = await sbx.files.read('/home/user/pw') } catch (e) { got = 'ERR' }
    let hn
    try { hn = await sbx.files.read('/home/user/hn') } catch (e) { hn = 'ERR' }
    const hostPw = (await import('node:fs')).readFileSync('/etc/passwd', 'utf8')
    return (got === 'ERR' || got === mine.stdout) && got !== hostPw && hn !== (await import('node:fs')).readFileSync('/etc/hostname', 'utf8')
  })

  // lifecycle
  await check('setTimeout + getInfo', async () => {
    await sbx.setTimeout(200_000)
    const i = await sbx.getInfo()
    const left = i.endAt.getTime() - Date.now()
    return eq([i.sandboxId, i.templateId, i.metadata.owner, i.state], [sbx.sandboxId, 'base', 'ward test', 'running']) && left > 150_000 && left < 210_000
  })
  await check('Sandbox.list with a metadata filter', async () => {
    const p = Sandbox.list({ query: { metadata: { owner: 'ward test' } } })
    const items = await p.nextItems()
    const none = await Sandbox.list({ query: { metadata: { owner: 'nobody' } } }).nextItems()
    return items.some((s) => s.sandboxId === sbx.sandboxId) && none.length === 0
  })
  await check('Sandbox.connect(id) + run', async () => { const s2 = await Sandbox.connect(sbx.sandboxId); return eq((await s2.commands.run('cat /home/user/a/b.txt')).stdout, 'hello\n') })
  await check('getHost', () => sbx.getHost(3000) === `3000-${sbx.sandboxId}.${sbx.sandboxDomain}`)
  await check('isRunning true', async () => eq(await sbx.isRunning(), true))
  // another key
  if (process.env.OTHER_KEY) {
    await check('another key: connect -> not found', async () => { try { await Sandbox.connect(sbx.sandboxId, { apiKey: process.env.OTHER_KEY }); return false } catch (e) { return e instanceof SandboxNotFoundError } })
    await check('another key: kill -> false, sandbox lives', async () => eq(await Sandbox.kill(sbx.sandboxId, { apiKey: process.env.OTHER_KEY }), false) && eq(await sbx.isRunning(), true))
    await check('another key: not listed', async () => !(await Sandbox.list({ apiKey: process.env.OTHER_KEY }).nextItems()).some((s) => s.sandboxId === sbx.sandboxId))
  }
  console.log(`SANDBOX ${sbx.sandboxId} ${sbx.envdAccessToken || ''}`)
  // 2.14.1's sbx.kill() returns nothing; Sandbox.kill(id) says whether it was there
  await check('kill -> true, again -> false', async () => eq([(await sbx.kill()) !== false, await Sandbox.kill(sbx.sandboxId)], [true, false]))
  await check('isRunning false after kill', async () => eq(await sbx.isRunning(), false))
  await check('run after kill -> SandboxNotFoundError', async () => { try { await sbx.commands.run('true'); return false } catch (e) { return e instanceof SandboxNotFoundError } })
}

async function interp() {
  const sbx = await CISandbox.create({ timeoutMs: 120_000 })
  pass('code interpreter sandbox created')
  await check('runCode stateful', async () => { await sbx.runCode('x = 41'); const e = await sbx.runCode('x + 1'); return eq(e.text, '42') })
  await check('runCode stdout live + logs + executionCount', async () => {
    const got = []
    const e = await sbx.runCode('import time\nprint("a")\ntime.sleep(0.3)\nprint("b")', { onStdout: (m) => got.push([m.line, Date.now()]) })
    return eq(e.logs.stdout, ['a\n', 'b\n']) && got.length === 2 && got[1][1] - got[0][1] >= 200 && e.executionCount >= 3
  })
  await check('runCode stderr', async () => { const e = await sbx.runCode('import sys; print("w", file=sys.stderr)'); return eq(e.logs.stderr, ['w\n']) })
  await check('runCode error', async () => { const e = await sbx.runCode('1/0'); return eq([e.error.name, e.error.value], ['ZeroDivisionError', 'division by zero']) && /Traceback/.test(e.error.traceback) })
  await check('createCodeContext + runCode in it + listCodeContexts', async () => {
    const ctx = await sbx.createCodeContext({ cwd: '/home/user' })
    await sbx.runCode('y = 5', { context: ctx })
    const e = await sbx.runCode('y * 2', { context: ctx })
    const other = await sbx.runCode('"y" in globals()')
    const l = await sbx.listCodeContexts()
    return eq(e.text, '10') && eq(other.text, 'False') && l.some((c) => c.id === ctx.id)
  })
  await check('runCode that never returns: killed at its timeout, context restartable', async () => {
    const ctx = await sbx.createCodeContext()
    await sbx.runCode('z = 7', { context: ctx })
    try { await sbx.runCode('while True: pass', { context: ctx, timeoutMs: 1500 }); return false } catch (e) { if (!(e instanceof TimeoutError) && !/timeout|abort/i.test(String(e))) throw e }
    const after = await sbx.runCode('z', { context: ctx }) // interrupted, state kept
    await sbx.restartCodeContext(ctx)
    const fresh = await sbx.runCode('"z" in globals()', { context: ctx })
    return eq(after.text, '7') && eq(fresh.text, 'False')
  })
  await check('the kernels are not listed as commands', async () => !(await sbx.commands.list()).some((p) => /python3/.test(p.cmd)))
  await check('removeCodeContext', async () => {
    const ctx = await sbx.createCodeContext()
    await sbx.removeCodeContext(ctx)
    return !(await sbx.listCodeContexts()).some((c) => c.id === ctx.id)
  })
  await check('matplotlib png (where the host has it)', async () => {
    const has = await sbx.runCode('import importlib.util; importlib.util.find_spec("matplotlib") is not None')
    if (has.text !== 'True') { console.log('# matplotlib not installed: png not checked'); return true }
    const e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()')
    return e.results.some((r) => r.png && r.png.length > 100)
  })
  await sbx.kill()
}

if (which === 'all' || which === 'core') await core()
if (which === 'all' || which === 'interp') await interp()
process.exit(failed() ? 1 : 0)
