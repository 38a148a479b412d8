-- wrk script: POST /v1/jobs with the spec file named by $SUBMIT_SPEC.
-- Counts the 201s (and everything else) per thread and prints the totals,
-- so run.sh can check them against the jobs PostgreSQL holds afterwards.
local spec_path = os.getenv("SUBMIT_SPEC") or "examples/digits-mlp.json"
local file = assert(io.open(spec_path, "rb"))
local body = file:read("*a")
file:close()

wrk.method = "POST"
wrk.path = "/v1/jobs"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  created = 0
  other = 0
end

function response(status, headers, response_body)
  if status == 201 then
    created = created + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local total_created, total_other = 0, 0
  for _, thread in ipairs(threads) do
    total_created = total_created + thread:get("created")
    total_other = total_other + thread:get("other")
  end
  io.write(string.format("created_201 %d\n", total_created))
  io.write(string.format("other_status %d\n", total_other))
  io.write(string.format("socket_errors %d\n", summary.errors.connect + summary.errors.read +
                         summary.errors.write + summary.errors.timeout))
end
