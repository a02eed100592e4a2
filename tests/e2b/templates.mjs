// tests/e2b/templates.mjs — E2B templates built from Template() code with
// the real SDK (SPEC §19) against ward serve --e2b: Template.build on a
// base of the store, then Sandbox.create('alias') on the result; and the
// hostile ends (an unknown base, a failing step, an install without the
// network, an upload over its cap).  Run by tests/e2b/templates.sh with
// E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY set and CTX (a scratch
// directory for the files a template copies); prints PASS:/FAIL: lines.
// Mode cli: the template tests/e2b/template-cli.sh made with E2B's CLI;
// mode egress: an aptInstall under --e2b-build-egress (tests/e2b/template-egress.sh).
import * as e2b from 'e2b'
import fs from 'node:fs'
import crypto from 'node:crypto'
import { checks, eq } from './checks.mjs'
const { Sandbox, Template, BuildError } = e2b

const mode = process.argv[2]
const { check, failed } = checks(`e2b templates ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b templates ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const ctx = process.env.CTX
// cond, or a throw that says why
const must = (cond, why) => { if (!cond) throw new Error(why); return true }
// a build that must fail: its BuildError and the log lines it gave
async function fails(t, alias) {
  const logs = []
  try {
    await Template.build(t, alias, { onBuildLogs: (l) => logs.push(String(l.message)) })
  } catch (e) {
    return { error: e, logs: logs.join('\n') }
  }
  throw new Error(`the build of ${alias} succeeded`)
}

if (mode === 'build') {
  fs.mkdirSync(`${ctx}/app/sub`, { recursive: true })
  fs.writeFileSync(`${ctx}/app/hello.txt`, 'hello from the context\n')
  fs.writeFileSync(`${ctx}/app/sub/run.sh`, '#!/bin/sh\necho sub ran\n', { mode: 0o755 })
  fs.writeFileSync(`${ctx}/notes.md`, 'a note\n')
  const t = Template({ fileContextPath: ctx })
    .fromDebianImage()
    .copy('app', '/app')
    .copy('notes.md', '/opt/notes.md', { user: 'user', mode: 0o604 })
    .runCmd('echo built by a step > /app/built.txt && ls /app > /opt/listing')
    .runCmd(['mkdir /srv/u', 'chown user /srv/u'])
    .runCmd('whoami > /srv/u/who', { user: 'user' })
    .setEnvs({ GREETING: 'hello world', SECOND: 'two "quoted"' })
    .setWorkdir('/app')
    .setUser('user')
    .setStartCmd('pwd > /home/user/started.tmp && mv /home/user/started.tmp /home/user/started.txt; exec sleep 600', 'sleep 0')
  const logs = []
  let info
  await check('Template.build succeeds, with build logs', async () => {
    info = await Template.build(t, 'ward-tmpl:v1', { cpuCount: 2, memoryMB: 700, onBuildLogs: (l) => logs.push(String(l.message)) })
    return eq([info.name, !!info.templateId, !!info.buildId], ['ward-tmpl:v1', true, true])
  })
  await check('the build logs name the steps and the image', () => must(/built e2b-ward-tmpl:v1/.test(logs.join('\n')), `logs: ${logs.join(' | ')}`))
  await check('Template.exists: the alias yes, another no', async () => eq([await Template.exists('ward-tmpl'), await Template.exists('no-such-tmpl')], [true, false]))
  const sbx = await Sandbox.create('ward-tmpl', { timeoutMs: 120_000 })
  await check('Sandbox.create(alias) sees the copied files', async () => eq((await sbx.commands.run('cat /app/hello.txt; /app/sub/run.sh; cat /opt/notes.md')).stdout, 'hello from the context\nsub ran\na note\n'))
  await check('copy {mode} and the context\'s modes kept', async () => eq((await sbx.commands.run('stat -c %a /opt/notes.md /app/sub/run.sh /app/hello.txt')).stdout, '604\n755\n644\n'))
  await check('what runCmd steps wrote is there', async () => eq((await sbx.commands.run('cat /app/built.txt /opt/listing')).stdout, 'built by a step\nbuilt.txt\nhello.txt\nsub\n'))
  await check('runCmd with {user} ran as that user', async () => eq((await sbx.commands.run('cat /srv/u/who')).stdout, 'user\n'))
  await check('setEnvs: the sandbox has the env', async () => eq((await sbx.commands.run('echo "$GREETING|$SECOND"')).stdout, 'hello world|two "quoted"\n'))
  await check('setStartCmd: running from the image\'s WORKDIR when the sandbox starts', async () =>
    eq((await sbx.commands.run('for i in $(seq 600); do [ -e /home/user/started.txt ] && break; sleep 0.1; done; cat /home/user/started.txt')).stdout, '/app\n'))
  await check('the root is the template\'s image bound whole (an overlay), /home/user a link to /work, the user in /etc/passwd (its tmpfs read-only)', async () =>
    eq((await sbx.commands.run("grep ' / / ' /proc/self/mountinfo | sed 's/.* - //' | cut -d' ' -f1; readlink /home/user; grep ^user: /etc/passwd; grep ' /etc/passwd ' /proc/self/mountinfo | sed 's/.* - //' | cut -d' ' -f3 | cut -d, -f1")).stdout,
      'overlay\n/work\nuser:x:1000:1000:ward sandbox:/home/user:/bin/sh\nro\n'))
  await check('the sandbox is sized by the build (memoryMB 700, cpuCount 2)', async () => {
    const i = await Sandbox.getInfo(sbx.sandboxId)
    return eq([i.memoryMB, i.cpuCount], [700, 2])
  })
  await sbx.kill()
  await check('Sandbox.create(alias:tag) too', async () => {
    const s2 = await Sandbox.create('ward-tmpl:v1', { timeoutMs: 60_000 })
    const r = await s2.commands.run('cat /app/hello.txt')
    await s2.kill()
    return eq(r.stdout, 'hello from the context\n')
  })
  await check('a second build of the same template from the cache', async () => {
    const i2 = await Template.build(t, 'ward-tmpl:v1', { cpuCount: 2, memoryMB: 700 })
    return eq(i2.templateId, info.templateId)
  })
} else if (mode === 'hostile') {
  await check('an unknown base: BuildError saying how to provide it', async () => {
    const r = await fails(Template().fromImage('no-such-base:7').runCmd('true'), 'bad-base')
    if (!(r.error instanceof BuildError)) throw r.error
    return must(/--e2b-base no-such-base:7=IMAGE/.test(r.error.message) && /ward image pull/.test(r.logs), `${r.error.message} | ${r.logs}`)
  })
  await check('a failing step: BuildError, its output in the logs', async () => {
    const r = await fails(Template().fromDebianImage().runCmd('echo before-the-failure; exit 3'), 'bad-step')
    if (!(r.error instanceof BuildError)) throw r.error
    return must(/before-the-failure/.test(r.logs) && /^step 0: RUN exited with status 3/.test(r.error.message), `${r.error.message} | ${r.logs}`)
  })
  await check('aptInstall without the network: refused, naming --e2b-build-egress', async () => {
    const r = await fails(Template().fromDebianImage().aptInstall(['curl']), 'no-net-apt')
    if (!(r.error instanceof BuildError)) throw r.error
    return must(/aptInstall needs the network/.test(r.error.message) && /--e2b-build-egress/.test(r.error.message), r.error.message)
  })
  await check('pipInstall of a local wheel without the network: refused as clearly', async () => {
    const r = await fails(Template().fromDebianImage().pipInstall(['./pkg-1.0-py3-none-any.whl']), 'no-net-pip')
    if (!(r.error instanceof BuildError)) throw r.error
    return must(/pipInstall needs the network/.test(r.error.message), r.error.message)
  })
  await check('an upload over its cap (--max-body): the build fails at the upload', async () => {
    fs.mkdirSync(`${ctx}/big`, { recursive: true })
    fs.writeFileSync(`${ctx}/big/blob.bin`, crypto.randomBytes(3 << 20))
    const r = await fails(Template({ fileContextPath: ctx }).fromDebianImage().copy('big', '/big'), 'too-big')
    return must(/Failed to upload file: Content Too Large/.test(r.error.message), r.error.message)
  })
  await check('Sandbox.create on a failed template: refused', async () => {
    try { await Sandbox.create('bad-step', { timeoutMs: 10_000 }) } catch (e) { return must(/not offered/.test(e.message), e.message) }
    return false
  })
} else if (mode === 'egress') { // under --e2b-build-egress deb.debian.org
  const logs = []
  await check('aptInstall through the build egress', async () => {
    try { await Template.build(Template().fromDebianImage().aptInstall(['hello']), 'with-hello', { onBuildLogs: (l) => logs.push(String(l.message)) }) } catch (e) { throw new Error(`${e.message} | ${logs.slice(-12).join(' | ')}`) }
    return true
  })
  if (logs.some((l) => /built e2b-with-hello/.test(l))) {
    const sbx = await Sandbox.create('with-hello', { timeoutMs: 60_000 })
    await check('the package is in the sandbox', async () => eq((await sbx.commands.run('hello')).stdout, 'Hello, world!\n'))
    await sbx.kill()
  }
} else if (mode === 'cli') { // after tests/e2b/template-cli.sh's `e2b template create cli-tmpl`
  await check('Template.exists(cli-tmpl)', async () => eq(await Template.exists('cli-tmpl'), true))
  const sbx = await Sandbox.create('cli-tmpl', { timeoutMs: 60_000 })
  await check('the Dockerfile\'s COPY, RUN and ENV are in the sandbox', async () => eq((await sbx.commands.run('cat /srv/site/index.html /srv/site/run.txt; echo "$SITE_NAME $OTHER"')).stdout, 'served by ward\nfrom a RUN\nmysite 2\n'))
  await check('sized by --memory-mb', async () => eq((await Sandbox.getInfo(sbx.sandboxId)).memoryMB, 512))
  await sbx.kill()
}
process.exit(failed() ? 1 : 0)
