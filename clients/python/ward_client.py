"""ward_client — a client for a ``ward serve`` runner (SPEC §5), standard
library only.

    from ward_client import Runner
    r = Runner("http://127.0.0.1:8900", token="...")
    res = r.exec("python3 -c 'print(6*7)'", limits={"timeout_s": 5})
    print(res.exit_code, res.stdout)

    with r.session(limits={"memory_mb": 512}, ttl_s=600) as s:   # SPEC §11
        s.write("data.csv", "a,b\n1,2\n")
        print(s.exec("wc -l data.csv").stdout)
        p = s.spawn("python3 -m http.server 8000")      # runs on between execs
        print(s.exec("ls").stdout, p.output().stdout)

``exec`` answers an :class:`ExecResult` (SPEC §4) also when the command
failed: ``status``/``exit_code`` say what the program did, ``error`` is
non-empty only when the sandbox itself failed.  Envelope errors (bad
request, wrong token, overload, runner down) raise :class:`RunnerError`
with the HTTP status and the runner's message.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

__all__ = [
    "Runner", "RunnerError", "ExecResult", "Enforced", "Usage", "TestReport",
    "TestDetail", "Health", "Mount", "File", "Limits", "CollectedFile",
    "Session", "SessionGone", "SessionLimits", "SessionInfo", "SessionUsage",
    "Process", "ProcessInfo", "ProcessOutput", "OutputEvent", "FileEntry", "PIPE", "node_of",
    "JudgeResult", "JudgeTest", "Language",
]


class RunnerError(Exception):
    """The runner did not run the request (HTTP status other than 200), or
    could not be reached (``status`` 0)."""

    def __init__(self, status: int, message: str, retry_after: Optional[float] = None):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


class SessionGone(RunnerError):
    """The session does not exist (any more): it expired, was deleted, its
    runner restarted, or it is not the caller's (SPEC §11: 404 for all of
    these).  Nothing of it is left; make a new one."""


def _from_dict(cls, d: Optional[Mapping[str, Any]]):
    """A dataclass from a JSON object, ignoring members it does not know
    (newer runners may add some)."""
    d = d or {}
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


# ---------------------------------------------------------------- requests

@dataclass
class Mount:
    host_path: str
    sandbox_path: Optional[str] = None
    read_only: bool = True


@dataclass
class File:
    """A file written into the run's /work.  ``content`` as bytes is sent
    base64-encoded, as str as UTF-8."""
    path: str
    content: Union[str, bytes] = ""
    mode: Optional[int] = None


@dataclass
class Limits:
    timeout_s: Optional[float] = None
    memory_mb: Optional[int] = None
    cpu_seconds: Optional[float] = None
    max_output_chars: Optional[int] = None
    pids: Optional[int] = None


@dataclass
class SessionLimits:
    """What a whole session may use, all its processes together (SPEC §11)."""
    memory_mb: Optional[int] = None
    pids: Optional[int] = None
    tmp_size_mb: Optional[int] = None
    work_size_mb: Optional[int] = None
    cpu_seconds: Optional[float] = None


#: ``stdin=PIPE`` for a background exec: a stdin that
#: :meth:`Process.write_stdin` writes to (SPEC §11's ``"stdin": "pipe"``).
PIPE = "pipe"


def _clean(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _file_json(f: Union[File, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(f, Mapping):
        f = File(path=f["path"], content=f.get("content", ""), mode=f.get("mode"))
    out: Dict[str, Any] = {"path": f.path, "mode": f.mode}
    if isinstance(f.content, (bytes, bytearray)):
        out["content"] = base64.b64encode(bytes(f.content)).decode("ascii")
        out["encoding"] = "base64"
    else:
        out["content"] = f.content
    return _clean(out)


def _mount_json(m: Union[Mount, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(m, Mapping):
        return dict(m)
    return _clean(dataclasses.asdict(m))


def _stdin_json(body: Dict[str, Any], stdin: Union[str, bytes, None]) -> None:
    if isinstance(stdin, (bytes, bytearray)):
        body["stdin"] = base64.b64encode(bytes(stdin)).decode("ascii")
        body["stdin_encoding"] = "base64"
    else:
        body["stdin"] = stdin


def _limits_json(l: Union[Limits, SessionLimits, Mapping[str, Any], None]) -> Optional[Dict[str, Any]]:
    if l is None:
        return None
    if isinstance(l, Mapping):
        return dict(l)
    return _clean(dataclasses.asdict(l))


# ---------------------------------------------------------------- results

@dataclass
class Enforced:
    memory: str = "none"
    pids: str = "none"
    cpu: str = "none"
    time: str = "none"
    fsize: str = "none"
    seccomp: str = "none"
    landlock: str = "none"
    tcp_memory: str = "none"
    user: str = "none"


@dataclass
class Usage:
    wall_ms: int = 0
    cpu_user_ms: int = 0
    cpu_sys_ms: int = 0
    max_rss_kb: int = 0


@dataclass
class CollectedFile:
    """A file that ``collect`` brought back from /work (SPEC §12)."""
    path: str = ""
    size: int = 0
    mode: int = 0
    encoding: str = "base64"
    content: str = ""

    @property
    def data(self) -> bytes:
        if self.encoding == "base64":
            return base64.b64decode(self.content)
        return self.content.encode("utf-8")


@dataclass
class ExecResult:
    """The result object of SPEC §4."""
    status: str = "error"
    exit_code: int = 125
    signal: Optional[int] = None
    timed_out: bool = False
    oom_killed: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    error: str = ""
    isolation: str = "system"
    enforced: Enforced = field(default_factory=Enforced)
    usage: Usage = field(default_factory=Usage)
    files: List[CollectedFile] = field(default_factory=list)
    files_truncated: bool = False
    # SPEC §13: the connections a run with network {"allow": [...]} tried
    # ({"host", "port", "allowed", "reason", "bytes_out", "bytes_in"})
    egress: List[Dict[str, Any]] = field(default_factory=list)
    egress_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ExecResult":
        r = _from_dict(cls, d)
        r.enforced = _from_dict(Enforced, d.get("enforced"))
        r.usage = _from_dict(Usage, d.get("usage"))
        r.files = [_from_dict(CollectedFile, x) for x in (d.get("files") or [])]
        r.egress = [dict(x) for x in (d.get("egress") or [])]
        return r


@dataclass
class TestDetail:
    __test__ = False  # not a test case, whatever unittest/pytest think of the name
    name: str = ""
    outcome: str = ""
    message: str = ""
    duration_ms: int = 0


@dataclass
class TestReport:
    """The test job report of SPEC §6."""
    __test__ = False
    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    pass_rate: Optional[float] = None
    timed_out: bool = False
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    details: List[TestDetail] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TestReport":
        r = _from_dict(cls, d)
        r.details = [_from_dict(TestDetail, x) for x in (d.get("details") or [])]
        return r


@dataclass
class JudgeTest:
    """One test of a judge job (SPEC §15): its verdict (AC, WA, TLE, MLE,
    OLE, RE, IE or SKIPPED), what the program printed (bytes when it was
    not UTF-8), its usage and a message ("killed by SIGSEGV")."""
    id: str = ""
    verdict: str = ""
    exit_code: int = 0
    signal: Optional[int] = None
    stdout: Union[str, bytes] = ""
    stderr: Union[str, bytes] = ""
    usage: Dict[str, int] = field(default_factory=dict)
    message: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "JudgeTest":
        t = _from_dict(cls, d)
        for name in ("stdout", "stderr"):
            if d.get(name + "_encoding") == "base64":
                setattr(t, name, base64.b64decode(d.get(name) or ""))
        return t


@dataclass
class JudgeResult:
    """A judge job's answer (SPEC §15): the job's verdict (the first failing
    test's, or CE, or AC), the compile's result (None for an interpreter),
    each test, and the summary {"total", "passed", "first_failed"}."""
    verdict: str = ""
    language: str = ""
    version: str = ""
    compile: Optional[Dict[str, Any]] = None
    tests: List[JudgeTest] = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict == "AC"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "JudgeResult":
        r = _from_dict(cls, d)
        r.tests = [JudgeTest.from_json(t) for t in d.get("tests") or []]
        return r


@dataclass
class Language:
    """An entry of GET /languages."""
    id: str = ""
    display: str = ""
    version: str = ""
    aliases: List[str] = field(default_factory=list)
    compiled: bool = False


def _judge_body(language: str, files: Union[str, Mapping[str, Union[str, bytes]], Sequence[Any]],
                tests: Sequence[Mapping[str, Any]], kw: Mapping[str, Any]) -> Dict[str, Any]:
    """A POST /judge body: files as one source string (the language's main
    file), {path: content} or a list of File / dicts; a test's stdin and
    expected_stdout may be bytes (sent base64)."""
    if isinstance(files, str):
        fl: List[Dict[str, Any]] = [{"content": files}]
    elif isinstance(files, Mapping):
        fl = [_file_json(File(path=p, content=c)) for p, c in files.items()]
    else:
        fl = [_file_json(f) for f in files]
    ts = []
    for t in tests:
        t = dict(t)
        for k in ("stdin", "expected_stdout"):
            if isinstance(t.get(k), (bytes, bytearray)):
                t[k] = base64.b64encode(bytes(t[k])).decode("ascii")
                t[k + "_encoding"] = "base64"
        ts.append(t)
    body: Dict[str, Any] = {"language": language, "files": fl, "tests": ts}
    body.update({k: v for k, v in kw.items() if v is not None})
    return body


def _judge_wait(runner: "Runner", body: Mapping[str, Any]) -> float:
    run = ((body.get("run") or {}).get("limits") or {})
    per = float(run.get("timeout_s") or 5) + float(run.get("extra_cpu_seconds") or 0) + 1
    comp = float(((body.get("compile") or {}).get("limits") or {}).get("timeout_s") or 30)
    return runner.timeout + comp + per * max(1, len(body.get("tests") or []))


@dataclass
class Health:
    status: str = ""
    isolation: str = ""
    version: str = ""
    error: str = ""
    node: str = ""            # the runner's --node-id (docs/SPEC.md §9)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class SessionUsage:
    memory_bytes: int = 0
    memory_peak_bytes: int = 0
    pids: int = 0
    cpu_ms: int = 0


@dataclass
class ProcessInfo:
    """One process an exec started in a session (GET .../processes)."""
    pid: int = 0
    argv: List[str] = field(default_factory=list)
    state: str = ""           # "running" or "exited"
    exit_code: Optional[int] = None
    started_at: str = ""


@dataclass
class SessionInfo:
    """GET /sessions/{id} (and each member of GET /sessions)."""
    id: str = ""
    state: str = ""           # "idle" or "busy"
    created_at: str = ""
    expires_at: str = ""
    idle_expires_at: str = ""
    execs: int = 0
    isolation: str = ""
    usage: SessionUsage = field(default_factory=SessionUsage)
    processes: List[ProcessInfo] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SessionInfo":
        r = _from_dict(cls, d)
        r.usage = _from_dict(SessionUsage, d.get("usage"))
        r.processes = [_from_dict(ProcessInfo, x) for x in (d.get("processes") or [])]
        return r


@dataclass
class FileEntry:
    """One member of a directory listing of a session's /work."""
    name: str = ""
    type: str = ""            # "file", "dir", "symlink", ...
    size: int = 0
    mode: int = 0
    mtime: str = ""


@dataclass
class OutputEvent:
    """One NDJSON event of a process's output (SPEC §12): ``stream`` is
    "stdout" or "stderr" with its ``data``, or ``result`` is set (the last
    event, once the process has exited)."""
    stream: str = ""
    data: str = ""
    result: Optional[ExecResult] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "OutputEvent":
        if isinstance(d.get("result"), Mapping):
            return cls(result=ExecResult.from_json(d["result"]))
        return cls(stream=str(d.get("stream", "")), data=str(d.get("data", "")))


@dataclass
class ProcessOutput:
    """A background process's output so far: its events, each stream
    joined, and its result once it has exited (else None)."""
    events: List[OutputEvent] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    result: Optional[ExecResult] = None

    @classmethod
    def of(cls, events: List[OutputEvent]) -> "ProcessOutput":
        out = cls(events=events)
        out.stdout = "".join(e.data for e in events if e.stream == "stdout")
        out.stderr = "".join(e.data for e in events if e.stream == "stderr")
        out.result = next((e.result for e in reversed(events) if e.result is not None), None)
        return out


def _ndjson_events(lines) -> Iterator[OutputEvent]:
    """OutputEvents from an iterable of NDJSON lines (bytes); blank lines
    are skipped, a line that is not a JSON object is an error."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            d = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise RunnerError(200, f"the runner's output stream has a line that is not JSON: {line[:200]!r}") from e
        if not isinstance(d, Mapping):
            raise RunnerError(200, f"the runner's output stream has a line that is not an object: {line[:200]!r}")
        yield OutputEvent.from_json(d)


def _wait_of(runner: "Runner", body: Mapping[str, Any]) -> float:
    """How long to wait for a run's answer: its timeout_s, plus the
    runner's queue."""
    lim = body.get("limits") or {}
    return runner.timeout + float(lim.get("timeout_s") or 30)


def _stream(runner: "Runner", method: str, path: str, body: Dict[str, Any], wait: float,
            base: str, gone=None) -> Iterator[Dict[str, Any]]:
    """The events of a streamed answer (Accept: application/x-ndjson), one
    dict a line, as they come.  A refusal before the run (400, 429, 503)
    raises as a plain call does (``gone``: a 404's exception class)."""
    resp = runner._open(method, path, body, wait, base=base, accept="application/x-ndjson")
    try:
        status = resp.getcode()
        if status != 200:
            raw = resp.read()
            cls = gone if (status == 404 and gone is not None) else RunnerError
            raise Runner._error(status, raw, resp.headers, cls)
        ctype = resp.headers.get("Content-Type", "")
        if not ctype.startswith("application/x-ndjson"):
            # a runner that does not stream: its answer is the result
            yield {"result": json.loads(resp.read().decode("utf-8"))}
            return
        for line in resp:
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise RunnerError(200, f"the runner's stream has a line that is not JSON: {line[:200]!r}") from e
            if not isinstance(d, dict):
                raise RunnerError(200, f"the runner's stream has a line that is not an object: {line[:200]!r}")
            yield d
            if "result" in d:
                return
        raise RunnerError(200, "the runner's stream ended before the result")
    except OSError as e:
        raise RunnerError(0, f"runner at {base}: the stream broke off: {e}") from e
    finally:
        resp.close()


# Session ids are NODE "." 32 lowercase hex digits; NODE is the runner's
# --node-id (docs/SPEC.md §9, sessions in a fleet).
_NODE_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")


def node_of(session_id: str) -> str:
    """The node id a session id begins with: the runner that holds it."""
    node, dot, _ = session_id.partition(".")
    if not dot or not _NODE_RE.match(node):
        raise ValueError(f"{session_id!r} is not a session id (NODE.HEX, NODE of [A-Za-z0-9_-]{{1,63}})")
    return node


def _quote_path(path: str, allow_empty: bool = False) -> str:
    """A path relative to /work, percent-encoded segment by segment.  The
    runner guards it (SPEC §6, §11); this only refuses early, with a clear
    message, what it would refuse anyway."""
    if not isinstance(path, str):
        raise TypeError("a session path is a str, relative to /work")
    p = path
    if allow_empty and not p.startswith("/"):
        p = p.rstrip("/")  # "sub/" is the directory sub
        if p == "":
            return ""       # /work itself
    segs = p.split("/")
    if p.startswith("/") or "\0" in p or any(s in ("", ".", "..") for s in segs):
        raise ValueError(f"{path!r}: a session path is relative to /work, without empty, "
                         "'.' or '..' components or NUL")
    return "/".join(urllib.parse.quote(s, safe="") for s in segs)


# ---------------------------------------------------------------- client

class Runner:
    """A ``ward serve`` runner at ``url`` (e.g. ``http://127.0.0.1:8900``).

    ``token``: sent as ``Authorization: Bearer``.  ``client``: sent as
    ``X-Ward-Client``, a sub-client within the token's (or address's)
    quota: it can split that quota (``--subclient-*``), never add to it.
    ``timeout``: seconds to wait for an answer beyond the run's own
    ``timeout_s`` (the runner may queue the request first).

    ``node_url``: for a fleet whose runners can be addressed one by one
    (Kubernetes: a StatefulSet's pods), a URL template with ``{node}``,
    e.g. ``"http://{node}.ward-sessions-pods.ward.svc:8900"``: every call
    of a session then goes straight to the runner its id names, and only
    ``POST /sessions`` (and one-shot runs) to ``url``.  Without it every
    call goes to ``url`` (one runner, or a balancer that routes sessions:
    deploy/haproxy.cfg)."""

    def __init__(self, url: str, token: Optional[str] = None, client: Optional[str] = None,
                 timeout: float = 120.0, node_url: Optional[str] = None):
        self.url = url.rstrip("/")
        self.token = token
        self.client = client
        self.timeout = timeout
        self.node_url = node_url

    def _open(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
              wait: Optional[float] = None, *, raw: Optional[bytes] = None,
              base: Optional[str] = None, accept: str = "application/json"):
        """The open answer (the caller reads and closes it; an HTTP error
        status is an answer too).  ``wait``: the socket timeout, None for
        none."""
        data = None
        base = base or self.url
        headers = {"Accept": accept}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif raw is not None:
            data = bytes(raw)
            headers["Content-Type"] = "application/octet-stream"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.client:
            headers["X-Ward-Client"] = self.client
        req = urllib.request.Request(base + path, data=data, headers=headers, method=method)
        try:
            return urllib.request.urlopen(req, timeout=wait)
        except urllib.error.HTTPError as e:
            return e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise RunnerError(0, f"runner at {base} not reachable: {reason}") from e

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
              wait: Optional[float] = None, *, raw: Optional[bytes] = None,
              base: Optional[str] = None, accept: str = "application/json"):
        resp = self._open(method, path, body, wait or self.timeout, raw=raw, base=base, accept=accept)
        try:
            return resp.getcode(), resp.read(), resp.headers
        except OSError as e:
            raise RunnerError(0, f"runner at {base or self.url}: the answer broke off: {e}") from e
        finally:
            resp.close()

    @staticmethod
    def _error(status: int, raw: bytes, headers, cls=RunnerError) -> RunnerError:
        try:
            msg = json.loads(raw.decode("utf-8")).get("error", "")
        except (ValueError, AttributeError, UnicodeDecodeError):
            msg = raw.decode("utf-8", "replace")[:400]
        ra = headers.get("Retry-After") if headers is not None else None
        try:
            retry = float(ra) if ra is not None else None
        except ValueError:
            retry = None
        return cls(status, msg or f"HTTP {status}", retry)

    @staticmethod
    def _raise(status: int, raw: bytes, headers) -> None:
        raise Runner._error(status, raw, headers)

    def exec(self, command: Optional[str] = None, **kw: Any) -> ExecResult:
        """Run one command (``command``: a shell string; ``argv``: a list,
        run without a shell) in a fresh sandbox on the runner.  An empty
        ``command``, ``argv`` or ``workdir`` counts as not given, as the
        runner reads them (SPEC §5).  ``collect``: globs relative to /work
        whose files come back in the result's ``files`` (SPEC §12).
        ``image``: an image the runner offers (SPEC §14, ``ward serve
        --image``) as the root.  The other keywords: workdir, env, mounts,
        limits, files, stdin, network, isolation."""
        body = self._exec_body(command, **kw)
        status, raw, headers = self._call("POST", "/exec", body, _wait_of(self, body))
        if status != 200:
            self._raise(status, raw, headers)
        return ExecResult.from_json(json.loads(raw.decode("utf-8")))

    def exec_stream(self, command: Optional[str] = None, **kw: Any) -> Iterator[Dict[str, Any]]:
        """``exec``, its output as it comes (SPEC §12): yields
        ``{"stream": "stdout" or "stderr", "data": str}`` while the
        program writes (the head of each stream, within its output cap),
        then ``{"result": {...}}`` with the whole result object.  Leaving
        the loop early closes the connection, which cancels the run."""
        body = self._exec_body(command, **kw)
        return _stream(self, "POST", "/exec", body, _wait_of(self, body), self.url)

    def _exec_body(self, command: Optional[str] = None, *, argv: Optional[Sequence[str]] = None,
                   workdir: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                   mounts: Optional[Sequence[Union[Mount, Mapping[str, Any]]]] = None,
                   limits: Union[Limits, Mapping[str, Any], None] = None,
                   files: Optional[Sequence[Union[File, Mapping[str, Any]]]] = None,
                   stdin: Union[str, bytes, None] = None,
                   network: Union[str, Mapping[str, Any], None] = None,
                   isolation: Optional[str] = None, collect: Optional[Sequence[str]] = None,
                   image: Optional[str] = None) -> Dict[str, Any]:
        if not command and not argv:
            raise ValueError("give command (a non-empty shell string) or argv (a non-empty list)")
        body: Dict[str, Any] = {
            "command": command,
            "argv": list(argv) if argv is not None else None,
            "workdir": workdir,
            "env": dict(env) if env is not None else None,
            "mounts": [_mount_json(m) for m in mounts] if mounts is not None else None,
            "limits": _limits_json(limits),
            "files": [_file_json(f) for f in files] if files is not None else None,
            "network": network,
            "isolation": isolation,
            "collect": list(collect) if collect is not None else None,
            "image": image,
        }
        _stdin_json(body, stdin)
        return _clean(body)

    def test(self, job: Optional[Mapping[str, Any]] = None, **kw: Any) -> TestReport:
        """Run a test job (SPEC §6): ``job`` as a dict, or its members as
        keyword arguments (source_files, test_files, runner, command,
        limits)."""
        body = dict(job or {})
        body.update(kw)
        lim = body.get("limits") or {}
        wait = self.timeout + float(lim.get("timeout_s") or 30)
        status, raw, headers = self._call("POST", "/test", body, wait)
        if status != 200:
            self._raise(status, raw, headers)
        return TestReport.from_json(json.loads(raw.decode("utf-8")))

    def judge(self, language: str, files: Union[str, Mapping[str, Union[str, bytes]], Sequence[Any]],
              tests: Sequence[Mapping[str, Any]], **kw: Any) -> JudgeResult:
        """Judge a program (SPEC §15): built once, run against each test
        ({"stdin", "expected_stdout", "args", "limits"}) in a fresh sandbox.
        Keyword arguments are the job's other members: version, compile
        ({"flags", "limits"}), run ({"args", "limits"}), compare ("exact",
        "lines", "tokens" or {"float": eps}), stop_on_first_failure,
        parallel, image.  A refused job (unknown language, a limit over the
        runner's maxima) raises RunnerError with the runner's message."""
        body = _judge_body(language, files, tests, kw)
        status, raw, headers = self._call("POST", "/judge", body, _judge_wait(self, body))
        if status != 200:
            self._raise(status, raw, headers)
        return JudgeResult.from_json(json.loads(raw.decode("utf-8")))

    def judge_stream(self, language: str, files: Union[str, Mapping[str, Union[str, bytes]], Sequence[Any]],
                     tests: Sequence[Mapping[str, Any]], **kw: Any) -> Iterator[Union[JudgeTest, JudgeResult]]:
        """``judge``, each test as it ends: yields a :class:`JudgeTest` per
        finished test, then the :class:`JudgeResult`."""
        body = _judge_body(language, files, tests, kw)
        for ev in _stream(self, "POST", "/judge", body, _judge_wait(self, body), self.url):
            if "test" in ev:
                yield JudgeTest.from_json(ev["test"])
            elif "result" in ev:
                yield JudgeResult.from_json(ev["result"])

    def languages(self) -> List[Language]:
        """The languages the runner can judge (GET /languages)."""
        status, raw, headers = self._call("GET", "/languages")
        if status != 200:
            self._raise(status, raw, headers)
        return [_from_dict(Language, d) for d in json.loads(raw.decode("utf-8"))]

    def health(self) -> Health:
        """The runner's health; a 503 answers a Health whose ``ok`` is
        False rather than raising."""
        status, raw, headers = self._call("GET", "/health")
        if status not in (200, 503):
            self._raise(status, raw, headers)
        return _from_dict(Health, json.loads(raw.decode("utf-8")))

    def metrics(self) -> str:
        """The Prometheus text of GET /metrics."""
        status, raw, headers = self._call("GET", "/metrics")
        if status != 200:
            self._raise(status, raw, headers)
        return raw.decode("utf-8")

    # ------------------------------------------------------------ sessions

    def _node_base(self, node: str) -> str:
        """Where the calls for ``node``'s sessions go."""
        if not self.node_url:
            return self.url
        if not _NODE_RE.match(node):
            raise ValueError(f"{node!r} is not a node id ([A-Za-z0-9_-]{{1,63}})")
        return self.node_url.format(node=node).rstrip("/")

    def session(self, *, limits: Union[SessionLimits, Mapping[str, Any], None] = None,
                ttl_s: Optional[float] = None, idle_s: Optional[float] = None,
                network: Union[str, Mapping[str, Any], None] = None, env: Optional[Mapping[str, str]] = None,
                files: Optional[Sequence[Union[File, Mapping[str, Any]]]] = None,
                workdir: Optional[str] = None,
                mounts: Optional[Sequence[Union[Mount, Mapping[str, Any]]]] = None,
                rootfs: Optional[str] = None, image: Optional[str] = None) -> "Session":
        """A new session (SPEC §11): one sandbox that stays up between
        calls, until :meth:`Session.close`, the end of a ``with`` block,
        ``ttl_s`` (runner default 3600) or ``idle_s`` without a call (600).
        Over the runner's or the client's session count: RunnerError 429."""
        body = _clean({
            "limits": _limits_json(limits),
            "ttl_s": ttl_s,
            "idle_s": idle_s,
            "network": network,
            "env": dict(env) if env is not None else None,
            "files": [_file_json(f) for f in files] if files is not None else None,
            "workdir": workdir,
            "mounts": [_mount_json(m) for m in mounts] if mounts is not None else None,
            "rootfs": rootfs,
            "image": image,
        })
        status, raw, headers = self._call("POST", "/sessions", body)
        if status == 404:
            e = self._error(status, raw, headers)
            raise RunnerError(404, f"the runner at {self.url} has no sessions (POST /sessions "
                                   f"answered 404: {e.message}); it needs a ward with SPEC §11")
        if status not in (200, 201):
            self._raise(status, raw, headers)
        created = json.loads(raw.decode("utf-8"))
        if not isinstance(created, Mapping) or not isinstance(created.get("id"), str):
            raise RunnerError(status, f"POST /sessions answered no session id: {raw[:200]!r}")
        return Session(self, created["id"], created)

    def session_attach(self, session_id: str) -> "Session":
        """The session ``session_id`` (made earlier, perhaps by another
        process of the same client); SessionGone when it is not there."""
        s = Session(self, session_id)
        s.info()
        return s

    def sessions(self, node: Optional[str] = None) -> List[SessionInfo]:
        """The calling client's sessions on this runner (GET /sessions).
        Through a balancer each runner lists only its own: name it with
        ``node`` (its --node-id; the part of a session id before the
        "."), as deploy/haproxy.cfg requires."""
        path, base = "/sessions", self.url
        if node is not None:
            if not _NODE_RE.match(node):
                raise ValueError(f"{node!r} is not a node id ([A-Za-z0-9_-]{{1,63}})")
            path += "?node=" + node
            base = self._node_base(node)
        status, raw, headers = self._call("GET", path, base=base)
        if status != 200:
            self._raise(status, raw, headers)
        return [SessionInfo.from_json(d) for d in json.loads(raw.decode("utf-8"))]


def _signal_name(sig: Union[str, int]) -> str:
    if isinstance(sig, int):
        import signal as _signal
        sig = _signal.Signals(sig).name
    name = str(sig).upper()
    return name[3:] if name.startswith("SIG") else name


class Session:
    """One session on a runner (SPEC §11); made by :meth:`Runner.session`
    or :meth:`Runner.session_attach`.  A context manager: the session is
    deleted when the ``with`` block ends, however it ends.

    Every method raises :class:`SessionGone` when the session is no longer
    there, and :class:`RunnerError` for the runner's other refusals (429
    busy, 400 a bad request, 404 a file or process that does not exist)."""

    def __init__(self, runner: Runner, session_id: str, created: Optional[Mapping[str, Any]] = None):
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("a session id is a non-empty str")
        created = created or {}
        self.runner = runner
        self.id = session_id
        self.created_at = created.get("created_at", "")
        self.expires_at = created.get("expires_at", "")
        self.idle_expires_at = created.get("idle_expires_at", "")
        self.isolation = created.get("isolation", "")
        self.enforced = _from_dict(Enforced, created.get("enforced"))
        self._base = runner._node_base(node_of(session_id)) if runner.node_url else runner.url
        self._prefix = "/sessions/" + urllib.parse.quote(session_id, safe="")
        self.closed = False

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.close()
        except RunnerError:
            if exc_type is None:
                raise  # else the block's own exception is the one to see

    # the calls

    def _call(self, method: str, sub: str, body: Optional[Dict[str, Any]] = None,
              wait: Optional[float] = None, *, raw: Optional[bytes] = None,
              ok=(200,), accept: str = "application/json", probe: bool = False):
        """(body, headers) of a call on this session.  A 404 is
        SessionGone, except where the path names something inside the
        session (``probe``: a file, a process): there the session itself is
        asked for, and a 404 for what is inside is a plain RunnerError."""
        status, data, headers = self.runner._call(method, self._prefix + sub, body, wait, raw=raw,
                                                  base=self._base, accept=accept)
        if status in ok:
            return data, headers
        if status == 404 and (not probe or self._gone()):
            raise Runner._error(status, data, headers, SessionGone)
        raise Runner._error(status, data, headers)

    def _gone(self) -> bool:
        status, _, _ = self.runner._call("GET", self._prefix, base=self._base)
        return status == 404

    def info(self) -> SessionInfo:
        """GET /sessions/{id}: state, times, usage, processes."""
        data, _ = self._call("GET", "")
        return SessionInfo.from_json(json.loads(data.decode("utf-8")))

    def exec(self, command: Optional[str] = None, *, argv: Optional[Sequence[str]] = None,
             env: Optional[Mapping[str, str]] = None, stdin: Union[str, bytes, None] = None,
             cwd: Optional[str] = None, limits: Union[Limits, Mapping[str, Any], None] = None,
             collect: Optional[Sequence[str]] = None, background: bool = False):
        """Run a command in the session (a new process tree in the same
        sandbox: /work, /tmp and background processes are those of the
        earlier calls).  Answers its ExecResult; with ``background=True``
        a :class:`Process` at once (``stdin=PIPE`` gives it a stdin that
        :meth:`Process.write_stdin` writes to).  ``env`` goes over the
        session's; ``cwd`` is inside the sandbox (default /work)."""
        if not command and not argv:
            raise ValueError("give command (a non-empty shell string) or argv (a non-empty list)")
        body: Dict[str, Any] = {
            "command": command,
            "argv": list(argv) if argv is not None else None,
            "env": dict(env) if env is not None else None,
            "cwd": cwd,
            "limits": _limits_json(limits),
            "collect": list(collect) if collect is not None else None,
            "background": True if background else None,
        }
        _stdin_json(body, stdin)
        body = _clean(body)
        if background:
            data, _ = self._call("POST", "/exec", body, ok=(200, 201, 202))
            d = json.loads(data.decode("utf-8"))
            if not isinstance(d, Mapping) or not isinstance(d.get("pid"), int):
                raise RunnerError(202, f"a background exec answered no pid: {data[:200]!r}")
            return Process(self, d["pid"])
        data, _ = self._call("POST", "/exec", body, _wait_of(self.runner, body))
        return ExecResult.from_json(json.loads(data.decode("utf-8")))

    def exec_stream(self, command: Optional[str] = None, *, argv: Optional[Sequence[str]] = None,
                    env: Optional[Mapping[str, str]] = None, stdin: Union[str, bytes, None] = None,
                    cwd: Optional[str] = None, limits: Union[Limits, Mapping[str, Any], None] = None,
                    collect: Optional[Sequence[str]] = None) -> Iterator[Dict[str, Any]]:
        """``exec``, its output as it comes: the events of
        :meth:`Runner.exec_stream` (``{"stream", "data"}`` dicts, then
        ``{"result": {...}}``)."""
        if not command and not argv:
            raise ValueError("give command (a non-empty shell string) or argv (a non-empty list)")
        body: Dict[str, Any] = {
            "command": command,
            "argv": list(argv) if argv is not None else None,
            "env": dict(env) if env is not None else None,
            "cwd": cwd,
            "limits": _limits_json(limits),
            "collect": list(collect) if collect is not None else None,
        }
        _stdin_json(body, stdin)
        body = _clean(body)
        return _stream(self.runner, "POST", self._prefix + "/exec", body, _wait_of(self.runner, body), self._base,
                       SessionGone)

    def spawn(self, command: Optional[str] = None, **kw: Any) -> "Process":
        """``exec(..., background=True)``: a :class:`Process` that runs on."""
        kw["background"] = True
        return self.exec(command, **kw)

    def process(self, pid: int) -> "Process":
        """A handle on a process an earlier background exec started."""
        return Process(self, int(pid))

    def processes(self) -> List[ProcessInfo]:
        """GET /sessions/{id}/processes."""
        data, _ = self._call("GET", "/processes")
        return [_from_dict(ProcessInfo, d) for d in json.loads(data.decode("utf-8"))]

    # files of /work

    def write(self, path: str, content: Union[str, bytes], mode: Optional[int] = None) -> None:
        """Write ``content`` (str as UTF-8) to ``path`` relative to /work;
        parents are made.  ``mode``: e.g. 0o755."""
        sub = "/files/" + _quote_path(path)
        if mode is not None:
            if not isinstance(mode, int) or not 0 <= mode <= 0o7777:
                raise ValueError(f"mode {mode!r}: an int permission mode such as 0o644")
            sub += "?mode=" + format(mode, "04o")
        if isinstance(content, str):
            content = content.encode("utf-8")
        self._call("PUT", sub, raw=bytes(content), ok=(200, 201, 204), probe=True)

    def read(self, path: str) -> bytes:
        """The bytes of the file ``path`` (relative to /work).  A directory
        raises IsADirectoryError (use :meth:`ls`)."""
        data, headers = self._call("GET", "/files/" + _quote_path(path), probe=True,
                                   accept="application/octet-stream")
        if headers.get_content_type() == "application/json":
            raise IsADirectoryError(f"{path!r} is a directory in session {self.id}: use ls()")
        return data

    def ls(self, path: str = "") -> List[FileEntry]:
        """The entries of the directory ``path`` (relative to /work; ""
        for /work itself)."""
        data, headers = self._call("GET", "/files/" + _quote_path(path, allow_empty=True),
                                   probe=True)
        if headers.get_content_type() != "application/json":
            raise NotADirectoryError(f"{path!r} is a file in session {self.id}: use read()")
        return [_from_dict(FileEntry, d) for d in json.loads(data.decode("utf-8"))]

    def rm(self, path: str) -> None:
        """Remove the file ``path`` (relative to /work)."""
        self._call("DELETE", "/files/" + _quote_path(path), ok=(200, 204), probe=True)

    # the end

    def close(self) -> None:
        """Delete the session: every process killed, its sandbox and
        files removed.  A session that is already gone is fine."""
        if self.closed:
            return
        try:
            self._call("DELETE", "", ok=(200, 204))
        except SessionGone:
            pass
        self.closed = True

    delete = close


class Process:
    """A process a background exec started in a session."""

    def __init__(self, session: Session, pid: int):
        self.session = session
        self.pid = pid

    def __repr__(self) -> str:
        return f"Process({self.session.id!r}, pid={self.pid})"

    def _sub(self, what: str) -> str:
        return f"/processes/{self.pid}/{what}"

    def output(self) -> ProcessOutput:
        """Its output so far (head and tail as kept by the runner), and its
        result when it has exited."""
        data, _ = self.session._call("GET", self._sub("output"), probe=True,
                                     accept="application/x-ndjson")
        return ProcessOutput.of(list(_ndjson_events(data.splitlines())))

    def follow(self, timeout: Optional[float] = None) -> Iterator[OutputEvent]:
        """Its output as it comes (``?follow=1``), event by event, until it
        has exited (the last event carries the result).  ``timeout``: the
        longest silence to wait for (None: as long as it runs)."""
        s = self.session
        resp = s.runner._open("GET", s._prefix + self._sub("output") + "?follow=1", None, timeout,
                              base=s._base, accept="application/x-ndjson")
        try:
            status = resp.getcode()
            if status != 200:
                data = resp.read()
                if status == 404 and s._gone():
                    raise Runner._error(status, data, resp.headers, SessionGone)
                raise Runner._error(status, data, resp.headers)
            try:
                yield from _ndjson_events(iter(resp.readline, b""))
            except OSError as e:
                raise RunnerError(0, f"the output stream of {self!r} broke off: {e}") from e
        finally:
            resp.close()

    def wait(self, timeout: Optional[float] = None) -> ExecResult:
        """Follow it to its end; its result."""
        for ev in self.follow(timeout):
            if ev.result is not None:
                return ev.result
        raise RunnerError(0, f"the output stream of {self!r} ended without its result")

    def write_stdin(self, data: Union[str, bytes]) -> None:
        """Write to its stdin (it was started with ``stdin=PIPE``)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        self.session._call("POST", self._sub("stdin"), raw=bytes(data), ok=(200, 202, 204), probe=True)

    def close_stdin(self) -> None:
        """Close its stdin: it reads end of file."""
        self.session._call("POST", self._sub("stdin") + "?close=1", raw=b"", ok=(200, 202, 204),
                           probe=True)

    def signal(self, sig: Union[str, int] = "TERM") -> None:
        """Send INT, TERM or KILL (also "SIGTERM", signal.SIGTERM) to its
        process tree."""
        self.session._call("POST", self._sub("signal"), {"signal": _signal_name(sig)},
                           ok=(200, 202, 204), probe=True)

    def info(self) -> ProcessInfo:
        """Its line of the session's process list."""
        for p in self.session.processes():
            if p.pid == self.pid:
                return p
        raise RunnerError(404, f"no process {self.pid} in session {self.session.id}")
