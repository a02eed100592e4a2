// bench/e2b_ports.mjs — the sandbox bench/e2b_ports.sh measures the port
// proxy on (not a bench itself): made through the real SDK, a python3
// server started in it on port 8000 (/big: 100 MiB from memory, /small: 2
// bytes), its argv carrying MARK so that the script finds its pid on the
// host (for nsenter).  Prints the sandbox's id once /small answers through
// the proxy; the sandbox lives on (the script's server ends it).
import { Sandbox } from 'e2b'
const server = String.raw`
import http.server, sys
CHUNK = b"x" * (1 << 20)
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        n = 100 if self.path == "/big" else 0
        self.send_response(200)
        self.send_header("Content-Length", str(n << 20 if n else 2))
        self.end_headers()
        if not n:
            self.wfile.write(b"ok")
        for _ in range(n):
            self.wfile.write(CHUNK)
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H).serve_forever()
`
const sbx = await Sandbox.create({ timeoutMs: 1_800_000 })
await sbx.files.write('/home/user/srv.py', server)
await sbx.commands.run(`python3 /home/user/srv.py ${process.env.MARK}`, { background: true, timeoutMs: 0 })
for (let i = 0; i < 100; i++) {
  const r = await fetch(`${process.env.E2B_SANDBOX_URL}/small`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000' } })
  if (r.status === 200) { console.log(sbx.sandboxId); process.exit(0) }
  await new Promise((res) => setTimeout(res, 100))
}
process.exit(1)
