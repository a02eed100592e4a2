#!/bin/bash
# The Judge0 dialect within the runner's maxima, and as Judge0 names
# itself (issue 30, items 9 and 10):
# - under --max-cpu 1, a cpu_time_limit of 7 is refused as Judge0 refuses
#   one above its own maximum (422 naming the most), the defaults are
#   lowered (5 s of CPU and 1 s extra become 1 and 0), /config_info says
#   so; "nan" and "inf" are no numbers;
# - /languages names "Python (3.11.2)" (Judge0's "Name (version)", the
#   version the toolchain reports), and a runner with tokens answers 401
#   telling Judge0 clients to send X-Auth-Token, which it takes.
. "$(dirname "$0")/dialect.bash"

printf 'alice tok-alice-0123456789\n' >"$SERVE_TMP/tokens"
start_dialects limits --judge0 127.0.0.1:0 --token-file "$SERVE_TMP/tokens" --max-cpu 1 --max-timeout 4 || exit 0
J=$(dialect_url judge0)

out=$(timeout 300 /usr/bin/python3 - "$J" "$DDIR" <<'PY'
import json, sys
J = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import j0http
def call(method, path, body=None, token="tok-alice-0123456789"):
    return j0http.call(J, method, path, body, token)
out = {}
src = "print(1)"
for k, v in [("cpu_time_limit", 7), ("cpu_time_limit", "7"), ("wall_time_limit", 5), ("cpu_extra_time", 1),
             ("cpu_time_limit", "nan"), ("wall_time_limit", "NaN"), ("memory_limit", "inf"), ("cpu_time_limit", "-inf")]:
    extra = {"cpu_time_limit": 1} if k == "cpu_extra_time" else {}
    out[f"{k}={v}"] = call("POST", "/submissions", {"language_id": 71, "source_code": src, k: v, **extra})
c, a = call("POST", "/submissions?wait=true&fields=status_id,cpu_time_limit,cpu_extra_time,wall_time_limit",
            {"language_id": 71, "source_code": src})
out["defaults"] = [c, a]
c, a = call("POST", "/submissions?wait=true&fields=status_id,cpu_time_limit,cpu_extra_time",
            {"language_id": 71, "source_code": src, "cpu_time_limit": 0.5, "cpu_extra_time": 0.5})
out["within"] = [c, a]
c, cfg = call("GET", "/config_info")
out["config"] = {k: cfg.get(k) for k in ("cpu_time_limit", "max_cpu_time_limit", "cpu_extra_time", "max_cpu_extra_time",
                                         "wall_time_limit", "max_wall_time_limit")}
c, langs = call("GET", "/languages")
out["languages"] = langs
c, one = call("GET", "/languages/71")
out["language71"] = one.get("name") if isinstance(one, dict) else one
out["401"] = call("GET", "/languages", token=None)
out["401_wrong"] = call("GET", "/languages", token="nope")
out["query_token"] = call("GET", "/languages?X-Auth-Token=tok-alice-0123456789", token=None)[0]
print(json.dumps(out))
PY
)
v() { jg "$out" "$1"; }
expect_eq "hostile: --max-cpu 1: cpu_time_limit 7 is a 422 naming the most (as Judge0 above its maximum)" \
	"422 {'cpu_time_limit': ['must be less than or equal to 1.0']}" "$(v 'str(d["cpu_time_limit=7"][0]) + " " + str(d["cpu_time_limit=7"][1])')"
expect_eq "hostile: ... as a string \"7\" too" 422 "$(v 'd["cpu_time_limit=7"][0]')"
expect_eq "hostile: --max-timeout 4: wall_time_limit 5 is a 422" \
	"422 {'wall_time_limit': ['must be less than or equal to 4.0']}" "$(v 'str(d["wall_time_limit=5"][0]) + " " + str(d["wall_time_limit=5"][1])')"
expect_eq "hostile: cpu_time_limit 1 with cpu_extra_time 1 (2 s of CPU under --max-cpu 1): 422" \
	"422 {'cpu_extra_time': ['must be less than or equal to 0.0']}" "$(v 'str(d["cpu_extra_time=1"][0]) + " " + str(d["cpu_extra_time=1"][1])')"
for k in 'cpu_time_limit=nan' 'wall_time_limit=NaN' 'memory_limit=inf' 'cpu_time_limit=-inf'; do
	expect_eq "hostile: $k is not a number (422)" "422 is not a number" "$(v 'str(d["'"$k"'"][0]) + " " + list(d["'"$k"'"][1].values())[0][0]')"
done
expect_eq "the defaults are lowered to the maxima: 1 s of CPU, no extra, 4 s of wall (Accepted)" \
	"201 3 1.0 0.0 4.0" "$(v 'str(d["defaults"][0]) + " " + " ".join(str(d["defaults"][1][k]) for k in ("status_id", "cpu_time_limit", "cpu_extra_time", "wall_time_limit"))')"
expect_eq "limits within the maxima are kept" "201 3 0.5 0.5" "$(v 'str(d["within"][0]) + " " + " ".join(str(d["within"][1][k]) for k in ("status_id", "cpu_time_limit", "cpu_extra_time"))')"
expect_eq "/config_info says the limits in force" \
	"{'cpu_time_limit': 1.0, 'max_cpu_time_limit': 1.0, 'cpu_extra_time': 0.0, 'max_cpu_extra_time': 1.0, 'wall_time_limit': 4.0, 'max_wall_time_limit': 4.0}" "$(v 'd["config"]')"
py=$(v '[l["name"] for l in d["languages"] if l["id"] == 71][0]')
pyv=$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')
expect_eq "/languages names Python as Judge0 does: Name (version), the toolchain's version" "Python ($pyv)" "$py"
expect_eq "/languages/71 too" "Python ($pyv)" "$(v 'd["language71"]')"
expect_contains "C as Judge0 names it: C (GCC 12...)" "$(v '[l["name"] for l in d["languages"] if l["id"] == 50]')" "C (GCC "
expect_eq "no token: 401" 401 "$(v 'd["401"][0]')"
expect_contains "the 401 tells a Judge0 client to send X-Auth-Token" "$(v 'd["401"][1]["error"]')" "send X-Auth-Token"
expect_not_contains "... not Authorization: Bearer" "$(v 'd["401"][1]["error"]')" "Bearer"
expect_eq "a wrong X-Auth-Token: 401" 401 "$(v 'd["401_wrong"][0]')"
expect_eq "X-Auth-Token as a query parameter is taken" 200 "$(v 'd["query_token"]')"
stop_dialects limits
