// tests/e2b/checks.mjs — the PASS:/FAIL: lines the SDK scripts print (not a
// test itself): checks('e2b interp') gives pass, fail, check (a named
// async check: false or a throw is a FAIL saying why) and failed(); eq and
// sleep beside it.  Every SDK script of tests/e2b prints through it.
export function checks(prefix) {
  let failed = 0
  const pass = (n) => console.log(`PASS: ${prefix}: ${n}`)
  const fail = (n, why) => { failed++; console.log(`FAIL: ${prefix}: ${n}: ${why}`) }
  async function check(name, fn) {
    try {
      const r = await fn()
      if (r === false) fail(name, 'check was false')
      else pass(name)
    } catch (e) {
      fail(name, `${e && e.constructor && e.constructor.name}: ${e && e.message}`.slice(0, 1500))
    }
  }
  return { pass, fail, check, failed: () => failed }
}

// a == b as JSON, else a throw showing both
export function eq(a, b, what = '') {
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`${what}${JSON.stringify(a).slice(0, 700)} != ${JSON.stringify(b).slice(0, 700)}`)
  return true
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
