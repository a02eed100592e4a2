"""WIRE-FORMAT tests of ward_client's sessions (SPEC §11, §12), against a
tiny fake HTTP server in this process: the fake only checks that the
client sends the right method, path, headers and body, and that it parses
the answers the SPEC describes.  They say nothing about a real runner:
the end-to-end tests of sessions against ``ward serve`` come with the
server's side of sessions.

    cd clients/python && python3 -m unittest -v test_sessions_wire
"""

import http.server
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ward_client import (PIPE, CollectedFile, ExecResult, FileEntry, Limits,  # noqa: E402
                         OutputEvent, Process, Runner, RunnerError, Session,
                         SessionGone, SessionInfo, SessionLimits, node_of)

TOKEN = "wire-token"
SID = "n2.0123456789abcdef0123456789abcdef"
CREATED = {"id": SID, "created_at": "2030-01-01T00:00:00Z", "expires_at": "2030-01-01T01:00:00Z",
           "idle_expires_at": "2030-01-01T00:10:00Z", "isolation": "system",
           "enforced": {"memory": "cgroup-v2", "pids": "cgroup-v2"}}
RESULT = {"status": "nonzero", "exit_code": 3, "signal": None, "timed_out": False,
          "oom_killed": False, "stdout": "out\n", "stderr": "err\n", "stdout_truncated": False,
          "stderr_truncated": False, "stdout_bytes": 4, "stderr_bytes": 4, "error": "",
          "isolation": "system", "enforced": {"memory": "cgroup-v2"},
          "usage": {"wall_ms": 5, "cpu_user_ms": 1, "cpu_sys_ms": 1, "max_rss_kb": 900},
          "files": [{"path": "out/a.bin", "size": 2, "mode": 420, "encoding": "base64",
                     "content": "AP8="}],
          "files_truncated": True}


class Answer:
    """What the fake answers: a status, a body (bytes, or JSON of a dict or
    list) or ``chunks`` (byte strings sent one by one with chunked
    encoding; a callable among them is called at that point), and
    headers."""

    def __init__(self, status=200, body=b"", ctype="application/json", headers=None, chunks=None):
        self.status = status
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.body = body
        self.chunks = chunks
        self.ctype = ctype
        self.headers = headers or {}


class Fake(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen = []          # (method, path, headers, body) of every request
        self.routes = {}        # (method, path) -> Answer
        self.lock = threading.Lock()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        srv = self.server
        with srv.lock:
            srv.seen.append((self.command, self.path, dict(self.headers), body))
            ans = srv.routes.get((self.command, self.path))
        if ans is None:
            ans = Answer(404, {"error": "fake: no route for %s %s" % (self.command, self.path)})
        self.send_response(ans.status)
        self.send_header("Content-Type", ans.ctype)
        for k, v in ans.headers.items():
            self.send_header(k, v)
        if ans.chunks is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in ans.chunks:
                if callable(part):
                    part()
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(ans.body)))
            self.end_headers()
            self.wfile.write(ans.body)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_DELETE = _any


class WireTests(unittest.TestCase):
    """Wire format only: see the module's docstring."""

    def setUp(self):
        self.fake = Fake()
        self.thread = threading.Thread(target=self.fake.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.r = Runner(self.fake.url, token=TOKEN, client="sub-7", timeout=10)
        self.route("POST", "/sessions", Answer(201, CREATED))
        self.route("GET", "/sessions/" + SID, Answer(200, {"id": SID, "state": "idle"}))
        self.route("DELETE", "/sessions/" + SID, Answer(204, b""))

    def tearDown(self):
        self.fake.shutdown()
        self.fake.server_close()
        self.thread.join(10)

    def route(self, method, path, ans):
        self.fake.routes[(method, path)] = ans

    def seen(self, method=None, path=None):
        return [s for s in self.fake.seen
                if (method is None or s[0] == method) and (path is None or s[1] == path)]

    def only(self, method, path):
        got = self.seen(method, path)
        self.assertEqual(len(got), 1, "expected one %s %s, saw %r" % (
            method, path, [(s[0], s[1]) for s in self.fake.seen]))
        return got[0]

    def body_of(self, method, path):
        return json.loads(self.only(method, path)[3])

    def session(self, **kw):
        return self.r.session(**kw)

    # ---- create, attach, list, delete

    def test_create_sends_fields_and_headers_delete_on_exit(self):
        with self.session(limits=SessionLimits(memory_mb=256, pids=32, work_size_mb=100),
                          ttl_s=600, idle_s=60, network="loopback", env={"A": "1"},
                          files=[{"path": "a.txt", "content": "hi"}]) as s:
            self.assertIsInstance(s, Session)
            self.assertEqual(s.id, SID)
            self.assertEqual(s.expires_at, "2030-01-01T01:00:00Z")
            self.assertEqual(s.isolation, "system")
            self.assertEqual(s.enforced.memory, "cgroup-v2")
            self.assertEqual(self.seen("DELETE"), [])
        _, _, headers, raw = self.only("POST", "/sessions")
        self.assertEqual(headers.get("Authorization"), "Bearer " + TOKEN)
        self.assertEqual(headers.get("X-Ward-Client"), "sub-7")
        self.assertEqual(headers.get("Content-Type"), "application/json")
        self.assertEqual(json.loads(raw), {
            "limits": {"memory_mb": 256, "pids": 32, "work_size_mb": 100},
            "ttl_s": 600, "idle_s": 60, "network": "loopback", "env": {"A": "1"},
            "files": [{"path": "a.txt", "content": "hi"}]})
        _, _, headers, _ = self.only("DELETE", "/sessions/" + SID)
        self.assertEqual(headers.get("Authorization"), "Bearer " + TOKEN)

    def test_create_without_options_sends_an_empty_object(self):
        s = self.session()
        self.assertEqual(self.body_of("POST", "/sessions"), {})
        s.close()
        s.close()  # once only
        self.only("DELETE", "/sessions/" + SID)

    def test_with_block_deletes_when_the_block_raises(self):
        with self.assertRaises(KeyError):
            with self.session():
                raise KeyError("boom")
        self.only("DELETE", "/sessions/" + SID)

    def test_exit_of_a_session_already_gone_is_quiet(self):
        self.route("DELETE", "/sessions/" + SID, Answer(404, {"error": "no such session"}))
        with self.session():
            pass
        self.only("DELETE", "/sessions/" + SID)

    def test_create_busy_429_is_the_runner_error_with_retry_after(self):
        self.route("POST", "/sessions", Answer(429, {"error": "too many sessions"},
                                               headers={"Retry-After": "7"}))
        with self.assertRaises(RunnerError) as cm:
            self.session()
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual((cm.exception.status, cm.exception.message, cm.exception.retry_after),
                         (429, "too many sessions", 7.0))

    def test_create_on_a_runner_without_sessions(self):
        self.route("POST", "/sessions", Answer(404, {"error": "unknown path"}))
        with self.assertRaises(RunnerError) as cm:
            self.session()
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual(cm.exception.status, 404)
        self.assertIn("has no sessions", cm.exception.message)

    def test_attach_checks_the_session(self):
        s = self.r.session_attach(SID)
        self.assertEqual(s.id, SID)
        self.only("GET", "/sessions/" + SID)
        with self.assertRaises(SessionGone) as cm:
            self.r.session_attach("n2.ffffffffffffffffffffffffffffffff")
        self.assertEqual(cm.exception.status, 404)

    def test_info(self):
        self.route("GET", "/sessions/" + SID, Answer(200, {
            "id": SID, "state": "busy", "created_at": "t0", "expires_at": "t1",
            "idle_expires_at": "t2", "execs": 4, "new_member": 1,
            "usage": {"memory_bytes": 10, "memory_peak_bytes": 20, "pids": 3, "cpu_ms": 40},
            "processes": [{"pid": 7, "argv": ["sleep", "9"], "state": "running",
                           "exit_code": None, "started_at": "t3"}]}))
        i = self.r.session_attach(SID).info()
        self.assertIsInstance(i, SessionInfo)
        self.assertEqual((i.state, i.execs, i.usage.memory_peak_bytes, i.usage.cpu_ms),
                         ("busy", 4, 20, 40))
        self.assertEqual((i.processes[0].pid, i.processes[0].argv, i.processes[0].exit_code),
                         (7, ["sleep", "9"], None))

    def test_list_and_list_of_one_node(self):
        self.route("GET", "/sessions", Answer(200, [{"id": SID, "state": "idle"}]))
        self.route("GET", "/sessions?node=n2", Answer(200, [{"id": SID}]))
        self.assertEqual([x.id for x in self.r.sessions()], [SID])
        self.assertEqual([x.id for x in self.r.sessions(node="n2")], [SID])
        for bad in ("n2&node=n1", "n 2", "", "x" * 64, "a.b"):
            with self.assertRaises(ValueError, msg=bad):
                self.r.sessions(node=bad)
        self.assertEqual(len(self.seen("GET")), 2)

    def test_the_id_is_one_path_segment(self):
        # an id is the runner's; if it ever held a "/" or "?" it must not
        # become another path
        odd = "n2.ab/../../exec?x"
        s = Session(self.r, odd)
        with self.assertRaises(SessionGone):
            s.info()
        self.assertEqual(self.fake.seen[-1][1], "/sessions/n2.ab%2F..%2F..%2Fexec%3Fx")

    # ---- exec

    def test_exec_body_and_result(self):
        self.route("POST", "/sessions/%s/exec" % SID, Answer(200, RESULT))
        s = self.r.session_attach(SID)
        res = s.exec("cat a; exit 3", env={"K": "V"}, stdin=b"\x00\x01", cwd="/work/sub",
                     limits=Limits(timeout_s=5, max_output_chars=100), collect=["out/", "*.png"])
        self.assertIsInstance(res, ExecResult)
        self.assertEqual((res.status, res.exit_code, res.stdout, res.stderr, res.usage.wall_ms),
                         ("nonzero", 3, "out\n", "err\n", 5))
        self.assertTrue(res.files_truncated)
        self.assertIsInstance(res.files[0], CollectedFile)
        self.assertEqual((res.files[0].path, res.files[0].mode, res.files[0].data),
                         ("out/a.bin", 420, b"\x00\xff"))
        self.assertEqual(self.body_of("POST", "/sessions/%s/exec" % SID), {
            "command": "cat a; exit 3", "env": {"K": "V"}, "stdin": "AAE=",
            "stdin_encoding": "base64", "cwd": "/work/sub",
            "limits": {"timeout_s": 5, "max_output_chars": 100}, "collect": ["out/", "*.png"]})

    def test_exec_argv_text_stdin(self):
        self.route("POST", "/sessions/%s/exec" % SID, Answer(200, RESULT))
        self.r.session_attach(SID).exec(argv=["echo", "$X"], stdin="text")
        self.assertEqual(self.body_of("POST", "/sessions/%s/exec" % SID),
                         {"argv": ["echo", "$X"], "stdin": "text"})

    def test_exec_needs_a_command(self):
        s = self.r.session_attach(SID)
        for kw in ({"command": ""}, {"argv": []}, {}):
            with self.assertRaises(ValueError, msg=kw):
                s.exec(**kw)
        self.assertEqual(self.seen("POST"), [])

    def test_exec_on_a_gone_session_is_session_gone(self):
        self.route("POST", "/sessions/%s/exec" % SID, Answer(404, {"error": "no such session"}))
        with self.assertRaises(SessionGone) as cm:
            Session(self.r, SID).exec("true")
        self.assertIsInstance(cm.exception, RunnerError)  # existing handlers still catch it
        self.assertEqual(cm.exception.message, "no such session")

    def test_exec_busy_429(self):
        self.route("POST", "/sessions/%s/exec" % SID, Answer(429, {"error": "busy"},
                                                             headers={"Retry-After": "2"}))
        with self.assertRaises(RunnerError) as cm:
            Session(self.r, SID).exec("true")
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual((cm.exception.status, cm.exception.retry_after), (429, 2.0))

    def test_balancer_503_is_the_runner_error(self):
        # HAProxy's answer when the runner that holds the session is down
        self.route("POST", "/sessions/%s/exec" % SID,
                   Answer(503, b"<html><body><h1>503 Service Unavailable</h1></body></html>",
                          ctype="text/html"))
        with self.assertRaises(RunnerError) as cm:
            Session(self.r, SID).exec("true")
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual(cm.exception.status, 503)

    # ---- background processes

    def test_spawn_and_process_calls(self):
        base = "/sessions/%s" % SID
        self.route("POST", base + "/exec", Answer(202, {"pid": 41}))
        self.route("POST", base + "/processes/41/stdin", Answer(204, b""))
        self.route("POST", base + "/processes/41/stdin?close=1", Answer(204, b""))
        self.route("POST", base + "/processes/41/signal", Answer(204, b""))
        self.route("GET", base + "/processes", Answer(200, [
            {"pid": 41, "argv": ["cat"], "state": "exited", "exit_code": 0, "started_at": "t"}]))
        s = self.r.session_attach(SID)
        p = s.spawn("cat", stdin=PIPE)
        self.assertIsInstance(p, Process)
        self.assertEqual(p.pid, 41)
        self.assertEqual(self.body_of("POST", base + "/exec"),
                         {"command": "cat", "background": True, "stdin": "pipe"})
        p.write_stdin(b"line\x00\n")
        _, _, headers, raw = self.only("POST", base + "/processes/41/stdin")
        self.assertEqual((raw, headers.get("Content-Type")), (b"line\x00\n", "application/octet-stream"))
        p.close_stdin()
        _, _, headers, raw = self.only("POST", base + "/processes/41/stdin?close=1")
        self.assertEqual((raw, headers.get("Content-Length")), (b"", "0"))
        for sig in ("TERM", "SIGINT", 9):
            p.signal(sig)
        self.assertEqual([json.loads(x[3]) for x in self.seen("POST", base + "/processes/41/signal")],
                         [{"signal": "TERM"}, {"signal": "INT"}, {"signal": "KILL"}])
        self.assertEqual(p.info().state, "exited")
        self.assertEqual([x.pid for x in s.processes()], [41])
        q = s.exec(argv=["sleep", "9"], background=True)
        self.assertEqual(q.pid, 41)

    def test_output_parses_ndjson(self):
        path = "/sessions/%s/processes/5/output" % SID
        self.route("GET", path, Answer(200, b'{"stream":"stdout","data":"a"}\n'
                                            b'{"stream":"stderr","data":"e\\u00e9"}\n\n'
                                            b'{"stream":"stdout","data":"b\\n"}\n'
                                            b'{"result":' + json.dumps(RESULT).encode() + b'}\n',
                                       ctype="application/x-ndjson"))
        out = Session(self.r, SID).process(5).output()
        self.assertEqual((out.stdout, out.stderr), ("ab\n", "e\u00e9"))
        self.assertEqual(len(out.events), 4)
        self.assertEqual(out.result.exit_code, 3)
        self.assertEqual(self.only("GET", path)[2].get("Accept"), "application/x-ndjson")

    def test_output_while_running_has_no_result(self):
        path = "/sessions/%s/processes/5/output" % SID
        self.route("GET", path, Answer(200, b'{"stream":"stdout","data":"so far"}\n',
                                       ctype="application/x-ndjson"))
        out = Session(self.r, SID).process(5).output()
        self.assertEqual((out.stdout, out.result), ("so far", None))

    def test_output_that_is_not_ndjson_is_an_error(self):
        path = "/sessions/%s/processes/5/output" % SID
        self.route("GET", path, Answer(200, b'{"stream":"stdout","data":"a"}\nnot json\n'))
        with self.assertRaises(RunnerError):
            Session(self.r, SID).process(5).output()

    def test_follow_yields_events_as_they_come(self):
        # The fake sends one event, then waits until the client has seen
        # it before it sends the rest: a client that waited for the whole
        # answer would never see it, and the fake gives up after 10 s.
        first_seen = threading.Event()
        held = []
        path = "/sessions/%s/processes/5/output?follow=1" % SID
        self.route("GET", path, Answer(200, chunks=[
            b'{"stream":"stdout","data":"first"}\n',
            lambda: held.append(first_seen.wait(10)),
            b'{"stream":"stdout","da', b'ta":"second"}\n',
            b'{"result":' + json.dumps(RESULT).encode() + b'}\n'], ctype="application/x-ndjson"))
        p = Session(self.r, SID).process(5)
        got = []
        for ev in p.follow(timeout=20):
            self.assertIsInstance(ev, OutputEvent)
            got.append(ev)
            first_seen.set()
        self.assertEqual(held, [True], "the first event came only with the rest")
        self.assertEqual([e.data for e in got[:2]], ["first", "second"])
        self.assertEqual(got[2].result.status, "nonzero")

    def test_wait_returns_the_result(self):
        path = "/sessions/%s/processes/5/output?follow=1" % SID
        self.route("GET", path, Answer(200, chunks=[b'{"stream":"stdout","data":"x"}\n',
                                                    b'{"result":' + json.dumps(RESULT).encode() + b'}\n'],
                                       ctype="application/x-ndjson"))
        self.assertEqual(Session(self.r, SID).process(5).wait(timeout=20).exit_code, 3)

    def test_follow_of_an_unknown_process_in_a_live_session(self):
        path = "/sessions/%s/processes/99/output?follow=1" % SID
        self.route("GET", path, Answer(404, {"error": "no process 99"}))
        with self.assertRaises(RunnerError) as cm:
            list(Session(self.r, SID).process(99).follow())
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual(cm.exception.message, "no process 99")

    # ---- files

    def test_write_percent_encodes_each_segment(self):
        path = "/sessions/%s/files/dir%%20one/%%C3%%A4%%23%%3F%%25.txt" % SID
        self.route("PUT", path, Answer(201, b""))
        self.route("PUT", path + "?mode=0755", Answer(201, b""))
        s = Session(self.r, SID)
        s.write("dir one/\u00e4#?%.txt", "h\u00e9")
        s.write("dir one/\u00e4#?%.txt", b"\x00\xff", mode=0o755)
        got = self.seen("PUT")
        self.assertEqual([(g[1], g[3]) for g in got],
                         [(path, "h\u00e9".encode()), (path + "?mode=0755", b"\x00\xff")])
        self.assertEqual(got[0][2].get("Content-Type"), "application/octet-stream")

    def test_paths_the_runner_would_refuse_are_refused_first(self):
        s = Session(self.r, SID)
        for bad in ("/etc/passwd", "../x", "a/../../x", "a//b", "", ".", "a\0b", "a/./b"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                s.write(bad, "x")
            with self.assertRaises(ValueError, msg=repr(bad)):
                s.read(bad)
        for bad in ("/", "../", "a/../b"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                s.ls(bad)
        with self.assertRaises(ValueError):
            s.write("x", "y", mode="755")
        self.assertEqual(self.fake.seen, [])

    def test_read_bytes_and_a_directory(self):
        base = "/sessions/%s/files/" % SID
        self.route("GET", base + "bin/x", Answer(200, b"\x00\x01\xfe", ctype="application/octet-stream"))
        self.route("GET", base + "bin", Answer(200, [{"name": "x", "type": "file", "size": 3,
                                                      "mode": 420, "mtime": "t"}]))
        s = Session(self.r, SID)
        self.assertEqual(s.read("bin/x"), b"\x00\x01\xfe")
        with self.assertRaises(IsADirectoryError):
            s.read("bin")
        with self.assertRaises(NotADirectoryError):
            s.ls("bin/x")

    def test_ls(self):
        base = "/sessions/%s/files/" % SID
        listing = [{"name": "a.txt", "type": "file", "size": 2, "mode": 420, "mtime": "t"},
                   {"name": "sub", "type": "dir", "size": 0, "mode": 493, "mtime": "t"}]
        self.route("GET", base, Answer(200, listing))
        self.route("GET", base + "sub", Answer(200, []))
        s = Session(self.r, SID)
        got = s.ls()
        self.assertIsInstance(got[0], FileEntry)
        self.assertEqual([(e.name, e.type, e.mode) for e in got], [("a.txt", "file", 420), ("sub", "dir", 493)])
        self.assertEqual(s.ls("sub/"), [])

    def test_rm(self):
        self.route("DELETE", "/sessions/%s/files/a%%20b" % SID, Answer(204, b""))
        Session(self.r, SID).rm("a b")
        self.only("DELETE", "/sessions/%s/files/a%%20b" % SID)

    def test_a_missing_file_is_not_a_gone_session(self):
        s = Session(self.r, SID)
        # the file endpoint answers 404; the session itself is there
        with self.assertRaises(RunnerError) as cm:
            s.read("missing")
        self.assertNotIsInstance(cm.exception, SessionGone)
        self.assertEqual(cm.exception.status, 404)
        # the same 404, and the session itself is gone
        self.route("GET", "/sessions/" + SID, Answer(404, {"error": "no such session"}))
        with self.assertRaises(SessionGone):
            s.read("missing")
        with self.assertRaises(SessionGone):
            s.rm("missing")

    # ---- a fleet whose runners are addressed one by one

    def test_health_names_the_node(self):
        self.route("GET", "/health", Answer(200, {"status": "ok", "isolation": "system", "node": "n2"}))
        self.assertEqual(self.r.health().node, "n2")

    def test_node_url_sends_session_calls_to_their_node(self):
        other = Fake()
        t = threading.Thread(target=other.serve_forever, args=(0.05,), daemon=True)
        t.start()
        try:
            port = other.server_address[1]
            other.routes[("GET", "/n2/sessions/" + SID)] = Answer(200, {"id": SID})
            other.routes[("DELETE", "/n2/sessions/" + SID)] = Answer(204, b"")
            other.routes[("GET", "/n2/sessions?node=n2")] = Answer(200, [])
            # the template may be anything with {node}; the node shows in
            # the path here, since both fakes are on 127.0.0.1
            r = Runner(self.fake.url, token=TOKEN, timeout=10,
                       node_url="http://127.0.0.1:%d/{node}" % port)
            self.assertEqual(node_of(SID), "n2")
            with r.session() as s:
                s.info()
                r.sessions(node="n2")
            self.only("POST", "/sessions")            # the create: to url
            self.assertEqual(len(self.fake.seen), 1)
            self.assertEqual([(m, p) for m, p, _, _ in other.seen],
                             [("GET", "/n2/sessions/" + SID),
                              ("GET", "/n2/sessions?node=n2"),
                              ("DELETE", "/n2/sessions/" + SID)])
            for bad in ("noid", "a b.c", ".abc", "x" * 64 + ".a"):
                with self.assertRaises(ValueError, msg=bad):
                    Session(r, bad)
        finally:
            other.shutdown()
            other.server_close()
            t.join(10)


if __name__ == "__main__":
    unittest.main()
