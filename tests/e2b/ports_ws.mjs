// tests/e2b/ports_ws.mjs — WebSockets to a sandbox's port through the E2B
// listener (SPEC §18 "Ports"), run by tests/e2b/ports_ws.sh under
// --e2b-max-sockets 4 --max-connections 16 (8 in all): the real SDK makes
// the sandboxes and gives getHost(port); the client is the `ws` package
// (pinned in package-lock.json), its lookup answering *.localhost with
// 127.0.0.1 as a browser does.  The server in the sandbox is a WebSocket
// echo written by hand on python3's standard library (ws_echo below).
import { Sandbox } from 'e2b'
import WebSocket from 'ws'
import { randomBytes } from 'node:crypto'
import dns from 'node:dns'
import { checks, eq, sleep } from './checks.mjs'

const { check, failed } = checks('e2b ports ws')
process.on('uncaughtException', (e) => { console.log(`FAIL: e2b ports ws: stopped by ${e && e.constructor && e.constructor.name}: ${e && e.message}`); process.exit(1) })
const PORT = 8765
const wsEcho = String.raw`
import base64, hashlib, socketserver, struct, time
G = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
def frame(b0, data):
    n = len(data)
    h = bytes([b0]) + (bytes([n]) if n < 126 else b"\x7e" + struct.pack(">H", n) if n < 65536 else b"\x7f" + struct.pack(">Q", n))
    return h + data
class H(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        buf = b""
        while b"\r\n\r\n" not in buf:
            b = s.recv(65536)
            if not b:
                return
            buf += b
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        path = lines[0].split()[1]
        hd = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        if path == "/refuse" or hd.get("upgrade", "").lower() != "websocket":
            body = b"no websocket here"
            s.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\nX-From: sandbox\r\n\r\n" % len(body) + body)
            time.sleep(60)  # an HTTP/1.1 server keeps the connection: the answer ends at its length
            return
        acc = base64.b64encode(hashlib.sha1(hd["sec-websocket-key"].encode() + G).digest())
        s.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Accept: " + acc + b"\r\nX-From: sandbox\r\n\r\n")
        if path == "/close":
            s.sendall(frame(0x81, b"bye"))
            return  # the upstream closes, without a close frame
        def need(n):
            nonlocal buf
            while len(buf) < n:
                b = s.recv(1 << 20)
                if not b:
                    raise EOFError
                buf += b
            out, buf = buf[:n], buf[n:]
            return out
        try:
            while True:
                b0, b1 = need(2)
                op, n = b0 & 15, b1 & 127
                if n == 126:
                    n = struct.unpack(">H", need(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", need(8))[0]
                mask = need(4) if b1 & 128 else b"\0\0\0\0"
                d = need(n)
                m = (mask * (n // 4 + 1))[:n]
                d = (int.from_bytes(d, "big") ^ int.from_bytes(m, "big")).to_bytes(n, "big") if n else b""
                if op == 8:
                    s.sendall(frame(0x88, d[:2]))
                    return
                s.sendall(frame(0x8a if op == 9 else b0, d))
        except EOFError:
            return
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
S(("127.0.0.1", ${PORT}), H).serve_forever()
`
// a browser resolves *.localhost to the loopback; node does not
const lookup = (host, o, cb) => {
  if (typeof o === 'function') { cb = o; o = {} }
  if (/\.localhost$/.test(host)) return o && o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)
  return dns.lookup(host, o, cb)
}
// open(url): {ws, status, headers} once it is open (101) or refused (its status, body)
const open = (url, headers = {}) => new Promise((resolve) => {
  const ws = new WebSocket(url, { lookup, headers, maxPayload: 4 << 20 })
  ws.inbox = [] // (a message may come with the 101: kept from the start)
  ws.waiting = []
  ws.on('message', (d, binary) => { const w = ws.waiting.shift(); if (w) w({ d, binary }); else ws.inbox.push({ d, binary }) })
  ws.on('upgrade', (res) => { ws.upgradeHeaders = res.headers })
  ws.on('open', () => resolve({ ws, status: 101, headers: ws.upgradeHeaders }))
  ws.on('unexpected-response', (req, res) => {
    let body = ''
    res.on('data', (d) => { body += d })
    res.on('end', () => resolve({ ws: null, status: res.statusCode, body, headers: res.headers }))
  })
  ws.on('error', (e) => resolve({ ws: null, status: 0, body: String(e.message) }))
})
const message = (ws) => new Promise((resolve) => { if (ws.inbox.length) resolve(ws.inbox.shift()); else ws.waiting.push(resolve) })
const closed = (ws) => new Promise((resolve) => { if (ws.readyState === WebSocket.CLOSED) resolve(-1); else ws.once('close', (code) => resolve(code)) })
// the server's up when a refused upgrade is answered by it (400)
const up = async (sbx, headers = {}) => {
  await sbx.files.write('/home/user/ws_echo.py', wsEcho)
  await sbx.commands.run('python3 /home/user/ws_echo.py', { background: true, timeoutMs: 0 })
  for (let i = 0; i < 100; i++) {
    const r = await open(`ws://${sbx.getHost(PORT)}/refuse`, headers)
    if (r.status === 400) return true
    await sleep(100)
  }
  return false
}

if (process.argv[2] === 'hold') { // a socket held open while ports_ws.sh stops the server
  const h = await Sandbox.create({ timeoutMs: 120_000 })
  await up(h)
  const r = await open(`ws://${h.getHost(PORT)}/`)
  if (r.status !== 101) { console.log(`FAIL: e2b ports ws: the held socket: ${r.status}`); process.exit(1) }
  const cl = closed(r.ws)
  console.log('HELD')
  const code = await Promise.race([cl, sleep(60_000).then(() => 'still open 60 s after')])
  await check('the server\'s stop closes the WebSockets it holds', async () => eq(code, 1006))
  process.exit(failed() ? 1 : 0)
}
if (process.argv[2] === 'spent') { // ports_bytes.sh: --e2b-port-bytes 1048576
  const s = await Sandbox.create({ timeoutMs: 120_000 })
  await up(s)
  const r = await open(`ws://${s.getHost(PORT)}/`)
  const cl = closed(r.ws)
  let echoed = 0
  for (let i = 0; i < 40 && r.ws.readyState === WebSocket.OPEN; i++) { // 40 x 128 KiB each way: 10 MiB
    const m = message(r.ws)
    r.ws.send(randomBytes(128 << 10))
    if (await Promise.race([m, cl.then(() => null)])) echoed++
  }
  await check('a WebSocket that streams past its sandbox\'s 1 MiB is closed (each echo costs its bytes both ways)', async () =>
    eq([await Promise.race([cl, sleep(30_000).then(() => 'still open')]), echoed >= 2 && echoed <= 4], [1006, true]))
  await check('and the next upgrade to it: 403', async () => eq((await open(`ws://${s.getHost(PORT)}/`)).status, 403))
  await s.kill()
  process.exit(failed() ? 1 : 0)
}
const a = await Sandbox.create({ timeoutMs: 120_000 })
await check('the echo server in the sandbox comes up', async () => up(a))
const url = (sbx, path = '/') => `ws://${sbx.getHost(PORT)}${path}`
const first = await open(url(a))
await check('an upgrade to getHost(port): 101, the upstream\'s headers passed', async () =>
  eq([first.status, first.headers && first.headers['x-from'], first.headers && first.headers.upgrade], [101, 'sandbox', 'websocket']))
const ws = first.ws
await check('a text message echoed', async () => {
  const m = message(ws); ws.send('hello through ward'); const { d, binary } = await m
  return eq([binary, d.toString()], [false, 'hello through ward'])
})
await check('a 1 MiB binary message echoed whole', async () => {
  const big = randomBytes(1 << 20)
  const m = message(ws); ws.send(big); const { d, binary } = await m
  return eq([binary, d.length, Buffer.compare(d, big)], [true, 1 << 20, 0])
})
await check('many small messages, in order', async () => {
  const got = Array.from({ length: 200 }, () => message(ws))
  for (let i = 0; i < 200; i++) ws.send(`m${i}`)
  for (let i = 0; i < 200; i++) got[i] = (await got[i]).d.toString()
  return eq(got.join(','), Array.from({ length: 200 }, (_, i) => `m${i}`).join(','))
})
await check('the client\'s close is answered by the upstream\'s (1000)', async () => {
  const c = closed(ws); ws.close(1000); return eq(await c, 1000)
})
await check('an upstream that closes closes the client (its last message first)', async () => {
  const r = await open(url(a, '/close'))
  if (r.status !== 101) return eq(r.status, 101)
  const m = message(r.ws), c = closed(r.ws)
  return eq([(await m).d.toString(), await c], ['bye', 1006])
})
await check('a refused upgrade: the upstream\'s 400 and body passed through (ended at its Content-Length)', async () => {
  const r = await open(url(a, '/refuse'))
  return eq([r.status, r.body, r.headers['x-from']], [400, 'no websocket here', 'sandbox'])
})
await check('a port nothing listens on: 502', async () => eq((await open(`ws://${a.getHost(PORT + 1)}/`)).status, 502))

// the caps: 4 a sandbox (--e2b-max-sockets 4), 8 in all (half of --max-connections 16)
const held = []
for (let i = 0; i < 4; i++) held.push(await open(url(a)))
await check('4 WebSockets to one sandbox', async () => eq(held.map((r) => r.status), [101, 101, 101, 101]))
await check('the 5th to that sandbox: 429', async () => eq((await open(url(a))).status, 429))
const b = await Sandbox.create({ timeoutMs: 120_000 })
const c = await Sandbox.create({ timeoutMs: 120_000 })
await up(b); await up(c)
for (let i = 0; i < 4; i++) held.push(await open(url(b)))
await check('4 more to another: 8 in all', async () => eq(held.slice(4).map((r) => r.status), [101, 101, 101, 101]))
await check('past 8 in all: 503, for a third sandbox too', async () => eq((await open(url(c))).status, 503))
await check('the held ones still echo', async () => {
  const r = held[7].ws; const m = message(r); r.send('still'); return eq((await m).d.toString(), 'still')
})
for (const r of held.slice(0, 4)) { const cl = closed(r.ws); r.ws.close(1000); await cl }
await check('closed ones give their room back', async () => {
  let st = 0
  for (let i = 0; i < 50 && st !== 101; i++) { const r = await open(url(c)); st = r.status; if (r.ws) { held.push(r); break } await sleep(100) }
  return eq(st, 101)
})
await check('a sandbox killed mid-socket closes its client', async () => {
  const r = held[5].ws
  const cl = closed(r)
  await b.kill()
  const code = await Promise.race([cl, sleep(30_000).then(() => 'still open after 30 s')])
  return eq(code, 1006)
})
for (const r of held) if (r.ws && r.ws.readyState === WebSocket.OPEN) r.ws.close(1000)

const priv = await Sandbox.create({ timeoutMs: 120_000, network: { allowPublicTraffic: false } })
const tok = { 'e2b-traffic-access-token': priv.trafficAccessToken }
await up(priv, tok)
await check('allowPublicTraffic false: an upgrade without the traffic token 403', async () => eq((await open(url(priv))).status, 403))
await check('... with a wrong one 403', async () => eq((await open(url(priv), { 'e2b-traffic-access-token': 'f'.repeat(32) })).status, 403))
await check('... with its traffic token 101, and it echoes', async () => {
  const r = await open(url(priv), tok)
  if (r.status !== 101) return eq(r.status, 101)
  const m = message(r.ws); r.ws.send('private'); const got = (await m).d.toString(); r.ws.close(1000)
  return eq(got, 'private')
})
await check('the SDK still works beside them (envd is not relayed)', async () => eq((await a.commands.run('echo ok')).stdout, 'ok\n'))
await a.kill(); await c.kill(); await priv.kill()
process.exit(failed() ? 1 : 0)
