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

describe("a ContainerSandbox's search job", function()
  local sb
  before_each(function() sb = assert(sandbox.container { base_dir = "/usr/include" }) end)
  after_each(function() sb:dispose() end)

  it("answers as grep does, with no copy of the host and no thread left", function()
    local before, kids_before = tasks() -- (other specs' inits may be our children)
    local j = assert(core.grep_start(sb, "define", {}))
    local _, kids = tasks()
    assert.equal(kids_before, kids) -- a fork would be a new child
    local got
    repeat got = { j:result() } until got[1] ~= false
    local want = { sb:grep("define", {}) }
    assert.equal(#want[1], #got[1])
    assert.same(want[1][1], got[1][1])
    assert.equal(before, (tasks()))
  end)

  it("stops at cancel and at dispose, joining its thread", function()
    local before = tasks()
    local j = assert(core.grep_start(sb, "[a-z]+_[a-z]+", {}))
    j:cancel()
    assert.equal(before, (tasks()))
    assert.has_error(function() j:result() end)
    assert(core.glob_start(sb, "**/*.h", {}))
    sb:dispose()
    assert.equal(before, (tasks()))
  end)
end)
