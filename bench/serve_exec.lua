-- bench/serve_exec.lua — wrk script for bench/serve.sh: POST /exec running
-- `true` (argv, no shell), and a count of answers that were not 200 or whose
-- result was not "ok", so that a fast stream of errors is never reported as
-- throughput.
wrk.method = "POST"
wrk.body = '{"argv":["true"]}'
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
  if status ~= 200 or not string.find(body, '"status":"ok"', 1, true) then
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
