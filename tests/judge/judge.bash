# tests/judge/judge.bash — sourced by tests/judge/*.sh: a runner, and jobs
# made with python3 (the programs' sources read from files).
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.bash"
JDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# job LANG SOURCE_FILE TESTS_JSON [EXTRA_JSON] — a POST /judge body on stdout
job() {
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
lang, src, tests = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
name = src.rsplit('/', 1)[-1]
j = {"language": lang, "files": [{"path": name, "content": open(src).read()}], "tests": tests}
j.update(extra)
print(json.dumps(j))
PY
}

# post_judge BODYFILE — POST /judge: the answer in $ANS, the HTTP code in $CODE
post_judge() {
	local out
	out=$(curl -s -m 300 -w '\n%{http_code}' -H 'Content-Type: application/json' --data-binary @"$1" "$URL/judge")
	CODE=${out##*$'\n'}
	ANS=${out%$'\n'*}
}
