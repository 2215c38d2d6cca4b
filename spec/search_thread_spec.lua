-- A ContainerSandbox's non-blocking search runs on a thread over a second
-- handle of its own (lua/forkjob.h), not in a fork of the host: no child
-- process, the same records as the blocking call, and cancel or dispose
-- leaves no thread behind.
local sandbox = require "sandbox"
local core = require "sandbox.core"

-- this process's threads, and the children of its main thread (read in
-- process: /proc/self here is us)
local function tasks()
  local f = assert(io.open("/proc/self/status"))
  local n = tonumber(f:read("*a"):match("Threads:%s*(%d+)"))
  f:close()
  f = assert(io.open("/proc/thread-self/children"))
  local kids = f:read("*a")
  f:close()
  return n, kids
end

-- the thread count once it is n, or after 200 ms: a joined thread may still
-- be listed for a moment (the kernel wakes the join before the thread is gone)
local function threads_settle(n)
  local t, now = core.clock() + 0.2
  repeat now = tasks() until now == n or core.clock() > t
  return now
end

describe("a ContainerSandbox's search job", function()
  local sb
  before_each(function() sb = assert(sandbox.container { base_dir = "/usr/include" }) end)
  after_each(function() sb:dispose() end)

  it("answers as grep does, with no copy of the host and no thread left", function()
    local before, kids_before = tasks() -- (other specs' inits may be our children, and end meanwhile)
    local j = assert(core.grep_start(sb, "define", {}))
    local _, kids = tasks()
    local new = {}
    for pid in kids:gmatch("%d+") do
      if not (" " .. kids_before .. " "):find(" " .. pid .. " ", 1, true) then new[#new + 1] = pid end
    end
    assert.same({}, new) -- a fork would be a new child
    local got
    repeat got = { j:result() } until got[1] ~= false
    local want = { sb:grep("define", {}) }
    assert.equal(#want[1], #got[1])
    assert.same(want[1][1], got[1][1])
    assert.equal(before, threads_settle(before))
  end)

  it("stops at cancel and at dispose, joining its thread", function()
    -- over /usr a pattern that matches nothing reads every file: seconds,
    -- far past the 200 ms the count is given to settle
    local usr = assert(sandbox.container { base_dir = "/usr" })
    local before = tasks()
    local j = assert(core.grep_start(usr, "zzq[0-9]{7}zzq", {}))
    local t = core.clock()
    j:cancel() -- joins: without the walk's stop it would wait for the whole search
    assert.is_true(core.clock() - t < 2, "cancel waited for the search to end")
    assert.equal(before, threads_settle(before))
    assert.has_error(function() j:result() end)
    assert(core.grep_start(usr, "zzq[0-9]{7}zzq", {}))
    usr:dispose()
    assert.equal(before, threads_settle(before))
  end)
end)

describe("a ContainerSandbox's search job on its thread", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/sub && printf 'needle\\n' > " .. dir .. "/a.txt && printf 'needle\\n' > "
      .. dir .. "/sub/key.env"))
  end)
  after_each(function() os.execute("rm -rf " .. dir) end)

  local function wait(j)
    local got
    repeat got = { j:result() } until got[1] ~= false
    return got
  end

  -- the same answer as the blocking call, under each policy: the thread's handle keeps it
  for _, case in ipairs {
    { name = "a deny rule hides a file", opts = { rules = { deny = { "**/*.env" } } }, hits = 1 },
    { name = "mode \"w\" reads no contents", opts = { mode = "w" }, hits = 0 },
    { name = "read_only still searches", opts = { read_only = true }, hits = 2 },
  } do
    it(case.name, function()
      local opts = { base_dir = dir }
      for k, v in pairs(case.opts) do opts[k] = v end
      local sb = assert(sandbox.container(opts))
      local want = { sb:grep("needle", {}) }
      local got = wait(assert(core.grep_start(sb, "needle", {})))
      sb:dispose()
      assert.equal(case.hits, #want[1])
      assert.equal(case.hits, #got[1])
      for i = 1, case.hits do assert.same(want[1][i], got[1][i]) end
    end)
  end
end)
