// tests/e2b/fleet.mjs — the SDK through the shipped HAProxy config in front
// of three runners: sandboxes land on several runners, and every later call
// (control plane by path, data plane by E2b-Sandbox-Id) reaches its own.
import { Sandbox } from 'e2b'
let failed = 0
const res = (n, ok, why) => { if (ok) console.log(`PASS: e2b fleet: ${n}`); else { failed++; console.log(`FAIL: e2b fleet: ${n}: ${why}`) } }
const sbs = []
for (let i = 0; i < 6; i++) sbs.push(await Sandbox.create({ timeoutMs: 60_000 }))
const nodes = new Set(sbs.map((s) => s.sandboxId.replace(/[0-9a-f]{32}$/, '')))
res('sandboxes spread over runners', nodes.size >= 2, [...nodes].join(','))
let ok = 0
for (const [i, s] of sbs.entries()) {
  try {
    await s.files.write('/home/user/who', `sandbox ${i}`)
    const r = await s.commands.run('cat /home/user/who; hostname')
    const back = await Sandbox.connect(s.sandboxId)
    const info = await back.getInfo()
    if (r.stdout.startsWith(`sandbox ${i}`) && info.sandboxId === s.sandboxId && (await s.isRunning())) ok++
  } catch (e) { console.log(`# sandbox ${i}: ${e}`) }
}
res('every call of each sandbox reaches its runner (files, commands, connect, getInfo, health)', ok === sbs.length, `${ok}/${sbs.length}`)
let killed = 0
for (const s of sbs) if (await s.kill()) killed++
res('kill through the balancer', killed === sbs.length, `${killed}/${sbs.length}`)
res('killed: not running', !(await sbs[0].isRunning()), 'still running')
process.exit(failed ? 1 : 0)
