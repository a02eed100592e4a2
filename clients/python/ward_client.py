"""ward_client — a client for a ``ward serve`` runner (SPEC §5), standard
library only.

    from ward_client import Runner
    r = Runner("http://127.0.0.1:8900", token="...")
    res = r.exec("python3 -c 'print(6*7)'", limits={"timeout_s": 5})
    print(res.exit_code, res.stdout)

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
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = [
    "Runner", "RunnerError", "ExecResult", "Enforced", "Usage", "TestReport",
    "TestDetail", "Health", "Mount", "File", "Limits",
]


class RunnerError(Exception):
    """The runner did not run the request (HTTP status other than 200), or
    could not be reached (``status`` 0)."""

    def __init__(self, status: int, message: str, retry_after: Optional[float] = None):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


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


def _limits_json(l: Union[Limits, Mapping[str, Any], None]) -> Optional[Dict[str, Any]]:
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

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ExecResult":
        r = _from_dict(cls, d)
        r.enforced = _from_dict(Enforced, d.get("enforced"))
        r.usage = _from_dict(Usage, d.get("usage"))
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
class Health:
    status: str = ""
    isolation: str = ""
    version: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# ---------------------------------------------------------------- client

class Runner:
    """A ``ward serve`` runner at ``url`` (e.g. ``http://127.0.0.1:8900``).

    ``token``: sent as ``Authorization: Bearer``.  ``client``: sent as
    ``X-Ward-Client``, a sub-client within the token's (or address's)
    quota: it can split that quota (``--subclient-*``), never add to it.
    ``timeout``: seconds to wait for an answer beyond the run's own
    ``timeout_s`` (the runner may queue the request first)."""

    def __init__(self, url: str, token: Optional[str] = None, client: Optional[str] = None,
                 timeout: float = 120.0):
        self.url = url.rstrip("/")
        self.token = token
        self.client = client
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
              wait: Optional[float] = None):
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.client:
            headers["X-Ward-Client"] = self.client
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=wait or self.timeout) as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise RunnerError(0, f"runner at {self.url} not reachable: {reason}") from e

    @staticmethod
    def _raise(status: int, raw: bytes, headers) -> None:
        try:
            msg = json.loads(raw.decode("utf-8")).get("error", "")
        except (ValueError, AttributeError, UnicodeDecodeError):
            msg = raw.decode("utf-8", "replace")[:400]
        ra = headers.get("Retry-After") if headers is not None else None
        try:
            retry = float(ra) if ra is not None else None
        except ValueError:
            retry = None
        raise RunnerError(status, msg or f"HTTP {status}", retry)

    def exec(self, command: Optional[str] = None, *, argv: Optional[Sequence[str]] = None,
             workdir: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
             mounts: Optional[Sequence[Union[Mount, Mapping[str, Any]]]] = None,
             limits: Union[Limits, Mapping[str, Any], None] = None,
             files: Optional[Sequence[Union[File, Mapping[str, Any]]]] = None,
             stdin: Union[str, bytes, None] = None, network: Optional[str] = None,
             isolation: Optional[str] = None) -> ExecResult:
        """Run one command (``command``: a shell string; ``argv``: a list,
        run without a shell) in a fresh sandbox on the runner.  An empty
        ``command``, ``argv`` or ``workdir`` counts as not given, as the
        runner reads them (SPEC §5)."""
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
        }
        if isinstance(stdin, (bytes, bytearray)):
            body["stdin"] = base64.b64encode(bytes(stdin)).decode("ascii")
            body["stdin_encoding"] = "base64"
        else:
            body["stdin"] = stdin
        body = _clean(body)
        lim = body.get("limits") or {}
        wait = self.timeout + float(lim.get("timeout_s") or 30)
        status, raw, headers = self._call("POST", "/exec", body, wait)
        if status != 200:
            self._raise(status, raw, headers)
        return ExecResult.from_json(json.loads(raw.decode("utf-8")))

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
