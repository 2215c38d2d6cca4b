-- Calls that never make a host wait (SPEC §16): dispatch with on_done,
-- tools.await, exec with wait = false, approvals answered later, and the
-- host loops (sandbox.luv for any libuv loop, sandbox.love for a game's
-- frame). Neovim itself is spec/neovim_spec.lua.
local sandbox = require "sandbox"
local core = require "sandbox.core"
local backends = require "support.backends"
local tools_m = sandbox.tools

local function container(o)
  o = o or {}
  o.base_dir = backends.tmpdir("async")
  return assert(sandbox.container(o))
end

-- Pump until cond() or `limit` seconds; returns cond()'s last answer.
local function pump(sb, cond, limit)
  local t0 = core.clock()
  while not cond() and core.clock() - t0 < (limit or 10) do sb:poll(0.02) end
  return cond()
end

describe("dispatch with on_done", function()
  teardown(backends.cleanup)

  it("returns at once and calls on_done only from the pump, for every kind of call", function()
    local sb = container { allow_shell = true }
    local tools = sb:tools()
    local got, order = {}, {}
    local calls = {
      unknown = { name = "no_such_tool" },
      invalid = { name = "read_file", arguments = { path = 3 } },
      bad_json = { name = "read_file", arguments = "{not json" },
      write = { name = "write_file", arguments = { path = "a.txt", content = "x\n" } },
      read = { name = "read_file", arguments = { path = "a.txt" } },
      command = { name = "run_command", arguments = { command = { "sh", "-c", "sleep 0.3; echo ran" } } },
      shell = { name = "run_shell", arguments = { script = "echo shell; exit 3" } },
    }
    local names = { "unknown", "invalid", "bad_json", "write", "read", "command", "shell" }
    for _, k in ipairs(names) do
      local ret = tools_m.dispatch(tools, calls[k], { on_done = function(r)
        got[k] = r
        order[#order + 1] = k
      end })
      assert.is_nil(ret)
      assert.is_nil(got[k], k .. " finished before dispatch returned")
    end
    assert.is_true(pump(sb, function() return #order == #names end))
    assert.truthy(got.unknown.content:find("There is no tool named no_such_tool", 1, true))
    assert.truthy(got.invalid.content:find("Invalid arguments for read_file", 1, true))
    assert.truthy(got.bad_json.content:find("not valid JSON", 1, true))
    assert.equal("Created a.txt (2 bytes).", got.write.content)
    assert.equal("     1\tx", got.read.content) -- calls run in the order they were made
    assert.is_false(got.command.is_error)
    assert.truthy(got.command.content:find("ran", 1, true))
    assert.truthy(got.shell.content:find("Exit code: 3", 1, true))
    assert.equal("command", order[#order]) -- the slow one last, the others not held up by it
    assert.equal(0, sb:poll())
    sb:dispose()
  end)

  it("gives the same result as the blocking call", function()
    local sb = container()
    local tools = sb:tools()
    local call = { name = "run_command", arguments = { command = { "sh", "-c", "echo out; echo err >&2; exit 2" } } }
    local want = tools_m.dispatch(tools, call)
    local r
    tools_m.dispatch(tools, call, { on_done = function(x) r = x end })
    assert.is_true(pump(sb, function() return r ~= nil end))
    -- the durations differ; everything else is the same
    local function strip(t) return (t.content:gsub("Duration: [%d.]+ s", "Duration: _")) end
    assert.equal(strip(want), strip(r))
    assert.equal(want.is_error, r.is_error)
    sb:dispose()
  end)

  it("works on a VirtualSandbox, pumped by its poll", function()
    local sb = sandbox.virtual { files = { ["a.md"] = "hello\n" } }
    local r
    tools_m.dispatch(sb:tools(), { name = "search_code", arguments = { pattern = "hel+o" } }, { on_done = function(x) r = x end })
    assert.is_nil(r)
    assert.is_true(pump(sb, function() return r ~= nil end))
    assert.equal("a.md:1: hello", r.content)
    assert.equal(0, sb:poll()) -- nothing is left pending
  end)

  it("kills a foreground command at its timeout as the blocking call does", function()
    local sb = container()
    local r
    tools_m.dispatch(sb:tools(), { name = "run_command", arguments = { command = { "sleep", "30" }, timeout_seconds = 0.3 } },
      { on_done = function(x) r = x end })
    assert.is_true(pump(sb, function() return r ~= nil end, 10))
    assert.truthy(r.content:find("timed out", 1, true) or r.content:find("timeout", 1, true), r.content)
    assert.equal(0, #sb:processes())
    sb:dispose()
  end)

  it("waits for a background process's output on the pump's turns (process_output)", function()
    local sb = container()
    local tools = sb:tools()
    local started = tools.run_command.execute { command = { "sh", "-c", "sleep 0.4; echo later; sleep 5" }, background = true }
    local id = tonumber(started.content:match("Started process (%d+)"))
    local r
    local t0 = core.clock()
    tools_m.dispatch(tools, { name = "process_output", arguments = { id = id, wait_seconds = 10 } }, { on_done = function(x) r = x end })
    assert.is_nil(r) -- returned without waiting for the output
    assert.is_true(pump(sb, function() return r ~= nil end, 10))
    local took = core.clock() - t0
    assert.truthy(r.content:find("later", 1, true), r.content)
    assert.is_true(took < 5, "it waited for the deadline, not the output: " .. took)
    -- no output at all: on_done at the deadline
    r = nil
    tools_m.dispatch(tools, { name = "process_output", arguments = { id = id, wait_seconds = 0.3 } }, { on_done = function(x) r = x end })
    assert.is_true(pump(sb, function() return r ~= nil end, 10))
    assert.truthy(r.content:find("(no new output)", 1, true), r.content)
    sb:dispose()
  end)

  it("delivers every result even when an on_done raises: the error comes out of poll, the rest next turn", function()
    local sb = sandbox.virtual { files = { ["a"] = "1" } }
    local tools = sb:tools()
    local seen = {}
    tools_m.dispatch(tools, { name = "file_exists", arguments = { path = "a" } }, { on_done = function() error("host bug") end })
    tools_m.dispatch(tools, { name = "file_exists", arguments = { path = "b" } }, { on_done = function(r) seen[#seen + 1] = r end })
    local ok, err = pcall(sb.poll, sb)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("host bug", 1, true))
    assert.equal(0, #seen)
    sb:poll()
    assert.equal(1, #seen)
  end)

  it("checks its options", function()
    local sb = sandbox.virtual {}
    local tools = sb:tools()
    assert.has_error(function() tools_m.dispatch(tools, { name = "x" }, { on_don = print }) end)
    assert.has_error(function() tools_m.dispatch(tools, { name = "x" }, { on_done = 3 }) end)
    assert.has_error(function() tools_m.dispatch({}, { name = "x" }, { on_done = print }) end,
      "dispatch: expects the tool table from sb:tools() (this one has no sandbox to run in)")
  end)
end)

describe("dispatch with on_done on every backend that runs commands", function()
  teardown(backends.cleanup)
  for _, b in ipairs(backends.list) do
    it(b.name .. ": a command's call returns at once and its result comes from the pump", function()
      local sb = b.new({}, { ["a.txt"] = "a\n" })
      local tools = sb:tools()
      if not sb.has_exec or tools.run_command.execute { command = { "true" } }.is_error then
        sb:dispose()
        return -- this backend runs no commands here (its own specs say why)
      end
      local r
      local t0 = core.clock()
      tools_m.dispatch(tools, { name = "run_command", arguments = { command = { "sh", "-c", "sleep 1; cat a.txt" } } },
        { on_done = function(x) r = x end })
      local returned = core.clock() - t0
      assert.is_nil(r)
      -- a dispatch that waited would take the command's whole second; a
      -- confined start on a loaded machine takes a fraction of it
      assert.is_true(returned < 0.9, "dispatch took " .. returned .. " s")
      assert.is_true(pump(sb, function() return r ~= nil end, 20))
      assert.is_false(r.is_error, r.content)
      assert.truthy(r.content:find("Exit code: 0", 1, true), r.content)
      assert.truthy(r.content:find("\na\n", 1, true) or r.content:find("\na$", 1, false), r.content)
      assert.is_true(core.clock() - t0 >= 0.95)
      sb:dispose()
    end)
  end
end)

describe("search_code through dispatch with on_done", function()
  teardown(backends.cleanup)

  -- a tree whose search takes a while: 1500 files of 300 lines
  local function big(files)
    local line = "some text that is not what the search is after, padded to a decent length\n"
    for i = 1, 1500 do files[("d%d/f%d.txt"):format(i % 10, i)] = line:rep(300) .. (i == 777 and "the needle\n" or "") end
    return files
  end

  for _, b in ipairs(backends.list) do
    if b.kind ~= "remote" then
      it(b.name .. ": search_code and find_files run in their own process and give the blocking call's answer, errors included", function()
        local sb = b.new({ rules = { deny = { "d1" } } }, big {})
        local tools = sb:tools()
        local calls = {
          { "search_code", { pattern = "needle" } },
          { "search_code", { pattern = "needle", output_mode = "files" } },
          { "search_code", { pattern = "padded", output_mode = "count", max_results = 3 } },
          { "search_code", { pattern = "(unclosed" } },
          { "search_code", { pattern = "x", path = "../outside" } },
          { "search_code", { pattern = "x", path = "missing/dir" } },
          { "search_code", { pattern = "padded", path = "d1" } }, -- denied
          { "find_files", { pattern = "**/*.txt", max_results = 5 } },
          { "find_files", { pattern = "d3/f1*.txt" } },
          { "find_files", { pattern = "d1/*" } }, -- denied: nothing matches
          { "find_files", { pattern = "../x" } },
          { "find_files", { pattern = "nothing/here/*" } },
        }
        for _, c in ipairs(calls) do
          local want = tools[c[1]].execute(c[2])
          local got
          tools_m.dispatch(tools, { name = c[1], arguments = c[2] }, { on_done = function(r) got = r end })
          assert.is_nil(got)
          assert.is_true(pump(sb, function() return got ~= nil end))
          assert.same(want, got)
        end
        sb:dispose()
      end)
    end
  end

  it("holds no turn of the pump for the search's length", function()
    local sb = container()
    for path, content in pairs(big {}) do assert(sb:write_file(path, content)) end
    local tools = sb:tools()
    -- a back-reference: PCRE2 works through every line (the search takes a while)
    local args = { pattern = "\\b(\\w+)\\s+\\1\\b", output_mode = "files" }
    -- one measurement: the search blocking, then through dispatch; returns
    -- the blocking time and the longest turn after the first
    local function measure()
      local t0 = core.clock()
      local want = tools.search_code.execute(args)
      local blocking = core.clock() - t0
      local got, turns = nil, {}
      -- what is measured is the pump, not this process's collector (one turn
      -- of 52 ms was seen once in a longer run; a full cycle here walks the
      -- 36 MB written above)
      collectgarbage("collect")
      collectgarbage("stop")
      tools_m.dispatch(tools, { name = "search_code", arguments = args }, { on_done = function(r) got = r end })
      while not got do
        local a = core.clock()
        sb:poll()
        turns[#turns + 1] = core.clock() - a
      end
      collectgarbage("restart")
      -- the first turn starts the search (a fork: its cost grows with this
      -- process's size, not the search's); the others only look for the answer
      local longest = 0
      for i = 2, #turns do longest = math.max(longest, turns[i]) end
      print(("\n  search_code over 1500 files: blocking %.1f ms; the turn that starts it %.1f ms, the longest other %.1f ms (%d turns)")
        :format(blocking * 1000, turns[1] * 1000, longest * 1000, #turns))
      assert.same(want, got)
      assert.is_true(#turns >= 2, "the answer came in the turn that started it")
      return blocking, longest
    end
    -- a pump that waits for the search holds a turn in every measurement; a
    -- loaded host (CI's two lanes on two cores) once stalled one turn for
    -- 85 ms, so a stall must repeat three times to count
    local blocking, longest
    for _ = 1, 3 do
      blocking, longest = measure()
      if longest < blocking / 2 then break end
    end
    assert.is_true(longest < blocking / 2, ("a turn took %.1f ms of a %.1f ms search"):format(longest * 1000, blocking * 1000))
    sb:dispose()
  end)

  it("leaves no process behind when the sandbox is disposed mid-search", function()
    local sb = container()
    for path, content in pairs(big {}) do assert(sb:write_file(path, content)) end
    local got
    tools_m.dispatch(sb:tools(), { name = "search_code", arguments = { pattern = "(a|b|c)*zq" } }, { on_done = function(r) got = r end })
    sb:poll() -- the search starts
    -- this process's children, as the kernel lists them (no helper process:
    -- one would be a child too, and pgrep deadlocks under ASan's preload)
    local me = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
    local function children()
      local f = io.open(("/proc/%s/task/%s/children"):format(me, me))
      local n = 0
      for _ in f:read("*a"):gmatch("%d+") do n = n + 1 end
      f:close()
      return n
    end
    sb:dispose()
    collectgarbage()
    collectgarbage()
    local t0 = core.clock()
    while children() > 0 and core.clock() - t0 < 5 do collectgarbage() end
    assert.equal(0, children())
    assert.is_nil(got) -- disposed: no answer comes
  end)
end)

describe("core.call_start: a call made in a forked copy", function()
  local function result(job)
    local t0 = core.clock()
    while core.clock() - t0 < 10 do
      local r = { job:result() }
      if r[1] ~= false then return r end
      core.sleep(0.005)
    end
    error("the copy never answered")
  end

  it("sends back what the call returned, as it was", function()
    local sb = sandbox.virtual { files = { a = "x" } }
    local big = ("z"):rep(300000)
    local nested = { list = { 1, 2.5, "three", true, false }, map = { ["k\0ey"] = "v\0al" }, deep = { { { {} } } } }
    local job = assert(core.call_start(sb, function(...) return nil, 7, 7.25, "nul\0byte", big, nested, ... end, "arg", 3))
    local r = result(job)
    assert.same({ true, true, nil, 7, 7.25, "nul\0byte", big, nested, "arg", 3 }, r)
    if math.type then -- integers stay integers, floats floats
      assert.equal("integer", math.type(r[4]))
      assert.equal("float", math.type(r[5]))
    end
    assert.has_error(function() job:result() end, "call job: the result was already taken")
    sb:dispose()
  end)

  it("sb:poll(t) waits for a copy's answer instead of turning at once (nothing of the C loop's to wait on)", function()
    local files = {}
    local line = ("padding that is not what the search is after\n"):rep(200)
    for i = 1, 1500 do files["f" .. i] = line .. "a needle\n" end -- a search of tens of ms
    local sb = sandbox.virtual { files = files }
    local got, turns = nil, 0
    tools_m.dispatch(sb:tools(), { name = "search_code", arguments = { pattern = "needle" } },
      { on_done = function(r) got = r end })
    local t0 = core.clock()
    while not got and core.clock() - t0 < 10 do
      sb:poll(0.05)
      turns = turns + 1
    end
    local took = core.clock() - t0
    assert.truthy(got and got.content:find("needle", 1, true))
    print(("\n  a search in a copy pumped by sb:poll(0.05): %d turns in %.0f ms"):format(turns, took * 1000))
    -- a turn waits for the copy's next check (10 ms); a poll that returned
    -- at once would turn every few microseconds meanwhile
    assert.is_true(turns <= took / 0.005 + 5, turns .. " turns in " .. took .. " s")
    sb:dispose()
  end)

  it("gives an error the call raised, and refuses values that cannot leave the process", function()
    local sb = sandbox.virtual {}
    assert.same({ true, false, "boom" }, result(assert(core.call_start(sb, function() error("boom", 0) end))))
    local r = result(assert(core.call_start(sb, function() return print end)))
    assert.is_false(r[2])
    assert.truthy(r[3]:find("cannot leave its process", 1, true), r[3])
    sb:dispose()
  end)

  it("reports the copy's audit entries here, and changes nothing here (its effects are the copy's)", function()
    local log = {}
    local sb = sandbox.virtual { files = { a = "x" }, audit = function(e)
      if e.kind == "file" then log[#log + 1] = e.op .. " " .. e.path end
    end }
    local r = result(assert(core.call_start(sb, function(s)
      assert(s:write_file("b", "y"))
      return s:read_file("a")
    end, sb)))
    assert.same({ true, true, "x" }, r)
    assert.same({ "write_file b", "read_file a" }, log)
    assert.is_false(sb:exists("b")) -- a VirtualSandbox's tree is this process's memory: not for copies
    sb:dispose()
  end)
end)

describe("a RemoteSandbox's file tools through dispatch with on_done", function()
  -- A peer 150 ms away, as a far engine: every call a round trip or more.
  -- A turn that resumes the work starts its next copy, a fork, whose cost is
  -- this process's size (under ASan, late in the suite, 0.1-0.2 s). The spec
  -- learns it first (and whether a sanitizer runs) and moves the engine far
  -- enough that a turn holding a round trip stays told apart from one
  -- holding a fork.
  local KEY = "spec-remote-key-0123456789"
  local peer, far, held
  setup(function()
    local sb, fork = sandbox.virtual(), 0
    for _ = 1, 3 do
      local t0 = core.clock()
      local job = assert(core.call_start(sb, function() return 1 end))
      fork = math.max(fork, core.clock() - t0)
      while job:result() == false do core.sleep(0.002) end
    end
    sb:dispose()
    -- under a sanitizer the parent also pays for the fork afterwards (every
    -- page it writes while the copy lives is copied, with ASan's shadow
    -- too): a turn that forked took 0.13 s after a 16 ms fork in CI
    local sanitized = (os.getenv("LD_PRELOAD") or ""):find("asan") ~= nil
    -- CI runs two lanes on two cores: a turn that forks was seen to take
    -- over 0.1 s there, so the engine is never nearer than 0.3 s
    far = math.max(sanitized and 0.6 or 0.3, math.ceil(fork * 4 * 100) / 100)
    held = far * 2 / 3 -- a turn under this holds no round trip
    print(("\n  a fork here takes %.1f ms%s: the engine %.0f ms away"):format(fork * 1000,
      sanitized and " (under ASan)" or "", far * 1000))
    peer = require("support.e2b_peer").start(KEY, { latency = math.floor(far * 1000) })
  end)
  teardown(function() if peer then peer.stop() end end)
  local function remote(o)
    o = o or {}
    o.api_url, o.api_key, o.envd_url = peer.api, KEY, peer.envd
    return assert(sandbox.remote(o))
  end
  -- pump with sb:poll(0) (no turn waits on purpose): the longest turn
  local function pump0(sb, cond)
    local worst, t0 = 0, core.clock()
    -- a call of many round trips under ASan on a loaded machine: tens of s
    while not cond() and core.clock() - t0 < 120 do
      local a = core.clock()
      sb:poll(0)
      worst = math.max(worst, core.clock() - a)
      core.sleep(0.005)
    end
    return worst
  end

  it("make each call in a forked copy: the same results, effects and audit as the blocking calls, no turn held", function()
    local log = {}
    local function audit(e)
      if e.kind == "file" then log[#log + 1] = e.op .. " " .. tostring(e.path) .. " " .. tostring(e.ok) end
    end
    local sb = remote { audit = audit }
    local tools = sb:tools()
    local calls = {
      { "write_file", { path = "src/a.txt", content = "hello\nworld\n" } },
      { "read_file", { path = "src/a.txt" } },
      { "edit_file", { path = "src/a.txt", old_string = "world", new_string = "there" } },
      { "read_file", { path = "src/a.txt", offset = 2 } },
      { "list_files", { path = "src" } },
      { "file_exists", { path = "src/a.txt" } },
      { "search_code", { pattern = "there" } },
      { "find_files", { pattern = "**/*.txt" } },
      { "move_file", { source = "src/a.txt", destination = "src/b.txt" } },
      { "generate_from_template", { path = "src/t.txt", template_file = "src/b.txt",
                                    variables = { { name = "x", value = "1" } } } },
      { "delete_file", { path = "src/t.txt" } },
      { "read_file", { path = "missing.txt" } },
      { "read_file", { path = "../outside" } },
      { "delete_file", { path = "src/b.txt" } },
    }
    local worst, slowest = 0, 0
    local got_all = {}
    for _, c in ipairs(calls) do
      local got
      local t0 = core.clock()
      tools_m.dispatch(tools, { name = c[1], arguments = c[2] }, { on_done = function(r) got = r end })
      assert.is_nil(got)
      worst = math.max(worst, pump0(sb, function() return got ~= nil end))
      slowest = math.max(slowest, core.clock() - t0)
      assert.truthy(got, c[1] .. " never finished")
      got_all[#got_all + 1] = got
    end
    local log_async = log
    log = {}
    -- the same calls, blocking, on the same tree: the same answers and audit
    -- (through the peer's envd without the delay: what takes the time here
    -- is not what this half checks)
    local near = assert(sandbox.remote { api_url = peer.api, api_key = KEY, envd_url = peer.envd_near,
                                         sandbox_id = sb.sandbox_id, keep = true, audit = audit })
    local near_tools = near:tools()
    for i, c in ipairs(calls) do assert.same(near_tools[c[1]].execute(c[2]), got_all[i], c[1]) end
    near:dispose()
    assert.same(log, log_async)
    assert.is_false(sb:exists("src/b.txt"))
    print(("\n  remote file tools %.0f ms away: the longest call %.0f ms, the longest pump turn %.1f ms"):format(
      far * 1000, slowest * 1000, worst * 1000))
    -- a call in the turn would hold it for a round trip or more
    assert.is_true(slowest >= far)
    assert.is_true(worst < held, ("a turn took %.3f s (a round trip is %.3f s)"):format(worst, far))
    sb:dispose()
  end)

  it("start, time out, kill and fail to start commands without holding a turn for the round trips", function()
    local sb = remote()
    local tools = sb:tools()
    local function call(name, args)
      local got
      local t0 = core.clock()
      tools_m.dispatch(tools, { name = name, arguments = args }, { on_done = function(r) got = r end })
      local worst = pump0(sb, function() return got ~= nil end)
      return got, worst, core.clock() - t0
    end
    local worst = 0
    local function check(name, args, pattern, is_error)
      local r, w, took = call(name, args)
      worst = math.max(worst, w)
      assert.truthy(r.content:find(pattern), r.content)
      assert.equal(is_error, r.is_error, r.content)
      assert.is_true(took >= far, name .. " took " .. took .. " s: no round trip?")
    end
    check("run_command", { command = { "sh", "-c", "echo hi; exit 3" } }, "Exit code: 3", false)
    check("run_command", { command = { "no-such-program" } }, "command not found: no%-such%-program", true)
    check("run_command", { command = { "sleep", "5" }, timeout_seconds = 0.3 }, "timed out", false)
    local bg, w = call("run_command", { command = { "sleep", "30" }, background = true })
    worst = math.max(worst, w)
    local id = tonumber(bg.content:match("Started process (%d+) %(pid %d+%)"))
    assert.truthy(id, bg.content)
    check("process_kill", { id = id }, "Stopped process " .. id, false)
    check("run_command", { command = { "no-such-program" }, background = true }, "command not found", true)
    -- the same failure as the blocking call's
    assert.same(tools.run_command.execute({ command = { "no-such-program" } }),
      (call("run_command", { command = { "no-such-program" } })))
    print(("\n  remote commands %.0f ms away: the longest pump turn %.1f ms"):format(far * 1000, worst * 1000))
    assert.is_true(worst < held, ("a turn took %.3f s (a round trip is %.3f s)"):format(worst, far))
    sb:dispose()
  end)

  it("end with an error result, and leave no copy behind, when the sandbox is disposed mid-call", function()
    local function children() -- this process's (not pgrep: it hangs under ASan's preload)
      local f = assert(io.open("/proc/self/stat"))
      local me = f:read("*l"):match("^(%d+)")
      f:close()
      f = assert(io.open("/proc/" .. me .. "/task/" .. me .. "/children"))
      local list = f:read("*a")
      f:close()
      return list
    end
    local sb = remote()
    local tools = sb:tools()
    local got
    local before = {}
    for pid in children():gmatch("%d+") do before[pid] = true end
    tools_m.dispatch(tools, { name = "write_file", arguments = { path = "x.txt", content = "x" } },
      { on_done = function(r) got = r end })
    sb:poll(0) -- the copy starts
    local copies = {}
    for pid in children():gmatch("%d+") do
      if not before[pid] then copies[#copies + 1] = pid end
    end
    assert.is_true(#copies >= 1, "no copy was started")
    sb:dispose()
    assert.truthy(got == nil or got.is_error)
    local now = children()
    for _, pid in ipairs(copies) do assert.is_nil(now:find("%f[%d]" .. pid .. "%f[%D]"), "copy " .. pid .. " left") end
  end)
end)

describe("http_get through dispatch with on_done", function()
  local httpd = require "support.httpd"
  local A, B
  setup(function()
    A, B = httpd.start(), httpd.start()
  end)
  teardown(function()
    httpd.stop_all()
    backends.cleanup()
  end)

  it("fetches in its own process and gives the blocking call's answer, refusals included", function()
    local sb = sandbox.virtual { allowed_hosts = { "127.0.0.1:" .. A.port } }
    local tools = sb:tools()
    local calls = {
      { url = A.url "/hello" },
      { url = A.url "/big?n=5000", max_bytes = 100 },
      { url = A.url("/redirect?to=" .. A.url "/hello") },
      { url = B.url "/hello" }, -- not allowed: refused before any connection
      { url = "ftp://127.0.0.1/x" },
    }
    local before = #B.requests()
    for _, args in ipairs(calls) do
      local want = tools.http_get.execute(args)
      local got
      tools_m.dispatch(tools, { name = "http_get", arguments = args }, { on_done = function(r) got = r end })
      assert.is_nil(got)
      assert.is_true(pump(sb, function() return got ~= nil end))
      assert.same(want, got)
    end
    assert.equal(before, #B.requests())
    sb:dispose()
  end)

  it("holds no turn of the pump while the server takes its time", function()
    local sb = sandbox.virtual { allowed_hosts = { "127.0.0.1:" .. A.port } }
    local got, longest = nil, 0
    local t0 = core.clock()
    tools_m.dispatch(sb:tools(), { name = "http_get", arguments = { url = A.url "/slow?s=1" } }, { on_done = function(r) got = r end })
    while not got and core.clock() - t0 < 10 do
      local a = core.clock()
      sb:poll(0.01)
      longest = math.max(longest, core.clock() - a)
    end
    print(("\n  http_get of a 1 s response: answered after %.2f s, the longest pump turn %.1f ms")
      :format(core.clock() - t0, longest * 1000))
    assert.truthy(got and got.content:find("HTTP 200", 1, true), got and got.content)
    assert.is_true(core.clock() - t0 >= 0.95)
    -- a turn that waited on the server would take its whole second
    assert.is_true(longest < 0.5, ("a turn took %.1f ms"):format(longest * 1000))
    sb:dispose()
  end)
end)

describe("approvals that answer later", function()
  teardown(backends.cleanup)

  local function tools_with(sb, approve) return sb:tools { approve = approve } end

  it("run when the reply says yes, and are declined when it says no; nothing runs meanwhile", function()
    local sb = container()
    local asked = {}
    local tools = tools_with(sb, function(call, reply)
      asked[#asked + 1] = { call = call, reply = reply }
      return tools_m.PENDING
    end)
    local yes, no
    tools_m.dispatch(tools, { name = "write_file", arguments = { path = "y.txt", content = "y" } }, { on_done = function(r) yes = r end })
    tools_m.dispatch(tools, { name = "write_file", arguments = { path = "n.txt", content = "n" } }, { on_done = function(r) no = r end })
    for _ = 1, 3 do sb:poll(0.01) end
    assert.equal(2, #asked)
    assert.is_nil(yes)
    assert.is_false(sb:exists("y.txt"))
    assert.equal(2, sb:poll()) -- two calls wait for their answers
    asked[1].reply(true)
    asked[2].reply("not now")
    asked[2].reply(true) -- a second answer changes nothing
    assert.is_true(pump(sb, function() return yes ~= nil and no ~= nil end))
    assert.is_false(yes.is_error)
    assert.is_true(sb:exists("y.txt"))
    assert.truthy(no.content:find("The user declined to run write_file: not now", 1, true))
    assert.is_false(sb:exists("n.txt"))
    sb:dispose()
  end)

  it("answered at once work as before, and a blocking call refuses a later answer with a clear error", function()
    local sb = container()
    local tools = tools_with(sb, function() return tools_m.PENDING end)
    local r = tools_m.dispatch(tools, { name = "write_file", arguments = { path = "a", content = "a" } })
    assert.is_true(r.is_error)
    assert.truthy(r.content:find("needs a call that does not block", 1, true))
    assert.is_false(sb:exists("a"))
    local t2 = tools_with(sb, function() return false end)
    local d
    tools_m.dispatch(t2, { name = "write_file", arguments = { path = "a", content = "a" } }, { on_done = function(x) d = x end })
    assert.is_true(pump(sb, function() return d ~= nil end))
    assert.truthy(d.content:find("declined", 1, true))
    sb:dispose()
  end)
end)

describe("exec with wait = false", function()
  teardown(backends.cleanup)

  it("returns the handle at once and hands on_exit the result a wait would give, hint included", function()
    local sb = container()
    local r
    local t0 = core.clock()
    local h = assert(sb:exec("sh", { "-c", "sleep 1; echo 'Permission denied' >&2; exit 1" },
      { wait = false, on_exit = function(x) r = x end }))
    -- waiting would take the command's second; the first confined start
    -- builds the sandbox's view, a fraction of it even on a loaded machine
    assert.is_true(core.clock() - t0 < 0.9)
    assert.is_true(h:running())
    assert.equal(0, #sb:processes()) -- a foreground command: not one of the background ones
    assert.is_true(pump(sb, function() return r ~= nil end))
    assert.equal(1, r.exit_code)
    assert.is_true(r.sandbox_denied)
    assert.truthy(r.hint)
    sb:dispose()
  end)

  it("refuses combinations that cannot mean anything", function()
    local sb = container()
    assert.has_error(function() sb:exec("true", {}, { wait = false, on_wait = print }) end)
    sb:dispose()
  end)
end)

describe("host loops", function()
  teardown(backends.cleanup)
  local have_luv, uv = pcall(require, "luv")

  it("sandbox.luv: a 2 s command never stalls the loop's 10 ms timer; tools.await yields inside a coroutine", function()
    assert(have_luv, "lua-luv is needed (apt-get install lua-luv)")
    local sb = container { allow_shell = true }
    local tools = sb:tools()
    local detach = require("sandbox.luv").attach(sb)
    -- the same timer with nothing running: this machine's own noise
    local function measure(ms, during)
      local last, worst, t0 = core.clock(), 0, core.clock()
      local timer = uv.new_timer()
      local done = false
      timer:start(10, 10, function()
        local now = core.clock()
        worst = math.max(worst, (now - last) * 1000 - 10)
        last = now
        if (now - t0) * 1000 >= ms and (not during or during()) then
          timer:stop()
          timer:close()
          done = true
        end
      end)
      while not done do uv.run("once") end
      return worst
    end
    local idle = measure(1000)
    local r, awaited, after
    local t0 = core.clock()
    tools_m.dispatch(tools, { name = "run_shell", arguments = { script = "sleep 2; echo done" } }, { on_done = function(x) r = x end })
    coroutine.wrap(function()
      awaited = tools_m.await(tools, { name = "run_shell", arguments = { script = "sleep 1; echo awaited" } })
      after = core.clock() - t0
    end)()
    assert.is_nil(awaited) -- the coroutine yielded; the loop goes on
    local busy = measure(0, function() return r ~= nil and awaited ~= nil end)
    print(("\n  luv loop: idle stall %.1f ms, during a 2 s command %.1f ms"):format(idle, busy))
    -- a loop that waited on a command would stall for 1 s or 2 s; the bound
    -- only has to tell that from a loop that did not. It is 500 ms: CI runs
    -- this beside its other lane on two cores, where a 10 ms timer alone
    -- was seen 29 ms late, and 106 ms late in the portable suite beside
    -- valgrind (the editor's 20 ms criterion is Neovim's spec)
    assert.is_true(busy < math.max(500, 2 * idle + 20), "stall " .. busy .. " ms")
    assert.truthy(r.content:find("done", 1, true))
    assert.truthy(awaited.content:find("awaited", 1, true))
    assert.is_true(after >= 0.9 and after < 1.9, "awaited after " .. after .. " s")
    detach()
    detach() -- once is enough; twice is harmless
    sb:dispose()
    uv.run("nowait") -- the closed handles' callbacks
  end)

  it("a poller that sleeps on backend_fd and backend_timeout alone sees a command started between turns", function()
    -- A host that drives commands itself (a C loop, a game's own poller):
    -- only the fd and the timeout wake it. A command started between two
    -- turns joins the runner's loop on the loop's next turn, so
    -- backend_timeout must ask for that turn at once (0); else its output
    -- waits for another wake-up (the poller's 5 s cap here): no signal
    -- tells of it while the command runs.
    assert(have_luv, "lua-luv is needed (apt-get install lua-luv)")
    local sb = container { exec_timeout = 30, confine = false } -- no helper's exit to wake it by chance
    local fd = sb:backend_fd()
    local watcher, timer = uv.new_poll(fd), uv.new_timer()
    local function sleep_on_sandbox(cap_ms) -- one wait, as the host's poller does
      local ms = sb:backend_timeout()
      if ms < 0 or ms > cap_ms then ms = cap_ms end
      -- (uv.stop, not run "once": libuv 1.44's once-mode runs a due timer
      -- before it polls, then waits in the poll for the fd)
      local function wake() uv.stop() end
      watcher:start("r", wake)
      timer:start(ms, 0, wake)
      uv.run()
      watcher:stop()
      timer:stop()
    end
    local first, second, t1 -- the second command's output, when it started
    assert(sb:exec("echo", { "one" }, { wait = false, on_exit = function(r) first = r end }))
    local t0 = core.clock()
    while not second and core.clock() - t0 < 12 do
      sleep_on_sandbox(5000)
      sb:poll(0)
      if first and not t1 then -- the host's own code, between turns
        t1 = core.clock()
        assert(sb:exec("sh", { "-c", "sleep 0.2; echo two; sleep 20" }, { wait = false, timeout = 25,
          on_stdout = function(data) second = (second or "") .. data end }))
      end
    end
    watcher:close()
    timer:close()
    uv.run("nowait")
    sb:dispose()
    assert.equal("one\n", first.stdout)
    local took = core.clock() - t1
    assert.equal("two\n", second, "the second command's output never came")
    assert.is_true(took < 3, "the second command's output was seen after " .. took .. " s")
  end)

  it("tools.await blocks as dispatch does outside a coroutine or without a loop", function()
    local sb = sandbox.virtual { files = { a = "x" } }
    local r = tools_m.await(sb:tools(), { name = "file_exists", arguments = { path = "a" } })
    assert.truthy(r.content:find("exists", 1, true), r.content)
    local inside
    coroutine.wrap(function() inside = tools_m.await(sb:tools(), { name = "file_exists", arguments = { path = "a" } }) end)()
    assert.truthy(inside.content:find("exists", 1, true))
  end)

  it("sandbox.love: one turn per frame after the game's own update", function()
    local frames = {}
    local love = { update = function(dt) frames[#frames + 1] = dt end }
    rawset(_G, "love", love)
    local ok, err = pcall(function()
      local sb = sandbox.virtual { files = { a = "x" } }
      local L = require "sandbox.love"
      local detach = L.attach(sb)
      local r
      tools_m.dispatch(sb:tools(), { name = "read_file", arguments = { path = "a" } }, { on_done = function(x) r = x end })
      assert.is_nil(r)
      love.update(0.016)
      assert.same({ 0.016 }, frames)
      assert.equal("     1\tx", r.content)
      detach()
      tools_m.dispatch(sb:tools(), { name = "read_file", arguments = { path = "a" } }, { on_done = function(x) r = x end })
      r = nil
      love.update(0.016)
      assert.is_nil(r) -- detached: no longer pumped
      sb:poll()
      assert.truthy(r)
      L.attach(sb)
      sb:dispose()
      love.update(0.016) -- a disposed sandbox is dropped, not polled
    end)
    rawset(_G, "love", nil)
    assert(ok, err)
  end)
end)
