// tests/e2b/shared.mjs — the real E2B SDK against a runner that is shared:
// what one tenant may cost the others (issue 30), one mode a run.
// Run by tests/e2b/{slowloris,maxima,paths,watch}.sh with E2B_API_URL /
// E2B_SANDBOX_URL / E2B_API_KEY set; prints PASS:/FAIL: lines.
//   create   one sandbox made, a command run in it, killed
//   maxima   under --max-timeout 5 --max-cpu 2: commands and runCode end
//   cpu      under --e2b-cpu 1: the sandbox's CPU in all
//   paths    the files API reaches the sandbox's paths, never the host's
//   watch    watchDir: events in one merge, its caps
//   sizes    the default sizes (SPEC §18): 256 pids, 1 GiB home and /tmp
//   sizes2   under --e2b-memory 256 --e2b-pids 32 --e2b-disk 100
//   upload   under --max-body 1 MiB --e2b-disk 100: files.write streams to disk
//   rate     under --client-rate 1: a create, a command, a runCode are runs
//   conc     under --client-concurrency 1: a native /exec of the key holds
//            its one run; its E2B command meanwhile is refused (NATIVE_URL)
//   ports    a server in the sandbox reached through the listener
import * as e2b from 'e2b'
import { Sandbox as CISandbox } from '@e2b/code-interpreter'
import fs from 'node:fs'
import { checks, eq, sleep } from './checks.mjs'
const { Sandbox, CommandExitError } = e2b

const mode = process.argv[2]
const { check, failed } = checks(`e2b ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
// a command's end: its exit code, or the error's
async function ends(sbx, cmd, opts) {
  try { const r = await sbx.commands.run(cmd, opts); return { code: r.exitCode, out: r.stdout } } catch (e) {
    if (e instanceof CommandExitError) return { code: e.exitCode, out: e.stdout, error: e.error }
    throw e
  }
}

if (mode === 'create') {
  const sbx = await Sandbox.create({ timeoutMs: 60_000 })
  await check('create and run while the listener is attacked', async () => eq((await sbx.commands.run('echo ok')).stdout, 'ok\n'))
  await check('kill', async () => eq(await sbx.kill(), true))
} else if (mode === 'maxima') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  // the runner has --max-timeout 5 --max-cpu 2: a command without a
  // deadline, or one beyond it, gets --max-timeout; its CPU --max-cpu
  await check('no timeoutMs: ended at --max-timeout (sleep 30 killed)', async () => {
    const r = await ends(sbx, 'sleep 30; echo finished', { timeoutMs: 0 })
    return r.code !== 0 && !/finished/.test(r.out)
  })
  await check('timeoutMs beyond --max-timeout: ended at it', async () => {
    const r = await ends(sbx, 'sleep 30; echo finished', { timeoutMs: 600_000 })
    return r.code !== 0 && !/finished/.test(r.out)
  })
  await check('a background command too', async () => {
    const h = await sbx.commands.run('sleep 30; echo finished', { background: true, timeoutMs: 0 })
    try { await h.wait(); return false } catch (e) { return e instanceof CommandExitError && !/finished/.test(h.stdout) }
  })
  await check('CPU beyond --max-cpu: killed', async () => {
    // 2 s of CPU allowed; the loop wants 4 (in CPU time, whatever the load)
    const r = await ends(sbx, 'python3 -c "import time\nwhile time.process_time() < 4: pass\nprint(\'finished\')"', { timeoutMs: 0 })
    return r.code !== 0 && !/finished/.test(r.out)
  })
  await check('a short command still runs', async () => eq((await sbx.commands.run('echo ok')).stdout, 'ok\n'))
  await sbx.kill()
  const ci = await CISandbox.create({ timeoutMs: 120_000 })
  await check('runCode spinning past --max-timeout: an error, the kernel lives on', async () => {
    const ex = await ci.runCode('x = 41\nwhile True: pass', { timeoutMs: 120_000 })
    if (!ex.error || !/max-timeout/.test(ex.error.value)) throw new Error(JSON.stringify(ex.error))
    const after = await ci.runCode('x + 1')
    return eq(after.text, '42')
  })
  await ci.kill()
} else if (mode === 'cpu') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  // --e2b-cpu 1: the sandbox's CPU in all, every command together; each
  // command alone may use --max-cpu (the default: 300 s)
  await check('the sandbox CPU budget ends a command beyond it', async () => {
    const r = await ends(sbx, 'python3 -c "import time\nwhile time.process_time() < 3: pass\nprint(\'finished\')"', { timeoutMs: 0 })
    return r.code !== 0 && !/finished/.test(r.out)
  })
  await check('and every later command (killed as it starts)', async () => { const r = await ends(sbx, 'sleep 2; echo ok'); return r.code !== 0 && !/ok/.test(r.out) })
  await check('files still work', async () => { await sbx.files.write('/home/user/f', 'x'); return eq(await sbx.files.read('/home/user/f'), 'x') })
  await sbx.kill()
} else if (mode === 'paths') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  const inside = async (cmd) => (await sbx.commands.run(cmd)).stdout
  const host = (p) => { try { return fs.readFileSync(p, 'utf8') } catch (e) { return null } }
  // SPEC §18: every path the sandbox's user may reach, with its permissions
  await check('write /tmp, read it back and from a command', async () => {
    await sbx.files.write('/tmp/from-files', 'hello')
    return eq(await sbx.files.read('/tmp/from-files'), 'hello') && eq(await inside('cat /tmp/from-files'), 'hello')
  })
  await check('read /etc/hostname: the sandbox\'s', async () => eq(await sbx.files.read('/etc/hostname'), await inside('cat /etc/hostname')))
  await check('list /', async () => {
    const names = (await sbx.files.list('/')).map((e) => e.name)
    return ['etc', 'tmp', 'usr', 'home'].every((n) => names.includes(n)) || eq(names, 'etc tmp usr home')
  })
  await check('getInfo of /tmp and of the home: directories', async () => {
    const t = await sbx.files.getInfo('/tmp'), h = await sbx.files.getInfo('/home/user')
    return eq([t.type, t.path, h.type, h.path, h.name], ['dir', '/tmp', 'dir', '/home/user', 'user'])
  })
  await check('makeDir, rename and remove outside the home', async () => {
    await sbx.files.makeDir('/tmp/d1')
    await sbx.files.write('/tmp/d1/a', 'a')
    await sbx.files.rename('/tmp/d1', '/tmp/d2')
    const ok = eq(await sbx.files.read('/tmp/d2/a'), 'a')
    await sbx.files.remove('/tmp/d2')
    return ok && eq(await sbx.files.exists('/tmp/d2'), false)
  })
  await check('a relative path is the home\'s', async () => { await sbx.files.write('rel.txt', 'r'); return eq(await inside('cat /home/user/rel.txt'), 'r') })
  await check('writing a read-only path is refused (the sandbox\'s permissions)', async () => {
    try { await sbx.files.write('/etc/passwd', 'evil'); return false } catch (e) { return !/evil/.test(await inside('cat /etc/passwd')) }
  })
  await check('writing /usr is refused', async () => { try { await sbx.files.write('/usr/bin/evil', 'x'); return false } catch (e) { return true } })
  // hostile: never a host path
  const pw = await inside('cat /etc/passwd')
  await check('/etc/passwd: the sandbox\'s, never the host\'s', async () => {
    const got = await sbx.files.read('/etc/passwd')
    return eq(got, pw) && got !== host('/etc/passwd')
  })
  await check('.. above the root stays in the sandbox', async () => eq(await sbx.files.read('/home/user/../../../../../etc/passwd'), pw))
  await check('planted symlink to /etc/passwd: the sandbox\'s', async () => {
    await inside('ln -sf /etc/passwd /home/user/pw; ln -sf / /home/user/rootlink')
    return eq(await sbx.files.read('/home/user/pw'), pw) && eq(await sbx.files.read('/home/user/rootlink/etc/passwd'), pw)
  })
  await check('/proc/self/root: the sandbox\'s root', async () => eq(await sbx.files.read('/proc/self/root/etc/passwd'), pw))
  await check('/proc/1/root: refused or the sandbox\'s', async () => {
    let got; try { got = await sbx.files.read('/proc/1/root/etc/passwd') } catch (e) { got = pw }
    return eq(got, pw)
  })
  await check('/proc/self/environ and /proc/self/mem: refused (never the server\'s)', async () => {
    for (const p of ['/proc/self/environ', '/proc/self/mem', '/proc/self/cmdline', '/proc/thread-self/environ']) {
      let got = null
      try { got = await sbx.files.read(p) } catch (e) { continue }
      throw new Error(`${p} read: ${JSON.stringify(String(got).slice(0, 80))}`)
    }
    return true
  })
  await check('writing /proc/self/... refused', async () => { try { await sbx.files.write('/proc/self/comm', 'x'); return false } catch (e) { return true } })
  await check('a symlink to the host\'s /etc/shadow: no host bytes', async () => {
    await inside('ln -sf /etc/shadow /home/user/sh')
    let got = ''; try { got = await sbx.files.read('/home/user/sh') } catch (e) { got = '' }
    const h = host('/etc/shadow')
    return !h || !got || got !== h
  })
  await check('remove / and the home refused', async () => {
    let n = 0
    for (const p of ['/', '/home/user', '/home/user/..//user/']) { try { await sbx.files.remove(p) } catch (e) { n++ } }
    return eq(n, 3) && eq(await inside('cat /home/user/rel.txt'), 'r')
  })
  // the user (SPEC §17, §18)
  await check('id -un is user, uid 1000', async () => eq(await inside('id -un; id -u; whoami'), 'user\n1000\nuser\n'))
  await check('/etc/passwd names user with home /home/user', async () => eq(await inside('getent passwd 1000 | cut -d: -f1,3,6'), 'user:1000:/home/user\n'))
  await check('HOME, USER and the cwd', async () => eq(await inside('echo $HOME $USER; pwd; cd ~ && pwd'), '/home/user user\n/home/user\n/home/user\n'))
  await sbx.kill()
} else if (mode === 'sizes' || mode === 'sizes2') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  const big = mode === 'sizes'
  // 150 processes at once: beyond a plain session's 64, within E2B's 256
  const r = await ends(sbx, 'python3 -c "import os, time\nn = 0\ntry:\n  for i in range(150):\n    if os.fork() == 0:\n      time.sleep(3); os._exit(0)\n    n += 1\nexcept OSError: pass\nprint(n)"', { timeoutMs: 60_000 })
  await check(big ? '150 processes at once' : 'fewer than 150 under --e2b-pids 32', async () => eq(r.out.trim() === '150', big))
  // 200 MB in the home and in /tmp: beyond a plain session's 64 MB
  for (const dir of ['/home/user', '/tmp']) {
    const w = await ends(sbx, `head -c 200000000 /dev/zero > ${dir}/fill && echo wrote; rm -f ${dir}/fill`, { timeoutMs: 60_000 })
    await check(big ? `200 MB written in ${dir}` : `200 MB refused in ${dir} under --e2b-disk 100`, async () => eq(/wrote/.test(w.out), big))
  }
  if (big) {
    // getMetrics (SPEC §18): the cgroup's CPU and memory, the home's disk
    await check('getMetrics: one sample with its sizes, the home\'s use, its CPU', async () => {
      await sbx.commands.run('head -c 50000000 /dev/urandom > /home/user/keep; python3 -c "import time\nwhile time.process_time() < 0.5: pass"')
      const m = await sbx.getMetrics()
      if (m.length !== 1) throw new Error(JSON.stringify(m))
      const x = m[0]
      return x.timestamp instanceof Date && !isNaN(x.timestamp) && eq([x.cpuCount, x.memTotal], [1, 512 << 20]) &&
        x.memUsed > 0 && x.diskUsed >= 50000000 && x.diskTotal >= 1000 << 20 && x.diskTotal <= 1024 << 20 && x.cpuUsedPct > 0
    })
  }
  await check('getInfo says its memory', async () => eq((await sbx.getInfo()).memoryMB ?? (await Sandbox.list()).find((x) => x.sandboxId === sbx.sandboxId).memoryMB, big ? 512 : 256))
  await sbx.kill()
} else if (mode === 'upload') {
  const { createHash } = await import('node:crypto')
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  const data = Buffer.alloc(20 << 20)
  for (let i = 0; i < data.length; i += 4096) data.writeUInt32LE((i * 2654435761) >>> 0, i)
  const sha = createHash('sha256').update(data).digest('hex')
  await check('20 MiB written past --max-body (1 MiB), whole', async () => {
    const info = await sbx.files.write('/home/user/big.bin', data)
    eq(info.path, '/home/user/big.bin')
    return eq((await sbx.commands.run('sha256sum /home/user/big.bin')).stdout.split(' ')[0], sha)
  })
  await check('several files in one upload, one in /tmp', async () => {
    const r = await sbx.files.write([{ path: '/home/user/u/1.txt', data: 'one' }, { path: '/tmp/2.bin', data: data.subarray(0, 3 << 20) }])
    eq(r.map((x) => x.path), ['/home/user/u/1.txt', '/tmp/2.bin'])
    return eq((await sbx.commands.run('cat /home/user/u/1.txt; stat -c %s /tmp/2.bin')).stdout, 'one3145728\n')
  })
  await check('an upload beyond the sandbox\'s disk (--e2b-disk 100) refused, the disk not overrun', async () => {
    const huge = Buffer.alloc(130 << 20, 1)
    try { await sbx.files.write('/home/user/huge.bin', huge); return false } catch (e) {
      const used = Number((await sbx.commands.run('du -sm /home/user | cut -f1')).stdout.trim())
      return /507|space|insufficient|storage/i.test(`${e.message} ${e.constructor.name}`) || used <= 101
    }
  })
  await sbx.kill()
} else if (mode === 'rate') {
  // one run a minute: the create takes it; what runs code within the minute is refused
  const sbx = await CISandbox.create({ timeoutMs: 120_000 })
  await check('a command over --client-rate refused', async () => {
    try { await sbx.commands.run('echo no'); return false } catch (e) { return /runs per minute/.test(e.message) }
  })
  await check('a runCode over --client-rate refused', async () => {
    try { const ex = await sbx.runCode('1'); return !!ex.error && /runs per minute/.test(ex.error.value) } catch (e) { return /runs per minute|429/.test(e.message) }
  })
  await check('a create over --client-rate: 429', async () => {
    try { await Sandbox.create(); return false } catch (e) { return /runs per minute/.test(e.message) }
  })
  await check('files are not runs', async () => { await sbx.files.write('/home/user/x', 'x'); return eq(await sbx.files.read('/home/user/x'), 'x') })
  await sbx.kill()
} else if (mode === 'conc') {
  // E2B's requests live the native ones' life (issue 30.4): one key's runs
  // are counted together, whichever API they come through
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  const native = process.env.NATIVE_URL
  const auth = { Authorization: `Bearer ${process.env.E2B_API_KEY}` }
  const exec = fetch(`${native}/exec`, {
    method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ argv: ['sleep', '20'], limits: { timeout_s: 30 } }),
  })
  let running = false
  for (let i = 0; i < 600 && !running; i++) {
    running = /^ward_in_flight 1$/m.test(await (await fetch(`${native}/metrics`, { headers: auth })).text())
    if (!running) await sleep(50)
  }
  await check('a native /exec of the key runs', async () => running)
  await check('its E2B command meanwhile: refused, one run in progress', async () => {
    try { await sbx.commands.run('echo no'); return false } catch (e) { return /runs in progress/.test(e.message) }
  })
  await check('the /exec ends', async () => (await exec).status === 200)
  await check('then the command runs', async () => eq((await sbx.commands.run('echo yes')).stdout, 'yes\n'))
  await sbx.kill()
} else if (mode === 'ports') {
  const http = await import('node:http')
  const api = new URL(process.env.E2B_API_URL)
  // a request to the listener with these headers: [status, body, headers]
  const ask = (path, headers, body) => new Promise((resolve, reject) => {
    const r = http.request({ host: api.hostname, port: api.port, path, method: body ? 'POST' : 'GET', headers }, (res) => {
      const parts = []
      res.on('data', (d) => parts.push(d))
      res.on('end', () => resolve([res.statusCode, Buffer.concat(parts).toString(), res.headers]))
    })
    r.on('error', reject)
    r.end(body)
  })
  const server = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        b = self.rfile.read(n)
        out = ("%s %s host=%s len=%d\\n" % (self.command, self.path, self.headers.get("Host"), len(b))).encode()
        self.send_response(201)
        self.send_header("X-From", "sandbox")
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = answer
http.server.HTTPServer(("127.0.0.1", 3000), H).serve_forever()
`
  const up = async (sbx) => {
    await sbx.files.write('/home/user/srv.py', server)
    await sbx.commands.run('python3 /home/user/srv.py', { background: true, timeoutMs: 0 })
    for (let i = 0; i < 100; i++) {
      const [st] = await ask('/', { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '3000' })
      if (st === 201) return true
      await sleep(100)
    }
    return false
  }
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  if (!(await up(sbx))) console.log('# the server in the sandbox did not come up')
  await check('getHost(3000) is 3000-ID.localhost:PORT', async () => eq(sbx.getHost(3000), `3000-${sbx.sandboxId}.localhost:${api.port}`))
  await check('by E2b-Sandbox-Id and E2b-Sandbox-Port: the sandbox\'s server answers, query and headers kept', async () => {
    const [st, body, h] = await ask('/a/b?x=1&y=%20', { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '3000' })
    return eq([st, h['x-from'], body.split(' ').slice(0, 2).join(' ')], [201, 'sandbox', 'GET /a/b?x=1&y=%20'])
  })
  await check('by Host PORT-ID.DOMAIN (getHost)', async () => {
    const [st, body] = await ask('/via-host', { Host: sbx.getHost(3000) })
    return eq([st, body.startsWith('GET /via-host host=3000-')], [201, true])
  })
  await check('a POST body relayed as it comes (1 MiB)', async () => {
    const [st, body] = await ask('/up', { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '3000', 'Content-Length': String(1 << 20) }, Buffer.alloc(1 << 20, 97))
    return eq([st, body.trim().split(' ').pop()], [201, `len=${1 << 20}`])
  })
  await check('a port nothing listens on: 502 with E2B\'s JSON', async () => {
    const [st, body] = await ask('/', { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '3001' })
    const j = JSON.parse(body)
    return eq([st, j.port, j.code, /port is not open/.test(j.message)], [502, 3001, 502, true])
  })
  await check('an unknown sandbox: 502', async () => eq((await ask('/', { Host: `3000-nosuchsandbox.localhost:${api.port}` }))[0], 502))
  await check('the envd port is not relayed: the SDK still works', async () => eq((await sbx.commands.run('echo ok')).stdout, 'ok\n'))
  const priv = await Sandbox.create({ timeoutMs: 120_000, network: { allowPublicTraffic: false } })
  await up(priv) // its own first probe is refused: it carries no token
  await check('allowPublicTraffic false: no token 403, its traffic token 201', async () => {
    const h = { 'E2b-Sandbox-Id': priv.sandboxId, 'E2b-Sandbox-Port': '3000' }
    await priv.commands.run('python3 /home/user/srv.py', { background: true, timeoutMs: 0 })
    let st = 0
    for (let i = 0; i < 100 && st !== 201; i++) { [st] = await ask('/', { ...h, 'e2b-traffic-access-token': priv.trafficAccessToken }); if (st !== 201) await sleep(100) }
    const [no] = await ask('/', h), [wrong] = await ask('/', { ...h, 'e2b-traffic-access-token': 'x' })
    return eq([no, wrong, st, typeof priv.trafficAccessToken], [403, 403, 201, 'string'])
  })
  await priv.kill()
  await sbx.pause()
  await check('a paused sandbox\'s port: 502 at once (not a frozen server\'s wait), and it stays paused', async () => {
    const [st, body] = await ask('/', { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '3000' })
    return eq([st, /paused/.test(body), (await Sandbox.getInfo(sbx.sandboxId)).state], [502, true, 'paused'])
  })
  await sbx.kill()
  const lazy = await Sandbox.create({ timeoutMs: 120_000, lifecycle: { onTimeout: 'pause', autoResume: true } })
  await up(lazy)
  await lazy.pause()
  await check('autoResume: a request to its port resumes it, its server answers', async () => {
    const [st] = await ask('/again', { 'E2b-Sandbox-Id': lazy.sandboxId, 'E2b-Sandbox-Port': '3000' })
    return eq([st, (await Sandbox.getInfo(lazy.sandboxId)).state], [201, 'running'])
  })
  await lazy.kill()
} else if (mode === 'watch') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.commands.run('mkdir -p /home/user/w && cd /home/user/w && for i in $(seq 1 50); do echo $i > f$i; done')
  await check('create, write and remove seen in one watch', async () => {
    const events = []
    const w = await sbx.files.watchDir('/home/user/w', (ev) => events.push(`${ev.type} ${ev.name}`))
    await sleep(400)
    await sbx.commands.run('cd /home/user/w && echo new > a0 && echo more >> f25 && rm f50 && echo z > zz')
    for (let i = 0; i < 50 && !['create a0', 'write f25', 'remove f50', 'create zz'].every((e) => events.includes(e)); i++) await sleep(100)
    await w.stop()
    return eq(['create a0', 'write f25', 'remove f50', 'create zz'].filter((e) => !events.includes(e)), [])
  })
  await sbx.commands.run('mkdir -p /home/user/big && cd /home/user/big && seq 1 10001 | xargs touch')
  await check('a directory past 10000 entries is refused (resource_exhausted)', async () => {
    try { const w = await sbx.files.watchDir('/home/user/big', () => {}); await w.stop(); return false } catch (e) { return /10000|resource|exhaust/i.test(String(e.message)) }
  })
  await check('8 watches a sandbox; the 9th refused', async () => {
    const ws = []
    // (a watch stopped above counts until the server's next poll sees it
    // gone: a refusal of one of the eight is waited out, bounded)
    for (let i = 0, tries = 0; i < 8; i++) {
      try { ws.push(await sbx.files.watchDir('/home/user/w', () => {})) } catch (e) {
        if (!/watches/.test(String(e.message)) || ++tries > 50) throw e
        i--
        await sleep(200)
      }
    }
    let refused = false
    try { ws.push(await sbx.files.watchDir('/home/user/w', () => {})) } catch (e) { refused = /watches/.test(String(e.message)) }
    for (const w of ws) await w.stop()
    return refused
  })
  await check('stopped watches are counted no more', async () => {
    let w = null
    for (let i = 0; i < 50 && !w; i++) { try { w = await sbx.files.watchDir('/home/user/w', () => {}) } catch (e) { await sleep(200) } }
    if (w) await w.stop()
    return !!w
  })
  await sbx.kill()
}
process.exit(failed() ? 1 : 0)
