"""tests/serve/deeptutor_client.py — drive `ward serve` through DeepTutor's own
client, RunnerSidecarBackend (../shared/thirdparty/deeptutor, unmodified), the
way the DeepTutor app calls it.  Used by tests/serve/deeptutor.sh (not a test
itself: tests/run only runs *.sh).

    deeptutor_client.py CLIENT_DIR URL <CASES

CASES is a JSON list of objects: {"name": N, "health": true} calls health();
any other case builds an ExecRequest as the app does, from "command" or from
"argv" (through ExecRequest.of_argv), with "workdir", "mounts" (a list of
Mount fields), "env" and "limits" (ResourceLimits fields) only when the case
names them, so that every other field keeps the client's default.  Prints one
JSON object: N -> {"result": the ExecResult's fields (or [ok, detail] for
health), "sent": the body the client put on the wire (null for health)}.
"""

import asyncio
import dataclasses
import json
import sys

sys.path.insert(0, sys.argv[1])

import httpx  # noqa: E402 (after the path: the client imports it too)

from deeptutor.services.sandbox.backends import RunnerSidecarBackend  # noqa: E402
from deeptutor.services.sandbox.spec import ExecRequest, Mount, ResourceLimits  # noqa: E402

# The bodies the client sends, as bytes, recorded on their way out: the
# client itself is not touched, only httpx's send is wrapped.
_sent = []
_send = httpx.AsyncClient.send


async def _recording_send(self, request, *args, **kwargs):
    _sent.append(bytes(request.content))
    return await _send(self, request, *args, **kwargs)


httpx.AsyncClient.send = _recording_send


def build(case):
    kw = {}
    if "workdir" in case:
        kw["workdir"] = case["workdir"]
    if "mounts" in case:
        kw["mounts"] = tuple(Mount(**m) for m in case["mounts"])
    if "env" in case:
        kw["env"] = case["env"]
    if "limits" in case:
        kw["limits"] = ResourceLimits(**case["limits"])
    if "argv" in case:
        return ExecRequest.of_argv(case["argv"], **kw)
    return ExecRequest(command=case["command"], **kw)


async def run(url, cases):
    backend = RunnerSidecarBackend(url)
    out = {}
    for case in cases:
        del _sent[:]
        if case.get("health"):
            out[case["name"]] = {"result": list(await backend.health()), "sent": None}
            continue
        res = await backend.exec(build(case))
        body = json.loads(_sent[-1]) if _sent else None
        out[case["name"]] = {"result": dataclasses.asdict(res), "sent": body}
    return out


print(json.dumps(asyncio.run(run(sys.argv[2], json.load(sys.stdin)))))
