-- The whole-tree kill of SPEC §5 as one set of cases for every runner
-- (exec_spec: the local one; remote_spec: envd's, through its wrapper).
-- Processes are found by a marker (a unique sleep duration) in their
-- command lines; `assert_gone(marker)` is the caller's, `get()` gives the
-- sandbox under test, made with kill_grace = 0.3; `it` is the spec's own.
-- `group_only`: why this runner reaches the process group only (no cgroup,
-- no PID namespace: a build without Linux's layers), or nil.
local assert = require "luassert"
local host = require "support.host"
local procs = require "support.procs"

return function(it, get, assert_gone, timeout, group_only)
  timeout = timeout or 0.3
  -- a daemon that leaves the process group is out of a group kill's reach
  local function reaches(what) return host.can(what, not group_only, group_only) end
  local function sh(script, opts) return assert(get():exec("sh", { "-c", script }, opts)) end

  it("kills the whole tree at its timeout: sh -c 'sleep & sleep & wait'", function()
    local m = procs.marker()
    local r = sh("sleep " .. m .. " & sleep " .. m .. " & wait", { timeout = timeout })
    assert.same({ true, "SIGTERM", 143 }, { r.timed_out, r.signal, r.exit_code })
    assert_gone(m)
  end)

  it("kills a setsid daemon that left the process group", function()
    if not reaches("a setsid daemon killed at the timeout") then return end
    local m = procs.marker()
    local r = sh("setsid sleep " .. m .. " >/dev/null 2>&1 < /dev/null & sleep " .. m, { timeout = timeout })
    assert.is_true(r.timed_out)
    assert_gone(m)
  end)

  it("kills a double-forked daemon after a normal exit: nothing outlives the command", function()
    if not reaches("a double-forked daemon killed after the command") then return end
    local m = procs.marker()
    local r = sh("(setsid sleep " .. m .. " >/dev/null 2>&1 &) ; echo started")
    assert.same({ 0, "started\n", false }, { r.exit_code, r.stdout, r.timed_out })
    assert_gone(m)
  end)

  it("kills a daemon started after 300 short-lived processes", function()
    if not reaches("a daemon started after 300 processes killed") then return end
    local m = procs.marker()
    local r = sh("i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done; (setsid sleep " .. m ..
      " >/dev/null 2>&1 &); echo started")
    assert.same({ 0, "started\n" }, { r.exit_code, r.stdout })
    assert_gone(m)
  end)

  it("escalates to SIGKILL for a tree that ignores SIGTERM, keeping its output meanwhile", function()
    local m = procs.marker()
    -- the trap ignores TERM from then on (children inherit that): a sweep
    -- that is still signalling the tree when the last sleep starts (a remote
    -- one on a loaded machine) cannot end it early; only SIGKILL can
    local r = sh("trap 'echo got-term; trap \"\" TERM' TERM; sleep " .. m .. " & wait; wait; sleep " .. m .. "; echo survived",
      { timeout = timeout })
    assert.same({ true, "SIGKILL", 137, "got-term\n" }, { r.timed_out, r.signal, r.exit_code, r.stdout })
    assert.is_true(r.duration >= timeout + 0.3 - 0.05, r.duration) -- timeout + kill_grace
    assert_gone(m)
  end)
end
