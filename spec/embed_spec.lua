-- Embedding (SPEC §8): the static library and its C hosts. The hosts are
-- built by make: build/examples/embed-host (examples/embed) and
-- build/test/two_states (spec/c/two_states.c), both linking libsandbox.a.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"

local function symbols(cmd)
  local out = {}
  for _, l in ipairs(sh.lines(cmd .. " || true")) do
    local kind, name = l:match("^%x*%s+(%a)%s+(%S+)$")
    -- a coverage build (make coverage) links gcov's runtime in: not ours
    local gcov = name and (name:find("^__gcov") or name == "mangle_path")
    if name and not gcov then out[#out + 1] = kind .. " " .. name end
  end
  table.sort(out)
  return out
end

describe("embedding", function()
  describe("symbols", function()
    it("the shared module exports only luaopen_sandbox_core", function()
      assert.same({ "T luaopen_sandbox_core" }, symbols("nm -D --defined-only " .. sh.build .. "/sandbox/core.so"))
    end)

    it("the static library's only global symbols are its API, with a private libuv inside", function()
      local lib = sh.build .. "/libsandbox.a"
      assert.same({ "T luaopen_sandbox", "T luaopen_sandbox_core", "T sandbox_preload", "T sandbox_set_error_handler" },
        symbols("nm -g --defined-only " .. lib))
      local undefined = table.concat(symbols("nm -u " .. lib), "\n")
      assert.not_matches("uv_", undefined) -- nothing of libuv is left for the host to provide
      local locals = table.concat(symbols("nm --defined-only " .. lib), "\n")
      assert.matches("t uv_run", locals, nil, true) -- libuv is there, made local
    end)
  end)

  it("a C host with a capped allocator drives background commands from its frame loop", function()
    local dir = backends.tmpdir("embed")
    local ok, out = sh.run(("EMBED_DIR=%s timeout 60 %s/examples/embed-host examples/embed/game.lua 64"):format(dir, sh.build))
    assert(ok, out)
    -- output as it arrived, every command to its end
    for _, want in ipairs { "build: compiling unit 1", "build: compiling unit 5", "build: done",
                            "build exited with 0", "tests: ok 1", "tests (stderr): not ok 2", "tests: ok 3",
                            "tests exited with 1", "all commands finished" } do
      assert.matches(want, out, nil, true)
    end
    -- the cap: a write beyond it failed with an error, and the sandbox went on
    assert.matches("writing 24 MB more: ENOSPC: out of memory", out, nil, true)
    assert.matches("notes.md: # still fine", out, nil, true)
    -- the callback's error reached the host's handler; the host went on
    assert.matches("%[host%] a script callback failed %(on_stdout of process %d+%): .*choked on tick", out)
    assert.matches("1 callback errors", out, nil, true)
    -- poll never waits for a command: one that waited would stall a frame for
    -- most of the quiet command's second (nothing else is running then). A
    -- call takes well under a millisecond; the bound leaves room for a loaded
    -- machine, ASan and a preempted host thread (issue 28)
    assert.matches("quiet: awake", out, nil, true)
    local worst = tonumber(out:match("worst ([%d.]+) ms"))
    assert.is_true(worst < 400, "a call into the script took " .. tostring(worst) .. " ms: poll blocked")
    assert.matches("closed: 0 bytes still allocated", out, nil, true)
  end)

  -- Several runs: both threads set up their sandboxes at the same moment,
  -- which once deadlocked (a namespace helper of one thread held the other
  -- thread's pipe open); a hang fails through the timeout.
  it("two states on two threads run side by side; closing one kills only its own commands", function()
    for _ = 1, 5 do
      local a, b = backends.tmpdir("state-a"), backends.tmpdir("state-b")
      local ok, out = sh.run(("timeout 60 %s/test/two_states %s %s"):format(sh.build, a, b))
      assert(ok, out) -- also: the host's own uv_run/uv_loop_init (traps) were never called
      assert.matches("B: lines 0:50 0:50 0:50, file f200 = B200", out, nil, true)
      local pids = out:match("A: started ([%d ]+)")
      assert.is_not_nil(pids, out)
      for pid in pids:gmatch("%d+") do
        assert.is_false(sh.run("kill -0 " .. pid .. " 2>/dev/null"), "process " .. pid .. " of the closed state survived")
      end
    end
  end)
end)

describe("driving commands from the host's loop", function()
  local be = backends.containers()[1]
  local confine = not os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile

  it("backend_fd is a stable fd; backend_timeout is -1 when idle and a deadline while a timer runs", function()
    local sb = assert(sandbox.container { base_dir = backends.tmpdir("fd"), resolver = be.resolver, confine = confine })
    local fd = sb:backend_fd()
    assert.is_true(type(fd) == "number" and fd == math.floor(fd) and fd >= 0)
    assert.equal(fd, sb:backend_fd())
    assert.equal(-1, sb:backend_timeout())
    local h = assert(sb:exec("sleep", { "5" }, { background = true, timeout = 3 }))
    sb:poll()
    local t = sb:backend_timeout()
    assert.is_true(t >= 0 and t <= 3010, tostring(t)) -- the timeout, in ms (rounded up)
    h:kill("KILL")
    h:wait()
    assert.equal(-1, sb:backend_timeout())
    sb:dispose()
    local v = sandbox.virtual()
    local none, _, code = v:backend_fd()
    assert.is_nil(none)
    assert.equal("ENOTSUP", code)
    assert.equal(-1, v:backend_timeout())
  end)

  it("set_error_handler receives callback errors with where they came from; nil restores raising", function()
    local sb = assert(sandbox.container { base_dir = backends.tmpdir("errh"), resolver = be.resolver, confine = confine })
    finally(function() sandbox.set_error_handler(nil) end)
    local seen = {}
    sandbox.set_error_handler(function(err, info) seen[#seen + 1] = { err = err, info = info } end)
    local h = assert(sb:exec("sh", { "-c", "echo one; echo two >&2" }, {
      background = true,
      on_stdout = function() error("bad stdout") end,
      on_stderr = function() error({ code = 42 }) end, -- any value
      on_exit = function() error("bad exit") end,
    }))
    assert.is_table(h:wait()) -- nothing raised
    local got = {}
    for _, s in ipairs(seen) do
      got[s.info.callback] = s.err
      assert.equal(h.id, s.info.id)
      assert.equal(h.pid, s.info.pid)
    end
    assert.matches("bad stdout", got.on_stdout)
    assert.equal(42, got.on_stderr.code)
    assert.matches("bad exit", got.on_exit)
    sandbox.set_error_handler(nil)
    local h2 = assert(sb:exec("echo", { "x" }, { background = true, on_stdout = function() error("raised again") end }))
    local ok, err = pcall(h2.wait, h2)
    assert.is_false(ok)
    assert.matches("raised again", err)
    sb:dispose()
  end)
end)
