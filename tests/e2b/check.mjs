// tests/e2b/check.mjs — the PASS:/FAIL: lines of the SDK scripts
// (tests/e2b/*.mjs): checker(prefix) gives check(name, fn) (a throw or
// false fails), pass, fail, eq and sleep; failed() counts the failures.
export function checker(prefix) {
  let failed = 0
  const pass = (n) => console.log(`PASS: ${prefix}: ${n}`)
  const fail = (n, why) => { failed++; console.log(`FAIL: ${prefix}: ${n}: ${why}`) }
  async function check(name, fn) {
    try {
      const r = await fn()
      if (r === false) fail(name, 'check was false')
      else pass(name)
    } catch (e) {
      fail(name, `${e && e.constructor && e.constructor.name}: ${e && e.message}`)
    }
  }
  return { pass, fail, check, failed: () => failed }
}
export const eq = (a, b) => { if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${JSON.stringify(a)} != ${JSON.stringify(b)}`); return true }
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
