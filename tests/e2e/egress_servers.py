#!/usr/bin/python3
"""egress_servers.py DIR CERT KEY — the local servers tests/e2e/egress.sh and
tests/serve/egress.sh reach through ward's egress proxy, all on 127.0.0.1
port 0: an HTTP server of DIR, the same over TLS (CERT, KEY: a self-signed
pair the test made), a "slow" server that accepts and never answers, and a
UDP listener that counts datagrams into DIR/../udp_count.  Prints
"HTTP HTTPS SLOW UDP" (the ports) on one line, then serves until killed."""
import http.server, os, socket, ssl, sys, threading

root, cert, key = sys.argv[1], sys.argv[2], sys.argv[3]
os.chdir(root)
count_file = os.path.join(os.path.dirname(os.path.abspath(root)), "udp_count")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def http_server(tls):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    s.daemon_threads = True
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


def slow_server():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    held = []

    def loop():
        while True:
            c, _ = ls.accept()
            held.append(c)  # read nothing, answer nothing: a slow-loris upstream
            if len(held) > 200:
                held.pop(0).close()
    threading.Thread(target=loop, daemon=True).start()
    return ls.getsockname()[1]


def udp_listener():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    with open(count_file, "w") as f:
        f.write("0\n")

    def loop():
        n = 0
        while True:
            u.recvfrom(2048)
            n += 1
            with open(count_file, "w") as f:
                f.write("%d\n" % n)
    threading.Thread(target=loop, daemon=True).start()
    return u.getsockname()[1]


print(http_server(False), http_server(True), slow_server(), udp_listener(), flush=True)
threading.Event().wait()
