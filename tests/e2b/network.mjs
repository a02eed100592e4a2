// tests/e2b/network.mjs — updateNetwork with the real E2B SDK (SPEC §18,
// issue 32.6): the running sandbox's egress allow-list replaced whole,
// within the operator's ceiling, for new connections.  Run by
// tests/e2b/network.sh with PORT (the local upstream's) in the environment:
// the runner's ceiling is pypi.test:PORT and *.files.test:PORT, both pinned
// to 127.0.0.1.
import * as e2b from 'e2b'
import { checks, eq } from './checks.mjs'
const { Sandbox, SandboxNotFoundError, SandboxError } = e2b
const { check, failed } = checks('e2b network')
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b network: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const P = process.env.PORT
const ALL = '0.0.0.0/0'
// the HTTP codes of the two upstreams, as curl in the sandbox gets them
const reach = async (sbx) => (await sbx.commands.run(
  `for h in pypi.test a.files.test; do curl -s -o /dev/null -w '%{http_code} ' --max-time 10 http://$h:${P}/hi.txt; done`)).stdout.trim()
const code = async (fn) => { try { await fn(); return 204 } catch (e) { if (e instanceof SandboxNotFoundError) return 404; const m = /^(\d{3}):/.exec(e.message); if (m) return Number(m[1]); throw e } }

const sbx = await Sandbox.create({ timeoutMs: 120_000, network: { allowOut: [`pypi.test:${P}`], denyOut: [ALL] } })
await check('at create: allowOut pypi.test only', async () => eq(await reach(sbx), '200 403'))
await sbx.updateNetwork({ allowOut: [`a.files.test:${P}`], denyOut: [ALL] })
await check('updateNetwork replaces the list: a.files.test now, pypi.test no more', async () => eq(await reach(sbx), '403 200'))
await check('beyond the operator\'s ceiling: 400', async () => eq(await code(() => sbx.updateNetwork({ allowOut: [`evil.test:${P}`], denyOut: [ALL] })), 400))
await check('... and the list before it stands', async () => eq(await reach(sbx), '403 200'))
await check('a name without ALL_TRAFFIC in denyOut: 400 (as E2B)', async () => eq(await code(() => sbx.updateNetwork({ allowOut: [`pypi.test:${P}`] })), 400))
await check('denyOut other than all traffic: 400 (ward\'s egress is an allow-list)', async () => eq(await code(() => sbx.updateNetwork({ denyOut: ['10.0.0.0/8'] })), 400))
await sbx.updateNetwork({ denyOut: [ALL] })
await check('denyOut ALL_TRAFFIC alone: nothing is reached', async () => eq(await reach(sbx), '403 403'))
await sbx.updateNetwork({})
await check('{}: the default again, the operator\'s ceiling', async () => eq(await reach(sbx), '200 200'))
await sbx.updateNetwork({ allowInternetAccess: false })
await check('allowInternetAccess false: nothing', async () => eq(await reach(sbx), '403 403'))
await check('unknown sandbox: SandboxNotFoundError', async () => eq(await code(() => Sandbox.updateNetwork('nosuchsandbox0', {})), 404))
await sbx.pause()
await check('a paused sandbox: 409', async () => eq(await code(() => sbx.updateNetwork({})), 409))
await sbx.kill()
const off = await Sandbox.create({ timeoutMs: 60_000, allowInternetAccess: false })
await check('a sandbox made without egress has no proxy to change: 409', async () => eq(await code(() => off.updateNetwork({})), 409))
await off.kill()
process.exit(failed() ? 1 : 0)
