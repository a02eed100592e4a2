// tests/e2b/voldeleted.mjs — a deleted volume that a sandbox still mounts
// (SPEC §18 Volumes; the second review's vol_deleted), with the real SDK,
// under --e2b-max-volumes 1 of 16 MiB (tests/e2b/voldeleted.sh): it stays
// writable in that sandbox, and it counts against its key until the
// sandbox ends, so the key cannot hold a second image meanwhile; then the
// name is free again.  Prints PASS:/FAIL: lines.
import * as e2b from 'e2b'
import { checks, eq, sleep } from './checks.mjs'
const { Sandbox, Volume, RateLimitError } = e2b

const { check } = checks('e2b voldeleted')
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b voldeleted: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const refused = async (name) => {
  try { await Volume.create(name) } catch (e) {
    if (e instanceof RateLimitError && /counts until the last sandbox that mounts it ends/.test(e.message)) return true
    throw e
  }
  return false
}

const v = await Volume.create('v')
const sbx = await Sandbox.create({ timeoutMs: 120_000, volumeMounts: { '/mnt/v': v } })
await check('destroy while a sandbox mounts it: true', async () => eq(await Volume.destroy(v.volumeId), true))
await check('the sandbox still writes in it, within its image (12 MiB)', async () =>
  eq((await sbx.commands.run('head -c 12582912 /dev/zero > /mnt/v/after && stat -c %s /mnt/v/after')).stdout, '12582912\n'))
await check('its name again while the sandbox mounts it: 429, the deleted one counts (--e2b-max-volumes 1)', () => refused('v'))
await check('another name: 429 as well', () => refused('w'))
await check('the key lists none', async () => eq(await Volume.list(), []))
await sbx.kill()
await check('once its sandbox ended, the name is free: a new empty volume', async () => {
  for (let i = 0; i < 100; i++) { // the kernel lets go of the image as the sandbox's mounts go: soon after the kill
    try {
      const v2 = await Volume.create('v')
      const r = eq(await v2.list('/'), [])
      await Volume.destroy(v2.volumeId)
      return r
    } catch (e) {
      if (!(e instanceof RateLimitError)) throw e
    }
    await sleep(100)
  }
  return false
})
