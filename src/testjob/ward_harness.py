# ward_harness.py -- runs a test job's python tests inside the sandbox and
# writes what happened to ward's report channel, one JSON object a line.
#
# Embedded into the ward binary at build time and run as
#     python3 -s -B -c <this source> FRAMEWORK TESTFILE...
# in /work, with the write end of the report pipe as fd 3.  ward reads the
# counts only from those lines, never from stdout or from any file.
#
# Lines: {"event":"hello",...} once; {"event":"start","name":N} before a
# test (or a module's import); {"event":"test","name","outcome","message",
# "duration_ms"} after it; {"event":"done"} after an import that worked;
# {"event":"error","message"} when the harness itself cannot go on;
# {"event":"end","exit":N} last.  Every line has "seq": 0, 1, 2...  A report
# without "end", or with a gap in "seq", is refused: never counted as a pass.
#
# The code under test runs in this process, so it can still reach the
# channel (via /proc/self/fd) or patch this module: see docs/testjobs.md.
# What is done here stops the accidental and the naive: a forged report
# file, stdout that says "100 passed", a write to fd 3.
import sys

# -c puts the cwd first on sys.path; take it off until our own imports are
# done, so that a job's json.py or unittest.py cannot replace them.
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]

import fcntl
import importlib
import json
import os
import random
import resource
import time
import traceback
import unittest

WORK = os.getcwd()
REPORT_FD = 3
MSG_MAX = 4000

# Bound now: a test that replaces os.write or json.dumps does not change
# what the harness writes.
_write = os.write
_dumps = json.dumps
_clock = time.perf_counter
_fmt_exc = traceback.format_exc


def _user_traceback():
    """The current exception's traceback without the harness's and the
    import machinery's frames: what the job's author needs to see."""
    etype, value, tb = sys.exc_info()
    frames = [f for f in traceback.extract_tb(tb)
              if f.filename != "<string>" and not f.filename.startswith("<frozen ")
              and not f.filename.endswith("/importlib/__init__.py")]
    out = ["Traceback (most recent call last):\n"] if frames else []
    out += traceback.format_list(frames)
    out += traceback.format_exception_only(etype, value)
    return "".join(out)


def _hide_channel():
    """Move the report pipe from fd 3 to a random high fd with CLOEXEC, and
    leave /dev/null at fd 3, so that a test writing to fd 3 writes nowhere
    and child processes inherit nothing."""
    try:
        os.fstat(REPORT_FD)
    except OSError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft > 4096:
        soft = 4096
    lo, hi = 10, max(11, soft - 1)
    if hi - lo > 64:
        lo = 64
    fd = fcntl.fcntl(REPORT_FD, fcntl.F_DUPFD_CLOEXEC, random.SystemRandom().randint(lo, hi - 1))
    null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    os.dup2(null, REPORT_FD, inheritable=False)
    os.close(null)
    for k in list(os.environ):
        if k.startswith("WARD_"):
            del os.environ[k]
    return fd


class Channel:
    def __init__(self, fd):
        self.fd = fd
        self.seq = 0

    def send(self, **obj):
        if self.fd is None:
            return
        # Lines are numbered: a line that something else slips into the
        # pipe breaks the sequence, and ward then refuses the whole report.
        obj["seq"] = self.seq
        self.seq += 1
        data = memoryview((_dumps(obj, ensure_ascii=True) + "\n").encode("ascii"))
        while data:
            try:
                n = _write(self.fd, data)
            except InterruptedError:
                continue
            data = data[n:]

    def test(self, name, outcome, message="", duration_s=0.0):
        message = message or ""
        if len(message) > MSG_MAX:
            message = message[:MSG_MAX] + "\n[... truncated by ward]"
        self.send(event="test", name=str(name), outcome=outcome, message=message,
                  duration_ms=max(0, int(round(duration_s * 1000))))


def _module_name(path):
    return path[:-3].replace("/", ".")


# ---------------------------------------------------------------- unittest

def run_unittest(ch, files):
    class Result(unittest.TextTestResult):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self._t0 = {}

        def _dur(self, test):
            t0 = self._t0.get(id(test))
            return _clock() - t0 if t0 is not None else 0.0

        def startTest(self, test):
            super().startTest(test)
            self._t0[id(test)] = _clock()
            ch.send(event="start", name=test.id())

        def addSuccess(self, test):
            super().addSuccess(test)
            ch.test(test.id(), "passed", "", self._dur(test))

        def addFailure(self, test, err):
            super().addFailure(test, err)
            ch.test(test.id(), "failed", self.failures[-1][1], self._dur(test))

        def addError(self, test, err):
            # Also called for setUpClass/setUpModule failures, with a
            # placeholder "test" that was never started.
            super().addError(test, err)
            ch.test(test.id(), "errored", self.errors[-1][1], self._dur(test))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            ch.test(test.id(), "skipped", str(reason), self._dur(test))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            ch.test(test.id(), "skipped", "expected failure", self._dur(test))

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            ch.test(test.id(), "failed", "unexpected success (marked expectedFailure)", self._dur(test))

        def addSubTest(self, test, subtest, err):
            # A failing subtest is one failed entry; the test itself then
            # gets no addSuccess.  Passing subtests are not counted apart.
            super().addSubTest(test, subtest, err)
            if err is not None:
                failed = issubclass(err[0], test.failureException)
                lst = self.failures if failed else self.errors
                ch.test(subtest.id(), "failed" if failed else "errored", lst[-1][1], self._dur(test))

    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for path in files:
        d = os.path.dirname(os.path.join(WORK, path))
        if d not in sys.path:
            sys.path.append(d)
        t0 = _clock()
        ch.send(event="start", name=path)  # an import can hang too
        try:
            mod = importlib.import_module(_module_name(path))
        except BaseException:
            # An import error, a SyntaxError, a sys.exit() at import time:
            # the module's tests did not run, which is an error, not a pass.
            ch.test(path, "errored", "could not import the test module:\n" + _user_traceback(), _clock() - t0)
            continue
        ch.send(event="done", name=path)
        suite.addTests(loader.loadTestsFromModule(mod))
    runner = unittest.TextTestRunner(stream=sys.stderr, resultclass=Result, verbosity=1)
    res = runner.run(suite)
    return 0 if res.wasSuccessful() else 1


# ------------------------------------------------------------------ pytest

def run_pytest(ch, files, pytest):
    class Reporter:
        def __init__(self):
            self.state = {}

        def pytest_collectreport(self, report):
            if report.failed:
                ch.test(report.nodeid or "(collection)", "errored",
                        "collection failed:\n" + report.longreprtext, getattr(report, "duration", 0.0) or 0.0)

        def pytest_runtest_logstart(self, nodeid, location):
            ch.send(event="start", name=nodeid)

        def pytest_runtest_logreport(self, report):
            st = self.state.setdefault(report.nodeid, {"outcome": None, "message": "", "dur": 0.0})
            st["dur"] += report.duration or 0.0
            if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
                msg = str(report.longrepr[2])
            else:
                msg = report.longreprtext
            if report.when == "setup":
                if report.failed:
                    st["outcome"], st["message"] = "errored", msg
                elif report.skipped:
                    st["outcome"], st["message"] = "skipped", msg
            elif report.when == "call":
                if hasattr(report, "wasxfail"):
                    if report.skipped:
                        st["outcome"], st["message"] = "skipped", ("expected failure: %s" % report.wasxfail) if report.wasxfail else "expected failure"
                    elif report.passed:
                        st["outcome"] = "passed"  # xpass, not strict
                    else:
                        st["outcome"], st["message"] = "failed", msg or "unexpected success (strict xfail)"
                elif report.passed:
                    st["outcome"] = "passed"
                elif report.failed:
                    st["outcome"], st["message"] = "failed", msg
                else:
                    st["outcome"], st["message"] = "skipped", msg
            elif report.when == "teardown" and report.failed:
                if st["outcome"] in (None, "passed", "skipped"):
                    st["outcome"], st["message"] = "errored", "teardown failed:\n" + msg
                else:
                    st["message"] += "\nteardown failed too:\n" + msg

        def pytest_runtest_logfinish(self, nodeid, location):
            st = self.state.pop(nodeid, None)
            if st is None or st["outcome"] is None:
                ch.test(nodeid, "errored", "the test produced no outcome", st["dur"] if st else 0.0)
            else:
                ch.test(nodeid, st["outcome"], st["message"], st["dur"])

    args = ["-p", "no:cacheprovider", "--continue-on-collection-errors", "-q", "--"] + files
    ret = int(pytest.main(args, plugins=[Reporter()]))
    # 2 interrupted, 3 internal error, 4 usage error, 5 nothing collected
    why = {2: "pytest was interrupted", 3: "pytest failed internally",
           4: "pytest refused its command line or configuration",
           5: "pytest collected no tests"}.get(ret)
    if why:
        ch.send(event="error", message="%s (exit status %d); see stdout/stderr" % (why, ret))
    return ret


# -------------------------------------------------------------------- main

def main(argv):
    fd = _hide_channel()
    ch = Channel(fd)
    framework = argv[0] if argv else "auto"
    files = argv[1:]
    pytest = None
    if framework in ("auto", "pytest"):
        try:
            import pytest
        except Exception:  # absent, or installed but broken
            if framework == "pytest":
                ch.send(event="hello", version=1, framework="pytest")
                ch.send(event="error", message="the job asked for pytest, but the sandbox's python3 "
                        "has no pytest module: install it (Debian: python3-pytest) or use unittest")
                ch.send(event="end", exit=125)
                return 125
            pytest = None
    # Only now, after the harness's own imports (pytest and unittest
    # included): the job's modules are found from the work dir, and a job's
    # json.py or unittest.py cannot stand in for ours.
    sys.path.insert(0, WORK)
    name = "pytest" if pytest is not None else "unittest"
    ch.send(event="hello", version=1, framework=name,
            python=sys.version.split()[0])
    if not files:
        ch.send(event="error", message="the job has no python test modules (test_*.py or *_test.py)")
        ch.send(event="end", exit=5)
        return 5
    try:
        if pytest is not None:
            ret = run_pytest(ch, files, pytest)
        else:
            ret = run_unittest(ch, files)
    except BaseException:
        ch.send(event="error", message="the %s run stopped with an exception:\n%s" % (name, _fmt_exc()[-MSG_MAX:]))
        ch.send(event="end", exit=1)
        return 1
    ch.send(event="end", exit=ret)
    return ret


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: no atexit handler a test registered can write after us.
    os._exit(code)
