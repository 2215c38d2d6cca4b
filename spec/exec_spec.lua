-- Command execution (SPEC §5): results, streams, timeouts that kill whole
-- trees, background handles, output caps, hygiene. Security-relevant tests
-- assert what did not happen: no process, zombie or fd left behind.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local hostcan = require "support.host"
local procs = require "support.procs"

local function code_of(...) return select(3, ...) end

local function new(opts)
  opts = opts or {}
  opts.base_dir = opts.base_dir or backends.tmpdir("exec")
  if os.getenv("SANDBOX_TEST_UNCONFINED") then opts.confine = false end -- see the Makefile
  return assert(sandbox.container(opts))
end

local function fd_count() return #sh.open_fds() end

local function assert_gone(marker)
  local live = procs.find(marker)
  assert.same({}, live, "processes of the tree survived: " .. marker)
end

describe("exec", function()
  local sb
  before_each(function() sb = new { kill_grace = 0.3 } end)
  after_each(function() if sb then sb:dispose() end end)

  describe("results", function()
    it("returns the SPEC result table", function()
      local r = assert(sb:exec("echo", { "hello", "world" }))
      assert.same({ 0, false, "hello world\n", "", false, 0 },
        { r.exit_code, r.timed_out, r.stdout, r.stderr, r.truncated, r.dropped_bytes })
      assert.is_nil(r.signal)
      assert.is_number(r.duration)
      assert.is_true(r.pid > 1)
    end)

    local codes = {
      { "exit 0", 0 }, { "exit 3", 3 }, { "exit 255", 255 },
      { "kill -TERM $$", 143, "SIGTERM" }, { "kill -KILL $$", 137, "SIGKILL" },
      { "kill -INT $$", 130, "SIGINT" }, { "kill -SEGV $$", 139, "SIGSEGV" },
    }
    for _, c in ipairs(codes) do
      it(("reports %q as exit_code %d"):format(c[1], c[2]), function()
        local r = assert(sb:exec("sh", { "-c", c[1] }))
        assert.equal(c[2], r.exit_code)
        assert.equal(c[3], r.signal)
        assert.is_false(r.timed_out)
      end)
    end

    it("passes argv as is: no shell, no word splitting, no globbing", function()
      local r = assert(sb:exec("printf", { "[%s]", "a b", "*", "$HOME", "'q'" }))
      assert.equal("[a b][*][$HOME]['q']", r.stdout)
    end)

    it("round-trips stdin and binary output", function()
      local blob = {}
      for i = 0, 255 do blob[#blob + 1] = string.char(i) end
      blob = table.concat(blob):rep(300)
      local r = assert(sb:exec("cat", {}, { stdin = blob }))
      assert.equal(#blob, #r.stdout)
      assert.equal(blob, r.stdout)
    end)

    it("gives a foreground command an empty stdin (it never waits for input)", function()
      local r = assert(sb:exec("cat", {}, { timeout = 5 }))
      assert.same({ 0, "", false }, { r.exit_code, r.stdout, r.timed_out })
    end)

    it("separates stdout and stderr", function()
      local r = assert(sb:exec("sh", { "-c", "echo out; echo err >&2" }))
      assert.same({ "out\n", "err\n" }, { r.stdout, r.stderr })
    end)

    it("runs in cwd, an agent path resolved beneath the root", function()
      assert(sb:mkdir("sub/dir"))
      local r = assert(sb:exec("pwd", {}, { cwd = "sub/dir" }))
      assert.equal(sb.cwd .. "/sub/dir\n", r.stdout)
      assert.equal(sb.cwd .. "\n", assert(sb:exec("pwd")).stdout)
      assert.equal("ENOENT", code_of(sb:exec("pwd", {}, { cwd = "missing" })))
      assert.equal("EESCAPE", code_of(sb:exec("pwd", {}, { cwd = "../.." })))
      assert(sb:write_file("f", "x"))
      assert.equal("ENOTDIR", code_of(sb:exec("pwd", {}, { cwd = "f" })))
    end)

    it("refuses a cwd reached through a symlink out of the root", function()
      sh.run(("ln -s /etc %s/etc && ln -s .. %s/up && mkdir %s/d && ln -s d %s/dl"):format(
        sb.cwd, sb.cwd, sb.cwd, sb.cwd))
      assert.equal("EESCAPE", code_of(sb:exec("pwd", {}, { cwd = "etc/ssl" })))
      assert.equal("EESCAPE", code_of(sb:exec("pwd", {}, { cwd = "up/tmp" })))
      assert.equal("EESCAPE", code_of(sb:exec("pwd", {}, { cwd = "etc" }))) -- a final link out: an escape
      assert.equal(sb.cwd .. "/d\n", assert(sb:exec("pwd", {}, { cwd = "dl" })).stdout) -- one inside: followed
      sb:mkdir("d/sub")
      assert.equal(sb.cwd .. "/d/sub\n", assert(sb:exec("pwd", {}, { cwd = "dl/sub" })).stdout)
    end)

    it("looks a command up in the child's PATH", function()
      sb:write_file("bin/hello", "#!/bin/sh\necho from-path\n")
      sh.run(("chmod +x %s/bin/hello"):format(sb.cwd))
      assert.equal("ENOENT", code_of(sb:exec("hello")))
      local r = assert(sb:exec("hello", {}, { env = { PATH = sb.cwd .. "/bin:/usr/bin:/bin" } }))
      assert.equal("from-path\n", r.stdout)
    end)

    it("reports spawn failures as nil, msg, code, not as exit codes", function()
      local v, msg, code = sb:exec("no-such-command-xyz")
      assert.is_nil(v)
      assert.equal("ENOENT", code)
      assert.equal("ENOENT: command not found: no-such-command-xyz", msg)
      sb:write_file("noexec.sh", "#!/bin/sh\n")
      assert.equal("EACCES", code_of(sb:exec(sb.cwd .. "/noexec.sh")))
      assert.equal("EACCES", code_of(sb:exec("/etc")))
      assert.equal("EINVAL", code_of(sb:exec("")))
    end)

    it("raises on misuse", function()
      assert.has_error(function() sb:exec(42) end, "exec: cmd must be a string")
      assert.has_error(function() sb:exec("ls", "-la") end, "exec: args must be an array of strings")
      assert.has_error(function() sb:exec("ls", { 1 }) end, "exec: args[1] must be a string")
      assert.has_error(function() sb:exec("ls", {}, { timout = 1 }) end)
      assert.has_error(function() sb:exec("ls", {}, { env = { A = 1 } }) end)
      assert.has_error(function() sb:exec("ls", { "a\0b" }) end)
    end)
  end)

  describe("waiting with the host in the loop (on_wait)", function()
    it("calls on_wait while a foreground command runs, with the time so far", function()
      local seen = {}
      local r = assert(sb:exec("sleep", { "0.5" }, { on_wait = function(_, elapsed) seen[#seen + 1] = elapsed end,
        wait_interval = 0.1 }))
      assert.equal(0, r.exit_code)
      -- about one call per interval of the command's own measured run (a
      -- loaded machine stretches the run, and the calls with it)
      local most = math.floor(r.duration / 0.1) + 2
      assert.is_true(#seen >= 3 and #seen <= most, #seen .. " calls in " .. r.duration .. " s")
      for i = 2, #seen do assert.is_true(seen[i] > seen[i - 1]) end
    end)

    it("lets on_wait kill the whole tree (a cancelled request)", function()
      local m = procs.marker()
      local r = assert(sb:exec("sh", { "-c", "sleep " .. m .. " & sleep " .. m .. "; wait" }, {
        on_wait = function(h, elapsed) if elapsed > 0.3 then h:kill() end end }))
      assert.equal("SIGTERM", r.signal)
      assert.equal("kill", r.killed_by)
      assert_gone(m)
    end)

    it("kills the command when on_wait raises, and re-raises", function()
      local m = procs.marker()
      assert.has_error(function()
        sb:exec("sleep", { m }, { on_wait = function() error("host gave up", 0) end })
      end, "host gave up")
      assert_gone(m)
    end)

    it("raises on misuse", function()
      local f = function() end
      assert.has_error(function() sb:exec("true", {}, { background = true, on_wait = f }) end,
        "exec: on_wait and wait_interval are for foreground commands (a background one returns at once)")
      assert.has_error(function() sb:exec("true", {}, { wait_interval = 1 }) end, "exec: wait_interval needs on_wait")
      assert.has_error(function() sb:exec("true", {}, { on_wait = 1 }) end)
    end)
  end)

  describe("the host's stdio (stdio = \"inherit\")", function()
    it("gives the command the host's stdin, stdout and stderr, with nothing kept in the result", function()
      local tmp = backends.tmpdir("inherit")
      local ok, out = sh.run(("printf 'from-host' | %s -e %s > %s/out 2> %s/err"):format(sh.lua(false), sh.quote(([[
        package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local sb = assert(require("sandbox").container { base_dir = "%s"%s })
        local r = assert(sb:exec("sh", { "-c", "cat; echo to-err >&2; exit 3" }, { stdio = "inherit" }))
        io.stderr:write("|", r.exit_code, "|", #r.stdout, "|", #r.stderr, "\n")
        sb:close()]]):format(sh.build, tmp, os.getenv("SANDBOX_TEST_UNCONFINED") and ", confine = false" or "")),
        tmp, tmp))
      assert(ok, out .. tostring(sh.read_file(tmp .. "/err")))
      assert.equal("from-host", sh.read_file(tmp .. "/out"))
      assert.equal("to-err\n|3|0|0\n", sh.read_file(tmp .. "/err"))
    end)

    it("leaks no descriptor, and refuses the options that need pipes", function()
      -- the loop is created at the first command, a confined sandbox's
      -- zygote at the second
      for _ = 1, 2 do assert(sb:exec("true")) end
      local before = fd_count()
      for _ = 1, 10 do assert(sb:exec("true", {}, { stdio = "inherit" })) end
      assert.equal(before, fd_count())
      for _, k in ipairs { "stdin", "on_stdout", "on_stderr" } do
        local o = { stdio = "inherit" }
        o[k] = k == "stdin" and "x" or function() end
        assert.has_error(function() sb:exec("true", {}, o) end,
          "exec: option '" .. k .. "' cannot be used with stdio = \"inherit\"")
      end
      assert.has_error(function() sb:exec("true", {}, { stdio = "tty" }) end)
    end)
  end)

  describe("the shell", function()
    it("is refused unless allowed", function()
      local v, msg, code = sb:exec_shell("echo hi")
      assert.is_nil(v)
      assert.equal("EACCES", code)
      assert.matches("allow_shell", msg)
    end)

    it("runs /bin/sh -c with allow_shell, per call or per sandbox", function()
      assert.equal("hi\n", assert(sb:exec_shell("echo hi | cat", { allow_shell = true })).stdout)
      local s2 = new { allow_shell = true }
      assert.equal("3\n", assert(s2:exec_shell("echo $((1 + 2))")).stdout)
      s2:dispose()
    end)
  end)

  describe("environment", function()
    it("gives children only PATH, HOME, LANG, TERM, NO_COLOR, PAGER and the configured ones", function()
      local s2 = new { env = { FOO = "bar" } }
      local r = assert(s2:exec("env", {}, { env = { BAZ = "qux" } }))
      local names = {}
      for line in r.stdout:gmatch("[^\n]+") do names[#names + 1] = line:match("^([^=]+)") end
      table.sort(names)
      local want = { "BAZ", "FOO", "HOME", "LANG", "NO_COLOR", "PAGER", "PATH", "TERM", "TMPDIR" }
      if not s2.confinement.tmpdir.enforced then table.remove(want) end -- unconfined: no private TMPDIR
      assert.same(want, names)
      assert.matches("HOME=" .. s2.cwd:gsub("%p", "%%%0") .. "\n", r.stdout)
      s2:dispose()
    end)

    it("never passes a host secret on, even with inherit_env", function()
      local script = ([[SECRET_TOKEN=s3cr3t MY_API_KEY=k3y VISIBLE=yes %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local a = assert(s.container { base_dir = "%s" })
        local b = assert(s.container { base_dir = "%s", inherit_env = true })
        io.write(a:exec("env").stdout, "--\n", b:exec("env").stdout)']]):format(
        sh.lua(), sh.build, sb.cwd, sb.cwd)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      assert.is_nil(out:find("s3cr3t", 1, true))
      assert.is_nil(out:find("k3y", 1, true))
      local plain, inherited = out:match("^(.-)%-%-\n(.*)$")
      assert.is_nil(plain:find("VISIBLE", 1, true))
      assert.matches("VISIBLE=yes", inherited)
    end)
  end)

  describe("timeouts and kills", function()
    it("kills a command at its timeout with SIGTERM and reports it", function()
      local m = procs.marker()
      local r = assert(sb:exec("sleep", { m }, { timeout = 0.3 }))
      assert.same({ true, "SIGTERM", 143, "timeout" }, { r.timed_out, r.signal, r.exit_code, r.killed_by })
      assert.is_true(r.duration >= 0.3 and r.duration < 3, r.duration)
      assert_gone(m)
    end)

    local layers, group_only = hostcan.layers()
    require("support.tree_kill")(it, function() return sb end, assert_gone, nil, not layers and group_only or nil)

    it("does not hang when a grandchild keeps the output pipe open", function()
      local m = procs.marker()
      local s2 = new { kill_grace = 0.3 }
      local r = assert(s2:exec("sh", { "-c", "sleep " .. m .. " & echo leader-done" }, { timeout = 20 }))
      assert.same({ 0, "leader-done\n", false }, { r.exit_code, r.stdout, r.timed_out })
      assert.is_true(r.output_incomplete)
      assert.is_true(r.duration < 10, r.duration)
      assert_gone(m)
      s2:dispose()
    end)

    it("keeps partial output of a command that timed out", function()
      local r = assert(sb:exec("sh", { "-c", "echo before; sleep 5; echo after" }, { timeout = 0.3 }))
      assert.equal("before\n", r.stdout)
      assert.is_true(r.timed_out)
    end)
  end)

  describe("output caps", function()
    it("keeps head and tail of long output, counts what was dropped, marks the cut", function()
      local s2 = new { max_output_bytes = 1000 }
      local r = assert(s2:exec("seq", { "1", "100000" }))
      assert.is_true(r.truncated)
      local total = #table.concat((function() local t = {} for i = 1, 100000 do t[i] = i .. "\n" end return t end)())
      assert.equal(total - 1000, r.dropped_bytes)
      assert.equal(r.dropped_bytes, r.stdout_dropped)
      assert.equal("1\n2\n", r.stdout:sub(1, 4))
      assert.equal("99999\n100000\n", r.stdout:sub(-13))
      assert.matches("%[%.%.%. " .. (total - 1000) .. " bytes dropped %.%.%.%]", r.stdout)
      s2:dispose()
    end)

    it("stays within its cap for 1 GiB of output", function()
      local function rss()
        local f = io.open("/proc/self/status")
        local kb = f:read("*a"):match("VmRSS:%s+(%d+)")
        f:close()
        return tonumber(kb) * 1024
      end
      local before = rss()
      local r = assert(sb:exec("head", { "-c", "1073741824", "/dev/zero" }, { timeout = 60 }))
      assert.same({ 0, false, true }, { r.exit_code, r.timed_out, r.truncated })
      assert.equal(1073741824 - 1048576, r.dropped_bytes)
      assert.is_true(#r.stdout < 1048576 + 100)
      assert.is_true(rss() - before < 64 * 1048576, "memory grew by " .. (rss() - before))
    end)
  end)

  describe("background handles", function()
    it("start, stream, take stdin, and finish with a result", function()
      local h = assert(sb:exec("cat", {}, { background = true }))
      assert.is_true(h.pid > 1)
      assert.equal(1, h.id)
      assert.is_true(h:running())
      assert.equal("", h:read("stdout"))
      assert.is_true(h:write("ping\n"))
      assert.equal("ping\n", h:read("stdout", 5))
      h:close_stdin()
      local r = assert(h:wait(5))
      assert.same({ 0, "ping\n" }, { r.exit_code, r.stdout })
      assert.is_nil(h:read("stdout"))
      assert.is_false(h:running())
    end)

    it("wait with a timeout returns EAGAIN while running; kill ends the tree", function()
      local m = procs.marker()
      local h = assert(sb:exec("sh", { "-c", "sleep " .. m .. " & sleep " .. m }, { background = true }))
      local v, _, code = h:wait(0.1)
      assert.is_nil(v)
      assert.equal("EAGAIN", code)
      assert.is_true(h:kill())
      local r = assert(h:wait(5))
      assert.same({ "SIGTERM", "kill", false }, { r.signal, r.killed_by, r.timed_out })
      assert_gone(m)
    end)

    it("are listed by processes() and limited by max_background_processes", function()
      local s2 = new { max_background_processes = 2 }
      local a = assert(s2:exec("sleep", { "5" }, { background = true }))
      local b = assert(s2:exec("sleep", { "5" }, { background = true }))
      local v, msg, code = s2:exec("sleep", { "5" }, { background = true })
      assert.is_nil(v)
      assert.equal("EBUSY", code)
      assert.matches("max_background_processes", msg)
      local list = s2:processes()
      assert.equal(2, #list)
      assert.equal(a, list[1])
      assert.equal(b, list[2])
      a:kill("KILL")
      assert(a:wait(5))
      assert.same({ b }, s2:processes())
      assert(s2:exec("true", {}, { background = true })):wait(5)
      s2:dispose()
    end)

    it("poll(timeout) returns in time after the host spent a while elsewhere", function()
      local h = assert(sb:exec("sleep", { "5" }, { background = true }))
      sb:poll(0.05)
      sh.run("sleep 0.3") -- the loop's cached clock goes stale meanwhile
      local clock = require("sandbox.core").clock
      local t = clock()
      sb:poll(0.1)
      assert.is_true(clock() - t < 1, "poll(0.1) blocked for " .. (clock() - t) .. " s")
      h:kill()
    end)

    it("call on_stdout, on_stderr and on_exit as things happen", function()
      local out, err, res = {}, {}, nil
      local h = assert(sb:exec("sh", { "-c", "echo a; echo b >&2; echo c" }, {
        background = true,
        on_stdout = function(c) out[#out + 1] = c end,
        on_stderr = function(c) err[#err + 1] = c end,
        on_exit = function(r) res = r end,
      }))
      local deadline = os.time() + 10
      while not res and os.time() < deadline do sb:poll(0.1) end
      assert.equal("a\nc\n", table.concat(out))
      assert.equal("b\n", table.concat(err))
      assert.equal(0, res.exit_code)
      assert.equal(res, h:wait())
    end)

    it("raise a callback's error from the call that pumped the loop, and keep working", function()
      local h = assert(sb:exec("echo", { "x" }, {
        background = true, on_stdout = function() error("callback failed") end,
      }))
      assert.has_error(function() while h:running() do sb:poll(0.1) end end, "callback failed")
      assert.equal(0, assert(h:wait(5)).exit_code)
    end)

    it("refuse to run the loop from inside a callback", function()
      local inner
      local h = assert(sb:exec("echo", { "x" }, {
        background = true, on_stdout = function() inner = pcall(sb.exec, sb, "true") end,
      }))
      h:wait(5)
      assert.is_false(inner)
    end)

    it("64 concurrent streaming processes lose no byte", function()
      local s2 = new { max_background_processes = 64 }
      local hs = {}
      for i = 1, 64 do
        hs[i] = assert(s2:exec("seq", { tostring(i * 1000) }, { background = true }))
      end
      local ok = true
      for i, h in ipairs(hs) do
        local r = assert(h:wait(30))
        local want = {}
        for n = 1, i * 1000 do want[n] = n .. "\n" end
        if r.stdout ~= table.concat(want) then ok = false end
      end
      assert.is_true(ok)
      s2:dispose()
    end)
  end)

  describe("lifecycle and hygiene", function()
    it("dispose kills and reaps live background processes", function()
      local m = procs.marker()
      local s2 = new { kill_grace = 0.2 }
      local h = assert(s2:exec("sh", { "-c", "trap '' TERM; sleep " .. m .. " & sleep " .. m },
        { background = true }))
      s2:dispose()
      assert_gone(m)
      assert.same({}, procs.zombie_children(sh.pid()))
      assert.is_false(h:running())
      assert.has_error(function() h:write("x") end)
    end)

    it("garbage collection of a sandbox kills its processes", function()
      local m = procs.marker()
      do
        local s2 = new { kill_grace = 0.2 }
        assert(s2:exec("sleep", { m }, { background = true }))
      end
      collectgarbage()
      collectgarbage()
      assert_gone(m)
    end)

    it("<close> kills its processes", function()
      local m = procs.marker()
      require("support.scoped")(new { kill_grace = 0.2 }, function(s2)
        assert(s2:exec("sleep", { m }, { background = true }))
      end)
      assert_gone(m)
    end)

    it("1000 sequential spawns leave no zombie and no extra fd", function()
      for _ = 1, 2 do assert(sb:exec("true")) end -- the loop at the first command, the zygote at the second
      collectgarbage() -- handles earlier tests dropped are not this test's business
      collectgarbage()
      local before = fd_count()
      for _ = 1, 1000 do
        local r = sb:exec("true")
        assert(r and r.exit_code == 0)
      end
      assert.same({}, procs.zombie_children(sh.pid()))
      assert.equal(before, fd_count())
    end)

    it("dispose closes every descriptor the runner opened (loop, pipes, cgroup)", function()
      collectgarbage()
      collectgarbage()
      local before = fd_count()
      local s2 = new()
      assert(s2:exec("true"))
      assert(s2:exec("sleep", { "5" }, { background = true }))
      assert.is_true(fd_count() > before)
      s2:dispose()
      assert.equal(before, fd_count())
    end)

    it("no descriptor of the host reaches a child", function()
      -- io.open's fd is not close-on-exec, as a host application's may be
      local held = assert(io.open("/dev/null"))
      assert(sh.run(("cp %s/test/probe %s/probe"):format(sh.build, sb.cwd)))
      local r = assert(sb:exec("./probe", { "fds", "-" }))
      assert.equal("0\n1\n2\n", r.stdout)
      local s2 = new { confine = false } -- and without confinement, seen from /proc
      r = assert(s2:exec("ls", { "/proc/self/fd" }))
      assert.equal("0\n1\n2\n3\n", r.stdout) -- 3 is ls's own directory handle
      s2:dispose()
      held:close()
    end)

    it("exec = false removes the ability to run commands", function()
      local s2 = new { exec = false }
      assert.is_false(s2.has_exec)
      assert.equal("ENOTSUP", code_of(s2:exec("true")))
      s2:dispose()
    end)

    it("audits commands: their start with argv, and a refusal with its code", function()
      local log = {}
      local s2 = new { audit = function(e) if e.kind ~= "created" then log[#log + 1] = e end end }
      s2:exec("true")
      s2:exec("no-such-cmd")
      assert.same({ "command_start", { "true" } }, { log[1].kind, log[1].argv })
      assert.same({ "command_end", 0 }, { log[2].kind, log[2].exit_code })
      assert.same({ "command_refused", { "no-such-cmd" }, "ENOENT" }, { log[3].kind, log[3].argv, log[3].code })
      assert.is_nil(log[3].path)
      s2:dispose()
    end)
  end)
end)

describe("exec without pidfd, without cgroup, without the zygote, without close_range, without clone3 (forced fallbacks)", function()
  for _, env in ipairs { "SANDBOX_NO_PIDFD=1", "SANDBOX_NO_CGROUP=1", "SANDBOX_NO_PIDFD=1 SANDBOX_NO_CGROUP=1",
                         "SANDBOX_NO_ZYGOTE=1", "SANDBOX_NO_CLONE3=1",
                         -- one close per fd up to the limit: macOS's default limit, not this host's
                         "ulimit -n 256; SANDBOX_NO_ZYGOTE=1 SANDBOX_NO_CLOSE_RANGE=1" } do
    it("runs, times out and kills the tree with " .. env, function()
      local d = backends.tmpdir("fb")
      local m = procs.marker()
      local script = ([[%s %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require("sandbox").container { base_dir = "%s", kill_grace = 0.2 }
        local held = assert(io.open("/dev/null")) -- not close-on-exec
        local r = s:exec("sh", { "-c", "echo hi; exit 4" })
        print(r.stdout:sub(1, 2), r.exit_code)
        print((assert(s:exec("ls", { "/proc/self/fd" })).stdout:gsub("\n", " ")))
        r = s:exec("sh", { "-c", "sleep %s & sleep %s" }, { timeout = 0.3 })
        print(r.timed_out, r.exit_code)
        for i = 1, 200 do local r2, err = s:exec("true") assert(r2 and r2.exit_code == 0, err) end
        s:dispose()
        print("done")']]):format(env, sh.lua(), sh.build, d, m, m)
      local ok, out = sh.run(script)
      assert.is_true(ok, out)
      -- the host's fd reached no command (3 is ls's own directory handle)
      assert.equal("hi\t4\n0 1 2 3 \ntrue\t143\ndone\n", out)
      assert_gone(m)
    end)
  end
end)

describe("a command's cgroup leaf", function()
  -- A command is born in its leaf (clone3 with CLONE_INTO_CGROUP: no
  -- migration) where the kernel allows it; where clone3 is refused
  -- (SANDBOX_NO_CLONE3=1 stands for that) it joins by a write to
  -- cgroup.procs. Either way it is in the leaf from its first instruction.
  -- `first` runs before: a command whose tree is killed through its leaf
  -- (a leaf once killed kills whatever is born in it later).
  local function run(env, confine, opts)
    opts = opts or {}
    local d = backends.tmpdir("leaf")
    local script = ([[%s %s %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require("sandbox").container { base_dir = "%s", confine = %s, kill_grace = 0.1 }
      %s
      for i = 1, %d do
        local r = assert(s:exec("sed", { "-n", "s/^0:://p", "/proc/self/cgroup" }))
        assert(r.exit_code == 0, "exit " .. r.exit_code)
        io.write(r.stdout)
      end
      io.write(tostring(s.confinement and s.confinement.tree_kill and s.confinement.tree_kill.via), "\n")
      s:dispose()' %s]]):format(env, opts.trace or "", sh.lua(), sh.build, d, confine,
      opts.first and 'assert(s:exec("sh", { "-c", [=[trap "" TERM; sleep 30 & sleep 30]=] }, { timeout = 0.2 }).timed_out)' or "",
      opts.n or 2, opts.after or "")
    local ok, out = sh.run(script)
    assert.is_true(ok, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    return out, lines
  end
  local LEAF = "/sandbox%-[^/]+/cmd%-%d+$"

  for _, env in ipairs { "", "SANDBOX_NO_CLONE3=1" } do
    it("holds an unconfined command from its start, after a tree killed through it too"
      .. (env ~= "" and " (" .. env .. ")" or ""), function()
      if not hostcan.can("a command's cgroup leaf", hostcan.cgroup2()) then return end
      local _, lines = run(env, "false, allow_outbound = true", { first = true })
      if not tostring(lines[3]):match("cgroup") then -- the host gives no v2 subtree to make leaves in
        hostcan.note("a command's cgroup leaf", "tree kill here is " .. tostring(lines[3]))
        return
      end
      assert.matches(LEAF, lines[1])
      assert.matches(LEAF, lines[2])
    end)
  end

  it("holds the commands of a host whose own cgroup was killed before it joined (clone3 would kill them)", function()
    if not hostcan.can("commands of a host in a killed cgroup", hostcan.cgroup2()) then return end
    if not hostcan.can("commands of a host in a killed cgroup (a cgroup of the spec's)", hostcan.root()) then return end
    local mnt = sh.lines("grep ' - cgroup2 ' /proc/self/mountinfo | awk '{print $5}'")[1]
    local own = sh.lines("sed -n 's/^0:://p' /proc/self/cgroup")[1] or "/"
    local cg = mnt .. (own == "/" and "" or own) .. "/spec-killed-" .. sh.pid()
    if not sh.run(("mkdir %s && echo 1 > %s/cgroup.kill"):format(sh.quote(cg), sh.quote(cg))) then
      hostcan.note("commands of a host in a killed cgroup", "no cgroup of the spec's can be made here")
      return
    end
    -- the host joins it itself (echo $$ in the shell that execs it), and its
    -- shell goes back before the cgroup is removed
    local env = ("echo $$ > %s/cgroup.procs;"):format(sh.quote(cg))
    local ok, out = pcall(run, env, "false, allow_outbound = true", { first = true })
    local ok2, out2 = true, nil
    if hostcan.can("confined commands of a host in a killed cgroup", hostcan.layers()) then
      ok2, out2 = pcall(run, env .. " SANDBOX_NO_ZYGOTE=1", "true", { n = 3 })
    end
    sh.run(("echo $$ > %s/cgroup.procs; rmdir %s/*/ %s"):format(sh.quote(mnt .. own), sh.quote(cg), sh.quote(cg)))
    assert.is_true(ok, out)
    assert.is_true(ok2, out2)
    local kill = select(3, out:match("^([^\n]*)\n([^\n]*)\n([^\n]*)"))
    if not tostring(kill):match("cgroup") then -- no v2 subtree to make leaves in (or a build without them)
      hostcan.note("a command's leaf under a killed cgroup", "tree kill here is " .. tostring(kill))
      return
    end
    assert.matches("/spec%-killed%-%d+" .. LEAF:sub(1, -2) .. "\n", out)
  end)

  -- (a sandbox with layers has its later commands made by its zygote, which
  -- joins them by a write: the seccomp filter it holds refuses clone3)
  for _, case in ipairs { { "false, allow_outbound = true", 2, "unconfined, with the host's network" },
                          { "true", 1, "confined (its first command: spawned directly)" } } do
    it("is made by the clone, not by a write, where clone3 is allowed: " .. case[3], function()
      if not hostcan.can("a command born in its cgroup leaf", hostcan.cgroup2()) then return end
      if not hostcan.can("a command born in its cgroup leaf (seen by strace)", hostcan.program("/usr/bin/strace")) then
        return
      end
      if case[2] == 1 and not hostcan.can("a confined command born in its leaf", hostcan.layers()) then return end
      local log = os.tmpname()
      local function trace(env)
        run(env, case[1], { trace = "strace -f -qq -e trace=clone3,write -e signal=none -o " .. sh.quote(log), n = case[2] })
        return sh.read_file(log)
      end
      local born = trace("")
      local joined = trace("SANDBOX_NO_CLONE3=1")
      os.remove(log)
      if not joined:match('write%(%d+, "0", 1%) += 1') then -- no leaf to join: nothing to be born in
        hostcan.note("a command born in its cgroup leaf", "this host's commands join no cgroup")
        return
      end
      assert.matches("clone3%(%{flags=[^}]*CLONE_INTO_CGROUP", born)
      assert.is_nil(born:match('write%(%d+, "0", 1%)'), born)
      assert.is_nil(joined:match("CLONE_INTO_CGROUP"), joined)
      -- one clone into the leaf a command: no child made only to try it
      -- (the first command itself says that it runs)
      local _, into = born:gsub("CLONE_INTO_CGROUP", "")
      assert.equal(case[2], into, born)
    end)
  end
end)

describe("a host that dies without disposing", function()
  -- the first command is spawned directly, a later one by the sandbox's
  -- zygote (exec/zygote.h), which must go with the host too (once the host
  -- is gone, init reaps it: its pid is not reused meanwhile)
  for _, case in ipairs { { "", "spawned directly" }, { 'assert(s:exec("true")) ', "forked by the zygote" } } do
    it("takes its commands' leaders with it (SIGKILL to the host): " .. case[2], function()
      if not hostcan.can("commands ended with a host killed by SIGKILL (a parent-death signal)", hostcan.layers()) then
        return
      end
      local d = backends.tmpdir("death")
      local m = procs.marker()
      local script = ([[%s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require("sandbox").container { base_dir = "%s" }
        %sassert(s:exec("sleep", { "%s" }, { background = true }))
        io.write("ready\n") io.flush()
        while true do s:poll(1) end' & echo $!; wait]]):format(sh.lua(), sh.build, d, case[1], m)
      local p = sh.popen(script)
      local host = p:read("*l")
      assert.equal("ready", p:read("*l"))
      assert.is_true(#procs.find(m) >= 2) -- the host (its script names the marker) and sleep
      local zygotes = {} -- the host's children named so
      for _, f in ipairs(sh.lines("grep -lx sandbox-spawn /proc/[0-9]*/comm 2>/dev/null; true")) do
        local pid = f:match("^/proc/(%d+)/comm$")
        local ppid = (sh.read_file("/proc/" .. pid .. "/stat") or ""):match("^%d+ %b() %a (%d+)")
        if ppid == host then zygotes[#zygotes + 1] = pid end
      end
      assert.equal(case[1] == "" and 0 or 1, #zygotes)
      sh.run("kill -9 " .. host)
      p:close()
      local deadline = require("sandbox.core").clock() + 5
      local function zygote_left()
        return zygotes[1] ~= nil and (sh.read_file("/proc/" .. zygotes[1] .. "/comm") or "") == "sandbox-spawn\n"
      end
      while (#procs.find(m) > 0 or zygote_left()) and require("sandbox.core").clock() < deadline do
        sh.run("sleep 0.05")
      end
      assert_gone(m)
      assert.is_false(zygote_left())
    end)
  end

  -- The v2 directory this process's sandboxes make their cgroups in.
  local function cgroup_dir()
    local mnt = sh.lines("grep ' - cgroup2 ' /proc/self/mountinfo | awk '{print $5}'")[1]
    local rel = sh.lines("sed -n 's/^0:://p' /proc/self/cgroup")[1]
    return mnt and (mnt .. (rel == "/" and "" or rel or ""))
  end

  it("leaves no cgroup of its own behind: the next sandbox made on the host removes it", function()
    if not hostcan.can("cgroups a killed host left behind", hostcan.cgroup2()) then return end
    local dir = cgroup_dir()
    assert.is_string(dir, "no cgroup2 hierarchy mounted")
    local d = backends.tmpdir("cgdeath")
    local script = ([[%s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require("sandbox").container { base_dir = "%s" }
      assert(s:exec("true").exit_code == 0)
      io.write("ready\n") io.flush()
      while true do s:poll(1) end' & echo $!; wait]]):format(sh.lua(), sh.build, d)
    local p = sh.popen(script)
    local host = p:read("*l")
    assert.equal("ready", p:read("*l"))
    local pattern = ("ls -d %s/sandbox-*-%s-* 2>/dev/null; true"):format(sh.quote(dir), host)
    local s0 = assert(sandbox.container { base_dir = d })
    local left = sh.lines(pattern)
    local tree_kill = s0.confinement.tree_kill -- absent where commands are not confined (valgrind)
    if (tree_kill and tostring(tree_kill.via):match("cgroup")) or #left > 0 then
      assert.equal(1, #left, "the host made no cgroup directory")
    end
    s0:dispose()
    sh.run("kill -9 " .. host)
    p:close()
    if #left == 0 then return end -- no cgroup here: nothing can be left
    -- the next host (a child too: this one may run unconfined, under valgrind)
    local ok, out = sh.run(([[%s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require("sandbox").container { base_dir = "%s" }
      assert(s:exec("true").exit_code == 0)
      s:dispose()']]):format(sh.lua(), sh.build, d))
    assert.is_true(ok, out)
    assert.same({}, sh.lines(pattern))
  end)
end)
