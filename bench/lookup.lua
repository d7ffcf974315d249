-- wrk script: GET student look-ups at the gate (each one recorded in the access log).
-- usage: wrk -t2 -c64 -d10s -s bench/lookup.lua http://127.0.0.1:8080
-- Set SCHOOLS=N to spread over a district roster made by make-roster.py --schools N.
local classes = {10, 12, 9}
local schools = tonumber(os.getenv("SCHOOLS") or "1")
local counter = 0

request = function()
  counter = counter + 1
  local grade = counter % 3 + 1
  local class = counter % classes[grade] + 1
  local number = counter % 28 + 1
  local school, gate = "demo-hs", "t-gate-01"
  if schools > 1 then
    school = string.format("school-%03d", counter % schools + 1)
    gate = school .. "-t-gate-01"
  end
  return wrk.format("GET", string.format("/v1/schools/%s/students/%d/%d/%d", school, grade, class, number), {
    ["Authorization"] = "Bearer demo-" .. gate,
  })
end

done = function(summary, latency, requests)
  io.write(string.format("requests/s %.0f  p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  errors %d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
