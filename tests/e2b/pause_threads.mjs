// tests/e2b/pause_threads.mjs — paused sandboxes hold no thread of ward's
// (issue 32: "a paused sandbox holds no CPU and no ward thread"), with the
// real SDK; tests/e2b/pause_threads.sh counts the server's threads between
// the modes:
//   warm       a sandbox made, a command in it, paused, resumed, killed:
//              what the server starts once (the dialect's own threads) runs
//   make N     N sandboxes, each with a background counter, all paused:
//              their ids on stdout ("ID ...")
//   resume ID... each resumed: its counter goes on; then killed
import * as e2b from 'e2b'
import { checks, eq, sleep } from './checks.mjs'
const { Sandbox } = e2b

const mode = process.argv[2]
const { check, failed } = checks(`e2b pause threads ${mode}`)
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b pause threads ${mode}: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const counter = 'i=0; while :; do i=$((i+1)); echo $i > /home/user/count; sleep 0.1; done'
const count = async (sbx) => Number((await sbx.files.read('/home/user/count')).trim())
const until = async (fn) => { for (let i = 0; i < 100; i++) { if (await fn()) return true; await sleep(100) } return false }

if (mode === 'warm') {
  const sbx = await Sandbox.create({ timeoutMs: 120_000 })
  await sbx.commands.run(counter, { background: true, timeoutMs: 0 })
  await check('warm: paused', async () => eq(await sbx.pause(), true))
  await Sandbox.connect(sbx.sandboxId)
  await check('warm: killed', async () => eq(await sbx.kill(), true))
} else if (mode === 'make') {
  const n = Number(process.argv[3])
  const made = await Promise.all(Array.from({ length: n }, () => Sandbox.create({ timeoutMs: 120_000 })))
  for (const sbx of made) await sbx.commands.run(counter, { background: true, timeoutMs: 0 })
  let counting = 0
  for (const sbx of made) if (await until(async () => (await count(sbx).catch(() => 0)) > 0)) counting++
  await check(`${n} sandboxes count in the background`, async () => eq(counting, n))
  let paused = 0
  for (const sbx of made) if (await sbx.pause()) paused++
  await check(`${n} sandboxes paused`, async () => eq(paused, n))
  for (const sbx of made) console.log(`ID ${sbx.sandboxId}`)
} else if (mode === 'resume') {
  let on = 0
  for (const id of process.argv.slice(3)) {
    const sbx = await Sandbox.connect(id, { timeoutMs: 120_000 })
    const c0 = await count(sbx)
    if (await until(async () => (await count(sbx)) > c0)) on++
    await sbx.kill()
  }
  await check('resumed: every background counter goes on', async () => eq(on, process.argv.length - 3))
}
process.exit(failed() ? 1 : 0)
