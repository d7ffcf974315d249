-- wrk script: POST valid, varied registrations for the sample school; with
-- LOOKUP=1, GET the same seats' student look-ups instead (each one a read
-- recorded in the access log).
-- usage: wrk -t2 -c64 -d10s -s bench/post.lua http://127.0.0.1:8080
-- Set SCHOOLS=N to spread over a district roster made by make-roster.py --schools N.
local reasons = {
  '{"code":"wrongClothes"}', '{"code":"noShoes"}', '{"code":"trespassing"}',
  '{"code":"others","detail":"benchmark"}',
}
local classes = {10, 12, 9}
local schools = tonumber(os.getenv("SCHOOLS") or "1")
local lookup = os.getenv("LOOKUP") == "1"
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
  if lookup then
    return wrk.format("GET", string.format("/v1/schools/%s/students/%d/%d/%d", school, grade, class, number), {
      ["Authorization"] = "Bearer demo-" .. gate,
    })
  end
  -- recordedBy is required when the roster has no tokens.csv.
  local body = string.format('{"student":{"grade":%d,"classNumber":%d,"number":%d},"reason":%s,"recordedBy":"%s"}',
    grade, class, number, reasons[counter % 4 + 1], gate)
  return wrk.format("POST", "/v1/schools/" .. school .. "/guidances", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer demo-" .. gate,
  }, body)
end

local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

done = function(summary, latency, requests)
  io.write(string.format("requests/s %.0f  p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  errors %d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status))
end
