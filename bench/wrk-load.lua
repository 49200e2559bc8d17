-- One load phase of `npm run bench`, run by wrk 4.1 (bench/wrk.ts spawns it with this script).
-- The paths are ready-made (presigned) lines of the file WRK_PATHS; wrk thread `id` takes the
-- lines k with k % WRK_THREADS == id and sends WRK_METHOD to them in turn, with a body of
-- WRK_BODY_BYTES bytes for a PUT, each different: its first bytes name the thread and the request,
-- so no two PUTs of a run share their content (identical bodies would all be one deduplicated
-- blob, which costs the server less than the distinct objects of real use). WRK_ONCE=1 sends each path once (new
-- keys: a thread stops once every path of its own is answered); otherwise the paths are cycled
-- until wrk's duration ends. An answer counts when it is 2xx and, for a GET, WRK_GET_BYTES long.
-- done() prints one line, "WRK-RESULT " and a JSON object, which bench/wrk.ts reads.

local ffi = require("ffi")
ffi.cdef([[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *now);
]])
local CLOCK_MONOTONIC = 1
local clock_buffer = ffi.new("bench_timespec")

-- wrk's own duration is the full -d even when every thread stopped early, having sent each of its
-- paths once: the time of such a phase is taken here instead, first request to last answer.
local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock_buffer)
  return tonumber(clock_buffer.tv_sec) * 1e6 + tonumber(clock_buffer.tv_nsec) / 1e3
end

-- Bytes of a failed answer's body kept to explain it.
local ERROR_TEXT_MAX = 200

-- Main state: the threads in the order wrk made them, for done().
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  threads[#threads + 1] = thread
end

-- Thread states. `id` is set by setup() before init() runs; the counters are globals so that
-- done() can read them with thread:get.
local method, body, paths, once, get_bytes
-- Bytes at the head of each PUT body that make it unique (thread id and request number).
local UNIQUE_HEAD_BYTES = 16
local next_index = 1
-- wrk 4.1 calls request() of the thread it makes first once before the run, only to check that
-- it returns a request: that call must not use up a path, or a PUT phase's first key would be
-- counted as sent but never be written.
local checked = false
sent, answered, failed, started_us, ended_us, first_error = 0, 0, 0, nil, nil, nil
-- Whether the thread stopped early, every path of its own sent once and answered.
finished = false

function init(args)
  local thread_count = tonumber(os.getenv("WRK_THREADS"))
  method = os.getenv("WRK_METHOD")
  once = os.getenv("WRK_ONCE") == "1"
  get_bytes = tonumber(os.getenv("WRK_GET_BYTES") or "")
  local body_bytes = tonumber(os.getenv("WRK_BODY_BYTES") or "0")
  if method == "PUT" then
    assert(body_bytes >= UNIQUE_HEAD_BYTES, "a PUT body must hold its unique head")
    body = string.rep("a", body_bytes - UNIQUE_HEAD_BYTES)
  end
  checked = id ~= 0
  paths = {}
  local k = 0
  for line in io.lines(os.getenv("WRK_PATHS")) do
    if k % thread_count == id then paths[#paths + 1] = line end
    k = k + 1
  end
  -- bench/wrk.ts runs no more threads than paths: without one, wrk would send its default "/".
  assert(#paths > 0, "wrk thread " .. id .. " has no path")
end

-- The body of the request numbered `n` of this thread: nil for a GET.
local function body_of(n)
  if body == nil then return nil end
  return string.format("%08x%08x", id, n) .. body
end

function request()
  if not checked then
    checked = true
    return wrk.format(method, paths[1], nil, body_of(0))
  end
  if next_index > #paths then
    -- Nothing is left to send: an empty request writes nothing, and the connection idles until
    -- the thread stops (response() stops it once the last answer is in).
    if once then return "" end
    next_index = 1
  end
  local path = paths[next_index]
  next_index = next_index + 1
  sent = sent + 1
  if started_us == nil then started_us = now_us() end
  return wrk.format(method, path, nil, body_of(sent))
end

function response(status, headers, text)
  ended_us = now_us()
  if status >= 200 and status <= 299 and (get_bytes == nil or #text == get_bytes) then
    answered = answered + 1
  else
    failed = failed + 1
    if first_error == nil then
      local what = status >= 200 and status <= 299 and ("got " .. #text .. " bytes") or text
      first_error = method .. " " .. status .. ": " .. what:sub(1, ERROR_TEXT_MAX)
    end
  end
  if once and next_index > #paths and answered + failed == sent then
    finished = true
    wrk.thread:stop()
  end
end

local function json_string(text)
  local escaped = text:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end)
  return '"' .. escaped .. '"'
end

-- utime + stime of wrk itself, in ticks of 10 ms: done() runs once its threads have ended, and
-- the process's figure keeps theirs.
local function own_cpu_ticks()
  local file = io.open("/proc/self/stat", "r")
  if file == nil then return 0 end
  local stat = file:read("*a")
  file:close()
  -- Fields start after the name's closing parenthesis: utime and stime are the 12th and 13th.
  local fields = {}
  for field in stat:sub(stat:find("%)[^)]*$") + 2):gmatch("%S+") do
    fields[#fields + 1] = field
  end
  return (tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)
end

local function json_number(value)
  return string.format("%.0f", value)
end

function done(summary, latency, requests)
  local rows = {}
  local first, last, error_text, all_finished = nil, nil, nil, true
  for _, thread in ipairs(threads) do
    local started, ended = thread:get("started_us"), thread:get("ended_us")
    if started ~= nil and (first == nil or started < first) then first = started end
    if ended ~= nil and (last == nil or ended > last) then last = ended end
    error_text = error_text or thread:get("first_error")
    all_finished = all_finished and thread:get("finished")
    rows[#rows + 1] = string.format(
      '{"id":%d,"sent":%d,"answered":%d,"failed":%d}',
      thread:get("id"), thread:get("sent"), thread:get("answered"), thread:get("failed"))
  end
  local duration = summary.duration
  if all_finished and first ~= nil and last ~= nil and last > first then duration = last - first end
  local errors = summary.errors
  local fields = {
    '"requests":' .. json_number(summary.requests),
    '"durationUs":' .. json_number(duration),
    '"bytesRead":' .. json_number(summary.bytes),
    '"status":' .. json_number(errors.status),
    '"timeouts":' .. json_number(errors.timeout),
    '"connectErrors":' .. json_number(errors.connect),
    '"readErrors":' .. json_number(errors.read),
    '"writeErrors":' .. json_number(errors.write),
    '"p50Us":' .. json_number(latency:percentile(50)),
    '"p99Us":' .. json_number(latency:percentile(99)),
    '"clientCpuTicks":' .. json_number(own_cpu_ticks()),
    '"threads":[' .. table.concat(rows, ",") .. "]",
    '"firstError":' .. (error_text == nil and "null" or json_string(error_text)),
  }
  io.write("WRK-RESULT {" .. table.concat(fields, ",") .. "}\n")
end
