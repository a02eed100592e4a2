// tests/e2b/snapkeys.mjs — snapshots and templates between API keys, with
// the real SDK (SPEC §18 Fork and snapshots, §19), run by
// tests/e2b/snapkeys.sh as alice, bob and carol in turn:
//   alice   her template alice-app (a secret baked in) and her snapshots
//           alice-snap (a file in her home), e2b-shared, prod-env
//   bob     cannot build on her template or snapshot by any name (a BuildError
//           as for a base that does not exist, her secret in no log); his own
//           snapshot prod-env and template shared are his, beside hers; a base
//           the operator maps to her snapshot's image builds, without her labels
//   alice2  her snapshots are all hers still, none of bob's is listed as hers;
//           a snapshot of a sandbox made from one of them is a template as well
//   cap     under --e2b-max-snapshots 4 --e2b-snapshot-bytes 10M: 507 past the
//           bytes, 429 past the count (a name of hers replaced is no new one), a
//           deleted one makes room; a refused snapshot leaves no layer (STORE)
// Prints PASS:/FAIL: lines.
import * as e2b from 'e2b'
import fs from 'node:fs'
import crypto from 'node:crypto'
import { checks, eq } from './checks.mjs'
const { Sandbox, Template, BuildError } = e2b

const mode = process.argv[2]
const { check } = checks(`e2b snapkeys ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b snapkeys ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const must = (cond, why) => { if (!cond) throw new Error(why); return true }
const listed = async () => (await Sandbox.listSnapshots().nextItems()).map((s) => s.snapshotId).sort()
// the store's name of alice's snapshot (e2b_snapshot.c: e2b-snap/KEY/NAME)
const aliceFolder = `e2b-snap/${crypto.createHash('sha256').update('alice').digest('hex').slice(0, 16)}`
async function build(t, alias) {
  const logs = []
  try {
    await Template.build(t, alias, { onBuildLogs: (l) => logs.push(String(l.message)) })
    return { ok: true, logs: logs.join('\n') }
  } catch (e) {
    if (!(e instanceof BuildError)) throw e
    return { ok: false, error: e.message, logs: logs.join('\n') }
  }
}
// a refused base reads as a base that does not exist: the same words, the name aside
const unknown = (r, name) => !r.ok && !/4711|0815/.test(r.logs) &&
  r.error.split(name).join('NAME') === `the base image 'NAME' is not in this runner's image store: its operator provides it with \`ward image pull docker://NAME\` (or \`ward image import\`), or maps it to an image of the store with \`ward serve --e2b-base NAME=IMAGE\``
const layers = () => fs.readdirSync(`${process.env.STORE}/layers/sha256`).filter((n) => !n.endsWith('.owners')).length

if (mode === 'alice') {
  await check('alice builds her template alice-app', async () =>
    (await build(Template().fromDebianImage().runCmd('echo ALICE-TEMPLATE-SECRET-4711 > /opt/secret'), 'alice-app')).ok)
  const sbx = await Sandbox.create('minbase', { timeoutMs: 120_000 }) // an image of the store: her snapshot is one over it
  await sbx.files.write('/home/user/notes.txt', 'ALICE-HOME-SECRET-0815')
  for (const name of ['alice-snap', 'e2b-shared', 'prod-env'])
    await check(`alice's snapshot ${name}`, async () => eq((await sbx.createSnapshot({ name })).snapshotId, name))
  await sbx.kill()
} else if (mode === 'bob') {
  const none = await build(Template().fromTemplate('no-such-tmpl').runCmd('true'), 'bob-none')
  await check('fromTemplate of a template that does not exist: refused', () => must(unknown(none, 'e2b-no-such-tmpl:default'), JSON.stringify(none)))
  const t = await build(Template().fromTemplate('alice-app').runCmd('cat /opt/secret'), 'bob-from-tmpl')
  await check('fromTemplate of another key\'s template: refused as one that does not exist', () => must(unknown(t, 'e2b-alice-app:default'), JSON.stringify(t)))
  for (const name of ['e2b-alice-app:default', 'alice-snap:default', `${aliceFolder}/alice-snap:default`]) {
    const r = await build(Template().fromImage(name).runCmd('cat /opt/secret /home/user/notes.txt /work/notes.txt'), 'bob-from-image')
    await check(`fromImage('${name}'), another key's template or snapshot: refused as an image that does not exist`, () => must(unknown(r, name), JSON.stringify(r)))
  }
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.files.write('/home/user/bob.txt', 'bob')
  await check('bob\'s snapshot prod-env, a name alice has too: his (201)', async () => eq(await sbx.createSnapshot({ name: 'prod-env' }), { snapshotId: 'prod-env', names: ['prod-env'] }))
  await sbx.kill()
  await check('bob builds a template shared (the name e2b-shared is alice\'s snapshot)', async () =>
    (await build(Template().fromDebianImage().runCmd('echo bob > /opt/bob'), 'shared')).ok)
  const m = await build(Template().fromImage('snapbase').runCmd('true'), 'bob-from-snap')
  await check('a base the operator maps (--e2b-base) builds, whoever asks', () => must(m.ok, JSON.stringify(m)))
  await check('bob lists his snapshot alone', async () => eq(await listed(), ['prod-env']))
  await check('Sandbox.create(\'prod-env\') as bob: his files', async () => {
    const s = await Sandbox.create('prod-env', { timeoutMs: 60_000 })
    const r = await s.commands.run('cat /home/user/bob.txt; ls /home/user')
    await s.kill()
    return eq(r.stdout, 'bob' + 'bob.txt\n')
  })
} else if (mode === 'alice2') {
  await check('alice\'s snapshots are hers, none of bob\'s images among them', async () => eq(await listed(), ['alice-snap', 'e2b-shared', 'prod-env']))
  for (const name of ['e2b-shared', 'prod-env'])
    await check(`Sandbox.create('${name}') as alice: her files (bob's template and snapshot beside it)`, async () => {
      const s = await Sandbox.create(name, { timeoutMs: 60_000 })
      const r = await s.commands.run('cat /home/user/notes.txt')
      await s.kill()
      return eq(r.stdout, 'ALICE-HOME-SECRET-0815')
    })
  await check('alice cannot delete bob\'s template image as a snapshot', async () => eq(await Sandbox.deleteSnapshot('e2b-bob-from-snap'), false))
  await check('a snapshot of a sandbox made from her snapshot is a template too (400 before): both homes\' files', async () => {
    const s1 = await Sandbox.create('alice-snap', { timeoutMs: 60_000 })
    await s1.files.write('/home/user/more.txt', 'more')
    await s1.createSnapshot({ name: 'alice-snap2' })
    await s1.kill()
    const s2 = await Sandbox.create('alice-snap2', { timeoutMs: 60_000 })
    const r = await s2.commands.run('cat /home/user/notes.txt /home/user/more.txt')
    await s2.kill()
    return eq(r.stdout, 'ALICE-HOME-SECRET-0815more')
  })
} else if (mode === 'cap') {
  const sbx = await Sandbox.create({ timeoutMs: 300_000 })
  const blob = async (name) => { await sbx.commands.run(`rm -f /home/user/*.bin; head -c 4194304 /dev/urandom > /home/user/${name}.bin`) }
  const refused = async (name, re) => {
    const before = layers()
    try { await sbx.createSnapshot({ name }) } catch (e) { return must(re.test(e.message), e.message) && eq(layers(), before) }
    return false
  }
  await blob('a')
  await check('a snapshot of 4 MiB', async () => eq((await sbx.createSnapshot({ name: 's0' })).snapshotId, 's0'))
  await blob('b')
  await check('a second of 4 MiB', async () => eq((await sbx.createSnapshot({ name: 's1' })).snapshotId, 's1'))
  await blob('c')
  await check('a third of 4 MiB: past --e2b-snapshot-bytes 10M, refused (507), no layer left', () => refused('s2', /--e2b-snapshot-bytes/))
  await sbx.commands.run('rm -f /home/user/*.bin')
  for (const name of ['s2', 's3'])
    await check(`small snapshot ${name}`, async () => eq((await sbx.createSnapshot({ name })).snapshotId, name))
  await sbx.commands.run('echo fifth > /home/user/five.txt')
  await check('a fifth: past --e2b-max-snapshots 4, refused (429), no layer left', () => refused('s4', /--e2b-max-snapshots 4/))
  await check('s3 again (a name of its own replaced): no new snapshot, 201', async () => eq((await sbx.createSnapshot({ name: 's3' })).snapshotId, 's3'))
  await check('one deleted makes room', async () => eq(await Sandbox.deleteSnapshot('s0'), true) && eq((await sbx.createSnapshot({ name: 's4' })).snapshotId, 's4'))
  await check('its four listed', async () => eq(await listed(), ['s1', 's2', 's3', 's4']))
  await sbx.kill()
}
