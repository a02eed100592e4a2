// tests/e2b/ports_bytes.mjs — the bytes a sandbox's ports relay, charged to
// that sandbox (SPEC §18 "Ports"), run by tests/e2b/ports_bytes.sh under
// --e2b-port-bytes 1048576: the real SDK makes the sandboxes and gives
// getHost(port); the requests are node's own http client to the listener
// (its Host the getHost URL's, as a browser sends it).  The server in the
// sandbox answers GET /?n=N with N bytes, GET /slow?k=K with 4 bytes (it
// touches slow-K as it begins, and ends once the file release exists), and
// a POST with the length it read.  The script also checks the cap on
// connections at once (--e2b-max-sockets 2: a relay holds a room as a
// WebSocket does, until its answer ends).
import { Sandbox } from 'e2b'
import http from 'node:http'
import { checks, eq, sleep } from './checks.mjs'

const { check, failed } = checks('e2b ports bytes')
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b ports bytes: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const CAP = 1 << 20
const KiB = 1024
const api = new URL(process.env.E2B_API_URL)
const server = String.raw`
import http.server, os, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/slow"):
            open("/home/user/slow-" + self.path.split("k=")[1], "w").close()
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"a")
            for _ in range(1200):
                if os.path.exists("/home/user/release"):
                    break
                time.sleep(0.05)
            self.wfile.write(b"bcd")
            return
        n = int(self.path.split("n=")[1]) if "n=" in self.path else 2
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        while n > 0:
            k = min(n, 65536)
            self.wfile.write(b"x" * k)
            n -= k
    def do_POST(self):
        n, got = int(self.headers.get("Content-Length") or 0), 0
        while got < n:
            got += len(self.rfile.read(min(65536, n - got)))
        body = b"len=%d" % got
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 3000), H).serve_forever()
`
// A request to getHost(3000)'s sandbox through the listener: {status, len,
// whole (the body was all its Content-Length said), body (a short one)}.
const ask = (sbx, path, body) => new Promise((resolve, reject) => {
  const headers = { Host: sbx.getHost(3000) }
  if (body) headers['Content-Length'] = String(body.length)
  const r = http.request({ host: api.hostname, port: api.port, path, method: body ? 'POST' : 'GET', headers, agent: false }, (res) => {
    let len = 0
    const parts = []
    res.on('data', (d) => { len += d.length; if (parts.length < 4) parts.push(d) })
    res.on('error', () => {})
    res.on('close', () => resolve({ status: res.statusCode, len, whole: res.complete, body: Buffer.concat(parts).toString().slice(0, 2000) }))
  })
  r.on('error', (e) => reject(e))
  r.end(body)
})
const up = async (sbx) => {
  await sbx.files.write('/home/user/srv.py', server)
  await sbx.commands.run('python3 /home/user/srv.py', { background: true, timeoutMs: 0 })
  for (let i = 0; i < 100; i++) {
    try { if ((await ask(sbx, '/?n=2')).status === 200) return true } catch (e) { }
    await sleep(100)
  }
  return false
}
// GET /sandboxes/{id}/metrics as it comes (the SDK's getMetrics keeps E2B's fields only)
const metrics = async (sbx) => {
  const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/metrics`, { headers: { 'X-API-Key': process.env.E2B_API_KEY } })
  return (await r.json())[0]
}

const a = await Sandbox.create({ timeoutMs: 120_000 })
const b = await Sandbox.create({ timeoutMs: 120_000 })
await check('the servers in two sandboxes come up', async () => eq([await up(a), await up(b)], [true, true]))
await check('a 600 KiB answer passes whole, within the sandbox\'s 1 MiB', async () => {
  const r = await ask(a, `/?n=${600 * KiB}`)
  return eq([r.status, r.len, r.whole], [200, 600 * KiB, true])
})
await check('getMetrics\' answer says what its ports relayed, and the cap', async () => {
  const m = await metrics(a)
  return eq([m.portBytesUsed > 600 * KiB && m.portBytesUsed < 700 * KiB, m.portBytesTotal], [true, CAP])
})
await check('the count outlives the request: the second 600 KiB answer is cut short', async () => {
  const r = await ask(a, `/?n=${600 * KiB}`)
  return eq([r.status, r.whole, r.len < 600 * KiB - 100 * KiB], [200, false, true])
})
await check('then the sandbox\'s requests answer 403 with E2B\'s JSON, saying why', async () => {
  const r = await ask(a, '/?n=2')
  const j = JSON.parse(r.body)
  return eq([r.status, j.code, j.sandboxId, /--e2b-port-bytes/.test(j.message)], [403, 403, a.sandboxId, true])
})
await check('an upload to a spent sandbox: 403 too', async () => eq((await ask(a, '/', Buffer.alloc(1000, 97))).status, 403))
await check('getMetrics: used is the cap', async () => eq((await metrics(a)).portBytesUsed, CAP))
await check('another sandbox is not charged for it: its 300 KiB answer passes', async () => {
  const r = await ask(b, `/?n=${300 * KiB}`)
  return eq([r.status, r.len, r.whole], [200, 300 * KiB, true])
})
await check('an upload counts: its 700 KiB body relayed...', async () => {
  const r = await ask(b, '/', Buffer.alloc(700 * KiB, 97))
  return eq([r.status, r.body], [201, `len=${700 * KiB}`])
})
await check('... so that a 100 KiB answer after it no longer fits: cut short', async () => {
  const r = await ask(b, `/?n=${100 * KiB}`)
  return eq([r.status, r.whole], [200, false])
})
await check('the SDK still works with the sandbox (envd is not its ports)', async () => eq((await a.commands.run('echo ok')).stdout, 'ok\n'))
await a.kill()
await b.kill()

// a pause that ends its session (files only) and the resume that makes a new one: the count goes on
const c = await Sandbox.create({ timeoutMs: 120_000 })
await up(c)
await check('a third sandbox: its 600 KiB answer passes', async () => eq((await ask(c, `/?n=${600 * KiB}`)).whole, true))
await c.pause({ keepMemory: false })
const back = await Sandbox.connect(c.sandboxId)
await check('resumed from its files (a new session), its server started again', async () => up(back))
await check('its count is still its own: a second 600 KiB answer is cut short', async () => {
  const r = await ask(back, `/?n=${600 * KiB}`)
  return eq([r.status, r.whole], [200, false])
})
await back.kill()

// connections at once: two slow answers hold the sandbox's two rooms
const d = await Sandbox.create({ timeoutMs: 120_000 })
await up(d)
// its body once it ends; the server in the sandbox has begun it once slow-K is there
const slow = (k) => new Promise((resolve, reject) => {
  const r = http.request({ host: api.hostname, port: api.port, path: `/slow?k=${k}`, headers: { Host: d.getHost(3000) }, agent: false }, (res) => {
    let body = ''
    res.on('data', (x) => { body += x })
    res.on('close', () => resolve(body))
  })
  r.on('error', reject)
  r.end()
})
const held = [slow(1), slow(2)]
for (let i = 0; i < 300 && !((await d.files.exists('/home/user/slow-1')) && (await d.files.exists('/home/user/slow-2'))); i++) await sleep(50)
await check('a third relay while two answers stream: 429 (--e2b-max-sockets 2), E2B\'s JSON', async () => {
  const r = await ask(d, '/?n=2')
  const j = JSON.parse(r.body)
  return eq([r.status, j.code, /--e2b-max-sockets/.test(j.message)], [429, 429, true])
})
await check('once they end, their rooms are back', async () => {
  await d.files.write('/home/user/release', '')
  const bodies = await Promise.all(held)
  return eq([bodies, (await ask(d, '/?n=2')).status], [['abcd', 'abcd'], 200])
})
await d.kill()
process.exit(failed() ? 1 : 0)
