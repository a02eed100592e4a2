-- bench/serve_exec.lua — wrk script for bench/serve.sh and bench/deeptutor.sh:
-- POST /exec running `true` (argv, no shell; or $BENCH_BODY: DeepTutor's own
-- request), and a count of answers that were not 200 or whose exit_code was
-- not 0, so that a fast stream of errors is never reported as throughput.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY") or '{"argv":["true"]}'
wrk.headers["Content-Type"] = "application/json"
if os.getenv("WARD_BENCH_TOKEN") then
  wrk.headers["Authorization"] = "Bearer " .. os.getenv("WARD_BENCH_TOKEN")
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  bad = 0
end

function response(status, headers, body)
  -- ward writes "exit_code":0, DeepTutor's runner "exit_code": 0
  if status ~= 200 or not string.find(body, '"exit_code": ?0[,}]') then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do
    n = n + t:get("bad")
  end
  io.write(string.format("BENCH %d %.3f %.3f %d %d\n",
    summary.requests, latency:percentile(50) / 1000, latency:percentile(99) / 1000, n,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
