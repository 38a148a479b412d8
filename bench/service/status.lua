-- wrk script: GET /v1/jobs/{id} for ids drawn uniformly from
-- [$FIRST_ID, $LAST_ID]. Counts 200s and everything else per thread.
local first_id = tonumber(os.getenv("FIRST_ID") or "1")
local last_id = tonumber(os.getenv("LAST_ID") or "1")

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_number", #threads)
end

function init(args)
  ok = 0
  other = 0
  math.randomseed(os.time() * 100 + thread_number)
end

function request()
  return wrk.format("GET", "/v1/jobs/" .. math.random(first_id, last_id))
end

function response(status, headers, body)
  if status == 200 then
    ok = ok + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local total_ok, total_other = 0, 0
  for _, thread in ipairs(threads) do
    total_ok = total_ok + thread:get("ok")
    total_other = total_other + thread:get("other")
  end
  io.write(string.format("ok_200 %d\n", total_ok))
  io.write(string.format("other_status %d\n", total_other))
  io.write(string.format("socket_errors %d\n", summary.errors.connect + summary.errors.read +
                         summary.errors.write + summary.errors.timeout))
end
