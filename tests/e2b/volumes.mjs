// tests/e2b/volumes.mjs — E2B volumes with the real SDK (SPEC §18, issue
// 32.5): Volume.create/list/getInfo/destroy, the content API, volumeMounts
// shared by sandboxes of different uids, the byte cap, hostile paths.  One
// mode a run (tests/e2b/volumes.sh runs them, as alice unless it says):
//   main       the whole API as alice; prints "VOL ID NAME TOKEN" of the
//              volume it keeps for the next modes
//   other ID NAME TOKEN   as bob: alice's volume is not his; his own cap
//   after ID NAME         after a runner restart: the volume and its files
//   image      on an image template (bb) whose /mnt, /srv and /opt are its
//              own, read-only: mount points made beneath them
import * as e2b from 'e2b'
import { checks, eq } from './checks.mjs'
const { Sandbox, Volume, VolumeError, VolumeNotFoundError, VolumePathNotFoundError, SandboxError, AuthenticationError, RateLimitError } = e2b

const mode = process.argv[2]
const { check, failed } = checks(`e2b volumes ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b volumes ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
// fn must throw an error of class cls whose message holds text
const throws = async (fn, cls, text = '') => {
  try { await fn() } catch (e) {
    if (!(e instanceof cls) || !String(e.message).includes(text)) throw new Error(`wrong error: ${e && e.constructor && e.constructor.name}: ${e && e.message}`)
    return true
  }
  throw new Error('no error')
}
const run = async (sbx, cmd) => (await sbx.commands.run(cmd)).stdout
const runFails = async (sbx, cmd) => {
  try { await sbx.commands.run(cmd); return 'ran' } catch (e) { return `${e.stderr || ''}${e.message}` }
}
// a raw create (the SDK makes volumeMounts an object: no duplicate paths)
const rawCreate = (mounts) => fetch(`${process.env.E2B_API_URL}/sandboxes`, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'X-API-KEY': process.env.E2B_API_KEY },
  body: JSON.stringify({ templateID: 'base', timeout: 60, volumeMounts: mounts }),
})

if (mode === 'main') {
  const vol = await Volume.create('shared')
  await check('create: an id, the name, a token', async () => eq([vol.name, /^[0-9a-f]{32}$/.test(vol.volumeId), vol.token.length >= 32], ['shared', true, true]))
  await check('a second volume of the same name: 400 (E2B: already exists)', async () => throws(() => Volume.create('shared'), VolumeError, 'already exists'))
  await check('a name outside [a-zA-Z0-9_-]: 400', async () => throws(() => Volume.create('no/slash'), VolumeError, '400'))
  await check('list has it', async () => (await Volume.list()).some((v) => v.volumeId === vol.volumeId && v.name === 'shared'))
  await check('getInfo: its name and token', async () => {
    const i = await Volume.getInfo(vol.volumeId); return eq([i.name, i.token], ['shared', vol.token])
  })
  await check('getInfo of an unknown id: VolumeNotFoundError', async () => throws(() => Volume.getInfo('0'.repeat(32)), VolumeNotFoundError))

  // the content API
  await check('writeFile makes its parents: 201 and its stat', async () => {
    const st = await vol.writeFile('/docs/a.txt', 'from the API', { mode: 0o640 })
    return eq([st.name, st.path, st.type, st.size, st.mode, st.uid], ['a.txt', '/docs/a.txt', 'file', 12, 0o640, 1000]) && st.mtime instanceof Date
  })
  await check('readFile as text and bytes', async () => eq(await vol.readFile('/docs/a.txt'), 'from the API') &&
    eq(Array.from(await vol.readFile('/docs/a.txt', { format: 'bytes' })).length, 12))
  await check('makeDir, exists, getInfo', async () => {
    const st = await vol.makeDir('/empty', { mode: 0o750 })
    return eq([st.type, st.mode], ['directory', 0o750]) && await vol.exists('/empty') && !(await vol.exists('/nothing')) &&
      eq((await vol.getInfo('/docs')).type, 'directory')
  })
  await check('makeDir of missing parents: 404 without force, made with it', async () =>
    (await throws(() => vol.makeDir('/p/q'), VolumePathNotFoundError)) && eq((await vol.makeDir('/p/q', { force: true })).path, '/p/q'))
  await check('list depth 1 and 2', async () => {
    const one = (await vol.list('/')).map((e) => e.path).sort()
    const two = (await vol.list('/', { depth: 2 })).map((e) => e.path).sort()
    return eq(one, ['/docs', '/empty', '/p']) && eq(two, ['/docs', '/docs/a.txt', '/empty', '/p', '/p/q'])
  })
  await check('list of a missing directory: VolumePathNotFoundError', async () => throws(() => vol.list('/nope'), VolumePathNotFoundError))
  await check('updateMetadata sets the mode', async () => eq((await vol.updateMetadata('/docs/a.txt', { mode: 0o600 })).mode, 0o600))
  await check('updateMetadata to another uid: 400 (every file is the sandbox user\'s)', async () =>
    throws(() => vol.updateMetadata('/docs/a.txt', { uid: 0 }), VolumeError, '400'))
  await check('writeFile or makeDir as another uid: 400', async () =>
    (await throws(() => vol.writeFile('/u.txt', 'x', { uid: 0 }), VolumeError, '400')) && (await throws(() => vol.makeDir('/u', { gid: 0 }), VolumeError, '400')) &&
    eq((await vol.writeFile('/u.txt', 'x', { uid: 1000, gid: 1000 })).uid, 1000) && (await vol.remove('/u.txt'), true))
  await check('remove a directory and what it holds', async () => { await vol.remove('/p'); return !(await vol.exists('/p/q')) && !(await vol.exists('/p')) })
  await check('remove of a missing path: VolumePathNotFoundError', async () => throws(() => vol.remove('/p'), VolumePathNotFoundError))
  await check("a path with '..': 400", async () => throws(() => vol.readFile('/docs/../../etc/passwd'), VolumeError, '400'))
  await check('a wrong token: 401 (AuthenticationError)', async () => throws(() => new Volume(vol.volumeId, vol.name, 'f'.repeat(32), vol.domain).readFile('/docs/a.txt'), AuthenticationError, 'wrong volume token'))
  await check("another volume's id with this token: 401", async () => {
    const v2 = await Volume.create('second')
    const mixed = new Volume(v2.volumeId, v2.name, vol.token, vol.domain)
    const r = await throws(() => mixed.list('/'), AuthenticationError, 'wrong volume token').finally(() => Volume.destroy(v2.volumeId))
    return r
  })

  // two sandboxes of different host uids share it
  const a = await Sandbox.create({ timeoutMs: 120_000, volumeMounts: { '/mnt/data': vol } })
  const b = await Sandbox.create({ timeoutMs: 120_000, volumeMounts: { '/home/user/shared': 'shared' } })
  await check('getInfo and list name the mounts', async () => eq((await Sandbox.getInfo(a.sandboxId)).volumeMounts, [{ name: 'shared', path: '/mnt/data' }]) &&
    eq((await Sandbox.list().nextItems()).find((s) => s.sandboxId === b.sandboxId).volumeMounts, [{ name: 'shared', path: '/home/user/shared' }]))
  await check('a sandbox reads what the API wrote, as its own user', async () =>
    eq(await run(a, 'cat /mnt/data/docs/a.txt; stat -c " %u %U" /mnt/data/docs/a.txt'), 'from the API 1000 user\n'))
  await check('the other sandbox sees the first one\'s writes', async () => {
    await run(a, 'echo one > /mnt/data/x && mkdir /mnt/data/adir')
    return eq(await run(b, 'cat /home/user/shared/x'), 'one\n')
  })
  await check('and overwrites its file and writes in its directory', async () => {
    await run(b, 'echo two > /home/user/shared/x && echo in > /home/user/shared/adir/f && chmod 600 /home/user/shared/x')
    return eq(await run(a, 'cat /mnt/data/x /mnt/data/adir/f'), 'two\nin\n')
  })
  await check('the first removes the second\'s file; the API sees it all', async () => {
    await run(a, 'rm /mnt/data/adir/f && echo three >> /mnt/data/x')
    return eq(await vol.readFile('/x'), 'two\nthree\n') && !(await vol.exists('/adir/f'))
  })
  await check('the sandboxes run as different host uids', async () => {
    const ua = await run(a, 'cat /proc/self/uid_map'), ub = await run(b, 'cat /proc/self/uid_map')
    return ua.trim().split(/\s+/)[1] !== ub.trim().split(/\s+/)[1]
  })

  await check('a fork mounts the volume again (its files are not copied: they are the volume\'s)', async () => {
    const [f] = await a.fork()
    await run(f, 'echo fork > /mnt/data/from-fork')
    const r = eq(await run(a, 'cat /mnt/data/from-fork'), 'fork\n'); await f.kill(); return r
  })
  await check('paused without its memory and resumed, it has the volume again', async () => {
    await b.pause({ keepMemory: false })
    await vol.writeFile('/while-paused', 'p')
    const back = await Sandbox.connect(b.sandboxId)
    return eq(await run(back, 'cat /home/user/shared/while-paused'), 'p')
  })
  await run(a, 'rm /mnt/data/from-fork /mnt/data/while-paused')

  // hostile
  await check('a symlink to /etc/shadow, read through the API: the volume\'s /etc/shadow (404), not the host\'s', async () => {
    await run(a, 'ln -s /etc/shadow /mnt/data/shadow && ln -s ../../../../../etc/passwd /mnt/data/up')
    return (await throws(() => vol.readFile('/shadow'), VolumePathNotFoundError)) && (await throws(() => vol.readFile('/up'), VolumePathNotFoundError)) &&
      eq((await vol.getInfo('/shadow')).type, 'symlink')
  })
  await check('a symlink inside the volume is followed inside it', async () => {
    await run(a, 'ln -s /docs/a.txt /mnt/data/alias')
    return eq(await vol.readFile('/alias'), 'from the API')
  })
  await check('makeDir {force} on a link is looked at inside the volume, never on the host: to /etc (the host has it, the volume not) it fails, the link stays', async () => {
    await run(a, 'ln -s /etc /mnt/data/etclink && ln -s /proc/self/fd /mnt/data/fdlink')
    return (await throws(() => vol.makeDir('/etclink', { force: true }), VolumeError)) &&
      (await throws(() => vol.makeDir('/fdlink', { force: true }), VolumeError)) && eq((await vol.getInfo('/etclink')).type, 'symlink')
  })
  await check('makeDir {force} on a link to a directory of the volume (absolute) is that directory', async () => {
    await run(a, 'ln -s /docs /mnt/data/docslink')
    return eq((await vol.makeDir('/docslink', { force: true })).type, 'symlink') && eq(await vol.readFile('/docslink/a.txt'), 'from the API')
  })
  await run(a, 'rm /mnt/data/etclink /mnt/data/fdlink /mnt/data/docslink')
  await check('a hard link to a host file cannot be made in the volume', async () =>
    (await runFails(a, 'ln /etc/hostname /mnt/data/hl')).includes('link'))
  await check('a sandbox cannot reach beyond the volume\'s root', async () => eq(await run(a, 'ls -a /mnt/data/.. | sort | tr "\\n" " "'), '. .. data '))

  // the byte cap (--e2b-volume-max-bytes 33554432)
  await check('dd past the cap inside a sandbox: No space left on device', async () =>
    (await runFails(a, 'dd if=/dev/zero of=/mnt/data/fill bs=1M count=64')).includes('No space left'))
  await run(a, 'rm -f /mnt/data/fill')
  await check('an upload past the cap: 507, the older file stays', async () => {
    await vol.writeFile('/keep.txt', 'old')
    const r = await throws(() => vol.writeFile('/keep.txt', new Uint8Array(40 << 20)), VolumeError, '507')
    return r && eq(await vol.readFile('/keep.txt'), 'old')
  })
  await check('after the failures there is room again', async () => eq((await vol.writeFile('/again.txt', 'x'.repeat(1 << 20))).size, 1 << 20))

  // mount paths
  for (const [p, why] of [['/proc/x', 'builds'], ['/', 'may not be /'], ['/mnt/../etc', 'clean'], ['/dev/shm/v', 'builds'], ['relative', 'absolute'], ['/tmp', "ward's own"]])
    await check(`mount path ${p}: 400`, async () => throws(() => Sandbox.create({ volumeMounts: { [p]: vol } }), SandboxError, why))
  await check('a mount of an unknown volume: 400', async () => throws(() => Sandbox.create({ volumeMounts: { '/mnt/x': 'nosuch' } }), SandboxError, 'no volume of that name'))
  await check('two mounts at one path (raw): 400', async () => {
    const r = await rawCreate([{ name: 'shared', path: '/mnt/a' }, { name: 'shared', path: '/mnt/a' }])
    return eq(r.status, 400) && (await r.text()).includes('same path')
  })
  await check('a mount inside another: 400', async () => {
    const r = await rawCreate([{ name: 'shared', path: '/mnt/a' }, { name: 'shared', path: '/mnt/a/b' }])
    return eq(r.status, 400)
  })

  // delete: E2B's (the name goes, the data is wiped)
  const g = await Volume.create('gone')
  await g.writeFile('/f', 'data')
  const c = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/g': g } })
  await check('a sandbox sees the volume before its delete', async () => eq(await run(c, 'cat /mnt/g/f'), 'data'))
  await check('destroy: true; getInfo then VolumeNotFoundError; destroy again false', async () =>
    eq(await Volume.destroy(g.volumeId), true) && (await throws(() => Volume.getInfo(g.volumeId), VolumeNotFoundError)) && eq(await Volume.destroy(g.volumeId), false))
  await check('its token opens nothing (401)', async () => throws(() => g.readFile('/f'), AuthenticationError, 'wrong volume token'))
  await check('the sandbox that mounts it sees it wiped', async () => eq(await run(c, 'ls -A /mnt/g | wc -l'), '0\n'))
  await check('its name is free again, a new empty volume', async () => {
    const g2 = await Volume.create('gone'); const r = eq(await g2.list('/'), []); await Volume.destroy(g2.volumeId); return r
  })
  await c.kill()

  // a volume outlives its sandboxes
  await a.kill(); await b.kill()
  const d = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/data': 'shared' } })
  await check('a new sandbox finds the files of the killed ones', async () => eq(await run(d, 'cat /data/x'), 'two\nthree\n'))
  await d.kill()
  console.log(`VOL ${vol.volumeId} ${vol.name} ${vol.token}`)
}

if (mode === 'other') {
  const [id, name, token] = process.argv.slice(3)
  await check("another key's volume: not in list", async () => !(await Volume.list()).some((v) => v.volumeId === id))
  await check("getInfo of it: VolumeNotFoundError (its token is not given)", async () => throws(() => Volume.getInfo(id), VolumeNotFoundError))
  await check('destroy of it: false (404), it stays', async () => eq(await Volume.destroy(id), false))
  await check('its name in volumeMounts: 400, no such volume', async () =>
    throws(() => Sandbox.create({ volumeMounts: { '/mnt/x': name } }), SandboxError, 'no volume of that name'))
  await check('his own volume of the same name is his', async () => {
    const mine = await Volume.create(name); const r = eq(await mine.list('/'), []); await Volume.destroy(mine.volumeId); return r
  })
  await check('the token alone still opens the volume (it is the capability E2B gives)', async () =>
    eq(await new Volume(id, name, token).readFile('/docs/a.txt'), 'from the API'))
  await check('--e2b-max-volumes 3: the fourth is 429', async () => {
    const vs = [await Volume.create('c1'), await Volume.create('c2'), await Volume.create('c3')]
    const r = await throws(() => Volume.create('c4'), RateLimitError, '--e2b-max-volumes')
    for (const v of vs) await Volume.destroy(v.volumeId)
    return r
  })
}

if (mode === 'after') {
  const [id, name] = process.argv.slice(3)
  const vol = await Volume.connect(id)
  await check('after a restart: listed, its name and token', async () =>
    (await Volume.list()).some((v) => v.volumeId === id && v.name === name) && vol.token.length >= 32)
  await check('its files', async () => eq(await vol.readFile('/x'), 'two\nthree\n'))
  const s = await Sandbox.create({ timeoutMs: 60_000, volumeMounts: { '/mnt/data': name } })
  await check('a sandbox mounts it and writes to it', async () => {
    await run(s, 'echo after > /mnt/data/after'); return eq(await vol.readFile('/after'), 'after\n')
  })
  await s.kill()
  await check('destroy', async () => eq(await Volume.destroy(id), true))
}
if (mode === 'image') {
  // the image (tests/e2b/volumes.sh): /mnt/keep, /srv/link -> /etc,
  // /opt/file, /opt/dir/deep; none of the mount points below
  const vol = await Volume.create('img')
  await vol.writeFile('/hello', 'hi')
  const s = await Sandbox.create('bb', { timeoutMs: 60_000, volumeMounts: { '/mnt/data': vol, '/opt/dir/deep/v': vol } })
  await check('a mount point in an image directory that lacks it (/mnt/data): made, the volume there', async () =>
    eq(await run(s, 'cat /mnt/data/hello /opt/dir/deep/v/hello'), 'hihi'))
  await check("the image's own entries beside it are there, the directories still read-only", async () =>
    eq(await run(s, 'cat /mnt/keep /opt/file /opt/dir/deep/f'), 'keep\nfile\ndeep\n') &&
    (await runFails(s, 'touch /mnt/new')).includes('Read-only') && (await runFails(s, 'touch /opt/dir/deep/new')).includes('Read-only'))
  await check('the sandbox writes in the volume; the API sees it', async () => {
    await run(s, 'echo from-image > /mnt/data/w'); return eq(await vol.readFile('/w'), 'from-image\n')
  })
  await s.kill()
  const t = await Sandbox.create('bb', { timeoutMs: 60_000, volumeMounts: { '/srv/link/v': vol, '/opt/file/v': 'img' } })
  await check("an image's symlink or file in a mount point's way gives way to a directory (not followed to /etc)", async () =>
    eq(await run(t, 'test -d /srv/link -a ! -L /srv/link && test -d /opt/file && cat /srv/link/v/hello /opt/file/v/hello; ls /etc/v 2>&1 | wc -l'), 'hihi1\n'))
  await t.kill()
  const u = await Sandbox.create('bb', { timeoutMs: 60_000, volumeMounts: { '/srv/link': vol } })
  await check('a mount point that is a symlink in the image: a directory, the volume there', async () =>
    eq(await run(u, 'test ! -L /srv/link && cat /srv/link/hello'), 'hi'))
  await u.kill()
  await Volume.destroy(vol.volumeId)
}
process.exit(failed() ? 1 : 0)
