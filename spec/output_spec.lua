-- Output of background commands is never lost while someone reads it: a
-- full h:read queue stops reading the pipe (the command blocks in write, as
-- on any pipe) until the reader drains it. Checked byte for byte with
-- checksums over streams of 64 MB, a thousand turns of the smallest queue
-- (SANDBOX_STREAM_MB sets it: down for the sanitizer and valgrind runs, up
-- for a long soak; make bench measures the throughput), with host memory
-- bounded. On every
-- runner: the local one, and the remote one over the E2B test peer (whose
-- envd-like stream holds 64 events, then waits for its reader), with a
-- stream of at most 32 MB (each byte crosses envd's JSON and base64).
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"

local MB = tonumber(os.getenv("SANDBOX_STREAM_MB") or "64")

local RUNNERS = {
  { name = "local", mb = MB, new = function(opts)
    opts = opts or {}
    opts.base_dir = backends.tmpdir("out")
    if os.getenv("SANDBOX_TEST_UNCONFINED") then opts.confine = false end
    return assert(sandbox.container(opts))
  end },
}
-- Under a sanitizer (SANDBOX_LUA_PRELOAD), freed memory waits in ASan's
-- quarantine and the stream thread's allocator caches: the remote runner's
-- peak there measures those (60+ MB for an 8 MB stream), so its memory
-- bound is checked by the plain run (0 to 6 MB over 32 MB measured).
local sanitized = (os.getenv("SANDBOX_LUA_PRELOAD") or "") ~= ""
for _, b in ipairs(backends.list) do
  if b.kind == "remote" then
    RUNNERS[#RUNNERS + 1] = { name = "remote", mb = math.min(MB, 32), new = b.new, no_bound = sanitized }
  end
end

local function hwm()
  collectgarbage()
  collectgarbage()
  local f = assert(io.open("/proc/self/status"))
  local kb = f:read("*a"):match("VmHWM:%s+(%d+)")
  f:close()
  return tonumber(kb) * 1024
end

local function reset_hwm()
  local f = io.open("/proc/self/clear_refs", "w")
  if f then f:write("5") f:close() end -- resets the peak, where the kernel allows it
end

local function sha(path)
  local out = sh.lines("sha256sum " .. sh.quote(path))[1]
  return out:match("^(%x+)")
end

-- A command that writes `bytes` random bytes to stdout (and its copy to
-- `sent` in the root, to compare with).
local function streamer(bytes)
  return { "sh", "-c", ("head -c %d /dev/urandom | tee sent"):format(bytes) }
end

-- The checksum of a file in the sandbox, computed there.
local function sent_sha(sb)
  return assert(sb:exec("sha256sum", { "sent" })).stdout:match("^(%x+)")
end

for _, runner in ipairs(RUNNERS) do
local new, BYTES = runner.new, runner.mb * 1024 * 1024
local RUN_MB = runner.mb
describe(("background output (%s runner)"):format(runner.name), function()
  local cases = {
    { name = "64 KiB queue, reads that do not wait", max = "64KB", timeout = function() return 0 end },
    { name = "1 MiB queue, short waits and a slow reader", max = "1MB",
      timeout = function(i) return i % 2 == 0 and 0.01 or 0 end, slow = true },
    { name = "default queue, blocking reads", timeout = function() return -1 end },
  }
  for _, c in ipairs(cases) do
    it(("reaches an h:read loop byte for byte: %d MB, %s"):format(RUN_MB, c.name), function()
      local sb = new { max_output_bytes = c.max }
      reset_hwm()
      local before = hwm()
      local argv = streamer(BYTES)
      local h = assert(sb:exec(argv[1], { argv[2], argv[3] }, { background = true }))
      local recv = backends.tmpdir("received") .. "/received"
      local f = assert(io.open(recv, "wb"))
      local i, got = 0, 0
      while true do
        i = i + 1
        local chunk = h:read("stdout", c.timeout(i))
        if chunk == nil then break end
        got = got + #chunk
        f:write(chunk)
        if c.slow and i % 200 == 0 then sh.run("sleep 0.02") end -- let the queue fill up
        -- the chunks read are the host's garbage, not the sandbox's memory:
        -- collect as we go (LuaJIT's collector lets 1 MiB strings pile up)
        if i % 16 == 0 then collectgarbage() end
      end
      f:close()
      local r = assert(h:wait())
      assert.equal(0, r.exit_code, r.stderr)
      assert.equal(BYTES, got)
      assert.equal(0, r.read_dropped)
      assert.equal(0, h.read_dropped)
      assert.equal(sent_sha(sb), sha(recv))
      local grew = hwm() - before
      if not runner.no_bound then
        assert.is_true(grew < 48 * 1024 * 1024, ("host memory grew by %d bytes"):format(grew))
      end
      sb:dispose()
    end)
  end

  it(("reaches on_stdout byte for byte: %d MB"):format(RUN_MB), function()
    local sb = new { max_output_bytes = "64KB" }
    local recv = backends.tmpdir("received") .. "/received"
    local f = assert(io.open(recv, "wb"))
    local got = 0
    local argv = streamer(BYTES)
    local h = assert(sb:exec(argv[1], { argv[2], argv[3] }, {
      background = true, on_stdout = function(chunk) got = got + #chunk; f:write(chunk) end,
    }))
    local r = assert(h:wait())
    f:close()
    assert.equal(0, r.exit_code)
    assert.equal(BYTES, got)
    assert.equal(sent_sha(sb), sha(recv))
    assert.has_error(function() h:read("stdout") end, "h:read: this process's stdout goes to its on_stdout callback")
    sb:dispose()
  end)

  it("blocks a command whose queue is full until the reader drains it", function()
    local sb = new { max_output_bytes = "64KB" }
    -- more than a link's buffers hold (a loopback TCP connection takes a few MB each way)
    local bytes = runner.name == "remote" and 50000000 or 4000000
    local h = assert(sb:exec("sh", { "-c", "head -c " .. bytes .. " /dev/zero; touch done" }, { background = true }))
    sb:poll(0.5)
    sh.run("sleep 0.5")
    sb:poll(0.1)
    assert.is_false(sb:exists("done"), "the command ran on although nobody read")
    assert.is_true(h:running())
    local got = 0
    while true do
      local c = h:read("stdout", -1)
      if not c then break end
      got = got + #c
    end
    assert.equal(bytes, got)
    assert(h:wait(5))
    assert.is_true(sb:exists("done"))
    sb:dispose()
  end)

  it("lets h:wait finish a command nobody reads, counting what went past h:read", function()
    local sb = new { max_output_bytes = "64KB" }
    local h = assert(sb:exec("sh", { "-c", "head -c 3000000 /dev/zero; echo tail" }, { background = true }))
    local r = assert(h:wait(30))
    assert.equal(0, r.exit_code)
    assert.is_true(r.read_dropped > 0)
    assert.equal(r.read_dropped, h.read_dropped)
    assert.matches("tail\n$", r.stdout) -- the result keeps its head and tail
    local queued = 0
    while true do
      local c = h:read("stdout")
      if not c then break end
      queued = queued + #c
    end
    assert.equal(3000005, queued + r.read_dropped) -- every byte is either read or counted
    sb:dispose()
  end)

  it("is killed promptly even while it blocks on a full queue", function()
    local sb = new { max_output_bytes = "64KB", kill_grace = 0.3 }
    local h = assert(sb:exec("sh", { "-c", "while :; do head -c 1000000 /dev/zero; done" }, { background = true }))
    sb:poll(0.3)
    assert.is_true(h:kill())
    local r = assert(h:wait(10))
    assert.equal("kill", r.killed_by)
    sb:dispose()
  end)
end)
end
