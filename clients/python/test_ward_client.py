"""Tests of ward_client against a real ``ward serve`` on 127.0.0.1.

    cd clients/python && python3 -m unittest -v

The binary is $WARD, else build/ward of this repository.  The server
listens on a port the kernel picks (--listen 127.0.0.1:0) and is killed by
pid when the tests end.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ward_client import File, Limits, Runner, RunnerError  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WARD = os.environ.get("WARD", os.path.join(ROOT, "build", "ward"))
TOKEN = "s3cret-token-for-tests"


class Server:
    def __init__(self, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix="ward-pyclient.")
        self.log = os.path.join(self.tmp.name, "log")
        tokf = os.path.join(self.tmp.name, "tokens")
        with open(tokf, "w") as f:
            f.write(f"tests {TOKEN}\n")
        self.proc = subprocess.Popen(
            [WARD, "serve", "--listen", "127.0.0.1:0", "--log", self.log, "--token-file", tokf, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.url is None:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ward serve exited with {self.proc.returncode}")
            try:
                with open(self.log) as f:
                    for line in f:
                        ev = json.loads(line)
                        if ev.get("event") == "listening":
                            self.url = "http://" + ev["message"].split()[0]
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        if self.url is None:
            self.stop()
            raise RuntimeError("ward serve did not start listening")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


class RunnerTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(WARD, os.X_OK):
            raise unittest.SkipTest(f"no ward binary at {WARD}")
        cls.srv = Server("--max-concurrent", "2", "--queue", "8")
        cls.r = Runner(cls.srv.url, token=TOKEN, timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_health(self):
        h = Runner(self.srv.url).health()  # no token needed
        self.assertTrue(h.ok, h)
        self.assertEqual(h.isolation, "system")
        self.assertTrue(h.version)

    def test_shell_command(self):
        res = self.r.exec("echo out; echo err >&2; exit 3")
        self.assertEqual(res.status, "nonzero")
        self.assertEqual(res.exit_code, 3)
        self.assertEqual(res.stdout, "out\n")
        self.assertEqual(res.stderr, "err\n")
        self.assertFalse(res.timed_out)
        self.assertEqual(res.error, "")
        self.assertEqual(res.isolation, "system")
        self.assertGreaterEqual(res.usage.wall_ms, 0)

    def test_argv_no_shell(self):
        res = self.r.exec(argv=["echo", "$HOME;id"])
        self.assertEqual(res.stdout, "$HOME;id\n")
        self.assertTrue(res.ok)

    def test_empty_fields_count_as_absent(self):
        # what other runner clients send for "not set" (DeepTutor's defaults)
        res = self.r.exec("echo hi", argv=[], workdir="", mounts=[], env={})
        self.assertEqual((res.status, res.stdout, res.error), ("ok", "hi\n", ""))
        res = self.r.exec("", argv=["echo", "from argv"])
        self.assertEqual(res.stdout, "from argv\n")

    def test_nothing_to_run(self):
        for kw in ({"command": ""}, {"argv": []}, {"command": "", "argv": []}):
            with self.assertRaises(ValueError, msg=kw):
                self.r.exec(**kw)

    def test_files_stdin_env(self):
        res = self.r.exec("cat a.txt; cat bin.dat | od -An -tx1; cat; echo $FOO",
                          files=[File("a.txt", "hello\n"), {"path": "bin.dat", "content": b"\x00\xff"}],
                          stdin="from-stdin\n", env={"FOO": "bar"})
        self.assertEqual(res.exit_code, 0, res)
        self.assertIn("hello\n", res.stdout)
        self.assertIn("00 ff", res.stdout)
        self.assertIn("from-stdin\n", res.stdout)
        self.assertIn("bar\n", res.stdout)

    def test_binary_stdin(self):
        res = self.r.exec("od -An -tx1", stdin=b"\x01\x02")
        self.assertIn("01 02", res.stdout)

    def test_timeout(self):
        res = self.r.exec("sleep 10", limits=Limits(timeout_s=0.5))
        self.assertTrue(res.timed_out)
        self.assertEqual(res.status, "timeout")
        self.assertEqual(res.exit_code, 124)

    def test_bad_request_names_field(self):
        with self.assertRaises(RunnerError) as cm:
            self.r.exec("true", limits={"memory_mb": "lots"})
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("limits.memory_mb", cm.exception.message)

    def test_wrong_token(self):
        with self.assertRaises(RunnerError) as cm:
            Runner(self.srv.url, token="wrong").exec("true")
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(RunnerError) as cm:
            Runner(self.srv.url).exec("true")
        self.assertEqual(cm.exception.status, 401)

    def test_unreachable(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        with self.assertRaises(RunnerError) as cm:
            Runner(f"http://127.0.0.1:{port}", timeout=5).exec("true")
        self.assertEqual(cm.exception.status, 0)

    def test_metrics(self):
        self.r.exec("true")
        m = self.r.metrics()
        self.assertIn('ward_runs_total{status="ok",isolation="system"}', m)
        self.assertIn("ward_run_duration_seconds_bucket", m)

    def test_judge(self):
        tests = [{"id": "1", "stdin": "1 2\n", "expected_stdout": "3\n"},
                 {"id": "2", "stdin": "2 2\n", "expected_stdout": "5\n"},
                 {"id": "3", "stdin": b"\xff", "expected_stdout": b"\xff"}]
        src = "import sys\nd = sys.stdin.buffer.read()\n" \
              "sys.stdout.buffer.write(d if d[:1] == b'\\xff' else b'%d\\n' % sum(map(int, d.split())))\n"
        res = self.r.judge("python", src, tests, compare="exact")
        self.assertEqual(res.verdict, "WA", res)
        self.assertEqual([t.verdict for t in res.tests], ["AC", "WA", "AC"])
        self.assertEqual(res.tests[2].stdout, b"\xff")
        self.assertEqual(res.summary["first_failed"], "2")
        self.assertIn("python", [l.id for l in self.r.languages()])
        events = list(self.r.judge_stream("python", {"main.py": src}, tests[:1]))
        self.assertEqual([type(e).__name__ for e in events], ["JudgeTest", "JudgeResult"])
        self.assertTrue(events[-1].ok)
        with self.assertRaises(RunnerError) as cm:
            self.r.judge("cobol", "x", tests)
        self.assertEqual(cm.exception.status, 400)

    def test_test_job(self):
        job = {
            "source_files": [{"path": "sol.py", "content": "def add(a, b):\n    return a + b\n"}],
            "test_files": [{"path": "test_sol.py", "content":
                            "import unittest\nfrom sol import add\n"
                            "class T(unittest.TestCase):\n"
                            "    def test_ok(self):\n        self.assertEqual(add(1, 2), 3)\n"
                            "    def test_bad(self):\n        self.assertEqual(add(1, 2), 4)\n"}],
            "runner": "python",
        }
        try:
            rep = self.r.test(job)
        except RunnerError as e:
            if e.status == 501:
                self.skipTest("this build has no test jobs")
            raise
        self.assertEqual(rep.total, 2, rep)
        self.assertEqual(rep.passed, 1)
        self.assertEqual(rep.failed, 1)


if __name__ == "__main__":
    unittest.main()
