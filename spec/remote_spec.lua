-- The RemoteSandbox (SPEC §15) over the E2B test peer: what the file
-- contract (fs_contract_spec and the other backend-list specs) does not
-- cover — commands with the §5 semantics, the sandbox's life on the engine
-- (create, reattach, keep, kill at dispose), failures that must be EIO
-- within the configured limits and never a hang, and no key or token in
-- anything the sandbox shows. The tier against a real engine runs when
-- E2B_API_KEY is set, and is reported as pending otherwise.
local sandbox = require "sandbox"
local json = require "sandbox.json"
local sh = require "support.sh"
local procs = require "support.procs"
local peer_lib = require "support.e2b_peer"

local KEY = "remote-spec-key-0123456789"
local clock = require("sandbox.core").clock

local function code_of(...) return select(3, ...) end

-- The peer runs a sandbox's commands on this host: what is left of a
-- command's tree is visible here, by its marker (a unique sleep duration).
local function assert_gone(marker)
  local deadline = clock() + 2 -- a SIGKILLed process is gone within moments
  local live = procs.find(marker)
  while #live > 0 and clock() < deadline do
    sh.run("sleep 0.05")
    live = procs.find(marker)
  end
  assert.same({}, live, "processes of the tree survived: " .. marker)
end

describe("RemoteSandbox", function()
  local peer
  setup(function() peer = peer_lib.start(KEY) end)
  teardown(function() if peer then peer.stop() end end)

  local function new(opts)
    opts = opts or {}
    opts.api_url, opts.api_key, opts.envd_url = opts.api_url or peer.api, opts.api_key or KEY, opts.envd_url or peer.envd
    return sandbox.remote(opts)
  end

  -- The envd calls the peer served for a sandbox: {[path] = count}.
  local function envd_calls(sb)
    local code, body = peer_lib.http("GET", peer.api .. "/sandboxes/" .. sb.sandbox_id .. "/calls", { ["X-API-Key"] = KEY })
    assert.equal(200, code, body)
    return json.decode(body)
  end

  -- The sandboxes the engine lists for our key: {[id] = state}.
  local function listed()
    local code, body = peer_lib.http("GET", peer.api .. "/v2/sandboxes", { ["X-API-Key"] = KEY })
    assert.equal(200, code, body)
    local out = {}
    for _, b in ipairs(json.decode(body)) do out[b.sandboxID] = b.state end
    return out
  end

  describe("on the engine", function()
    it("is created from the options, and killed by dispose", function()
      local sb = assert(new { template = "base", timeout = 60, metadata = { agent = "spec" } })
      assert.equal("remote", sb.kind)
      assert.equal("/home/user", sb.cwd)
      assert.matches("^sbx", sb.sandbox_id)
      assert.equal("running", listed()[sb.sandbox_id])
      local c = sb.confinement
      assert.same({ true, peer.api, "base", sb.sandbox_id }, { c.enabled, c.engine, c.template, c.sandbox_id })
      assert.is_true(c.isolation.enforced)
      assert.matches("microVM", c.isolation.promise)
      assert.matches("environment mark", c.tree_kill.via)
      local id = sb.sandbox_id
      sb:dispose()
      sb:dispose() -- idempotent
      assert.is_nil(listed()[id])
    end)

    it("is left running with keep = true, and reattached by sandbox_id with its files", function()
      local sb = assert(new { keep = true })
      assert(sb:write_file("notes.txt", "kept"))
      local id = sb.sandbox_id
      sb:dispose()
      assert.equal("running", listed()[id])
      local again = assert(new { sandbox_id = id })
      assert.equal(id, again.sandbox_id)
      assert.equal("kept", again:read_file("notes.txt"))
      again:dispose()
      assert.is_nil(listed()[id])
    end)

    it("is created secure: envd takes only calls carrying its access token", function()
      local sb = assert(new {})
      local code, body = peer_lib.http("GET", peer.api .. "/sandboxes/" .. sb.sandbox_id, { ["X-API-Key"] = KEY })
      assert.equal(200, code)
      local token = json.decode(body).envdAccessToken
      assert.is_string(token) -- issued for secure = true only (the API's sandbox_create.go)
      assert.is_true(#token > 0)
      assert.equal("kept", (sb:write_file("t", "kept") and sb:read_file("t"))) -- and ours carries it
      local raw = peer_lib.http("GET", peer.envd .. "/files?path=/home/user/t", { ["E2B-Sandbox-Id"] = sb.sandbox_id })
      assert.equal(401, raw)
      sb:dispose()
    end)

    -- the edge proxy's own answers (infra shared/pkg/proxy/template/*.go)
    for _, case in ipairs {
      { 409, "EAGAIN", "still transitioning" }, -- pausing or resuming: not a file that exists
      { 429, "EAGAIN", "too many concurrent incoming connections" },
      { 502, "EIO", "The sandbox was not found" },
    } do
      it(("reports the edge's %d as %s with its words, then works when it passes"):format(case[1], case[2]), function()
        local sb = assert(new {})
        assert(sb:write_file("a", "1"))
        assert.equal(204, (peer_lib.http("POST", peer.api .. "/sandboxes/" .. sb.sandbox_id .. "/transition",
          { ["X-API-Key"] = KEY, ["Content-Type"] = "application/json" }, ('{"ms":1500,"status":%d}'):format(case[1]))))
        for _, call in ipairs { function() return sb:stat("a") end, function() return sb:write_file("b", "2") end,
                                function() return sb:mkdir("d") end, function() return sb:read_file("a") end,
                                function() return sb:exec("true") end } do
          local ok, msg, code = call()
          assert.is_nil(ok)
          assert.equal(case[2], code, msg)
          assert.matches(case[3], msg, nil, true)
        end
        sh.run("sleep 1.6")
        assert.equal("1", sb:read_file("a"))
        assert.equal(0, assert(sb:exec("true")).exit_code)
        sb:dispose()
      end)
    end

    it("keeps a replaced file's mode: an edited script stays executable", function()
      local sb = assert(new {})
      assert(sb:write_file("run.sh", "#!/bin/sh\necho one\n"))
      assert.equal(0, assert(sb:exec("chmod", { "755", "run.sh" })).exit_code)
      assert(sb:write_file("run.sh", "#!/bin/sh\necho two\n"))
      assert.equal(tonumber("755", 8), assert(sb:stat("run.sh")).mode % 512)
      assert.equal("two\n", assert(sb:exec("./run.sh")).stdout)
      assert(sb:write_file("plain.txt", "a"))
      local calls = function()
        local _, body = peer_lib.http("GET", peer.api .. "/sandboxes/" .. sb.sandbox_id .. "/calls", { ["X-API-Key"] = KEY })
        return json.decode(body)["/process.Process/Start"] or 0
      end
      local before = calls()
      assert(sb:write_file("plain.txt", "b")) -- a plain file's mode is a new file's: no command for it
      assert.equal(before, calls())
      sb:dispose()
    end)

    it("keeps the template's PATH and LANG for commands unless env sets them (envd's own environment)", function()
      local sb = assert(new { template = "custom-path" })
      local r = assert(sb:exec("sh", { "-c", 'printf "%s|%s|%s" "$PATH" "$LANG" "$TERM"' }))
      assert.matches("^/opt/peer%-tool/bin:", r.stdout)
      assert.matches("|en_US%.UTF%-8|dumb$", r.stdout)
      sb:dispose()
      local mine = assert(new { template = "custom-path", env = { PATH = "/usr/bin:/bin", LANG = "C" } })
      assert.equal("/usr/bin:/bin|C", assert(mine:exec("sh", { "-c", 'printf "%s|%s" "$PATH" "$LANG"' })).stdout)
      mine:dispose()
    end)

    -- E2B's SDK runs commands with /bin/bash -l -c (sandbox/commands/index.ts)
    it("reads the login profile with login = true, what the sandbox sets still winning", function()
      -- the peer runs commands on this host, without a microVM's own "/": HOME
      -- names the sandbox's home as this host sees it (pwd there says where)
      local probe = assert(new { keep = true })
      local home = assert(probe:exec("pwd")).stdout:gsub("\n$", "")
      probe:dispose()
      local sb = assert(new { sandbox_id = probe.sandbox_id, login = true, keep = true, env = { MINE = "mine", HOME = home } })
      assert(sb:write_file(".profile", table.concat({
        'export PATH="$HOME/tools:$PATH" FROM_PROFILE=yes TERM=xterm MINE=theirs',
        "echo noise from the profile; echo more >&2", "set -eu", "" }, "\n")))
      assert(sb:write_file("tools/hello", "#!/bin/sh\necho hello from tools\n"))
      assert.equal(0, assert(sb:exec("chmod", { "+x", "tools/hello" })).exit_code)
      local r = assert(sb:exec("hello"))
      assert.same({ 0, "hello from tools\n", "" }, { r.exit_code, r.stdout, r.stderr })
      r = assert(sb:exec("sh", { "-c", 'printf "%s|%s|%s" "$FROM_PROFILE" "$TERM" "$MINE"' }))
      assert.equal("yes|dumb|mine", r.stdout)
      -- the profile's `set -eu` is not the wrapper's: a failing command still ends as itself, the tree swept
      r = assert(sb:exec("sh", { "-c", "exit 3" }))
      assert.equal(3, r.exit_code)
      assert.equal(7, assert(sb:exec("sh", { "-c", "sleep 1007.75 & exit 7" })).exit_code)
      assert_gone("1007.75")
      sb:dispose()
      -- without it (the default), the same sandbox and profile: the engine's environment only
      local plain = assert(new { sandbox_id = probe.sandbox_id, env = { HOME = home } })
      assert.equal("ENOENT", code_of(plain:exec("hello")))
      assert.equal("", assert(plain:exec("sh", { "-c", 'printf "%s" "$FROM_PROFILE"' })).stdout)
      plain:dispose()
    end)

    it("lists every page of the engine's sandboxes (X-Next-Token), not the first one only", function()
      local paged = peer_lib.start(KEY, { page_size = 2 })
      local made = {}
      for i = 1, 5 do
        made[i] = assert(sandbox.remote { api_url = paged.api, envd_url = paged.envd, api_key = KEY })
      end
      local seen = {}
      for _, b in ipairs(assert(sandbox.remote_list { api_url = paged.api, api_key = KEY })) do
        seen[b.sandbox_id] = true
      end
      for i = 1, 5 do
        assert.is_true(seen[made[i].sandbox_id], "sandbox " .. i .. " was not listed")
        made[i]:dispose()
      end
      paged.stop()
    end)

    it("is kept alive by keep_alive, and listed by sandbox.remote_list", function()
      local sb = assert(new { timeout = 1 })
      assert.is_true(sb:keep_alive(30))
      sh.run("sleep 1.5") -- past the first timeout: the peer kills expired sandboxes, as the engine does
      assert.equal("kept", (sb:write_file("alive", "kept") and sb:read_file("alive")))
      local found
      for _, b in ipairs(assert(sandbox.remote_list { api_url = peer.api, api_key = KEY })) do
        if b.sandbox_id == sb.sandbox_id then found = b end
      end
      assert.same({ "running", "base" }, { found.state, found.template })
      assert.has_error(function() sb:keep_alive(0) end)
      assert.has_error(function() sandbox.remote_list { api_url = peer.api, api_key = KEY, template = "x" } end)
      sb:dispose()
      assert.equal("EACCES", code_of(sandbox.remote_list { api_url = peer.api, api_key = "not-the-key-0123" }))
    end)

    it("keeps its connections to envd open between calls (as the SDK does): one, not one a call", function()
      local function connections()
        local code, body = peer_lib.http("GET", peer.api .. "/connections", { ["X-API-Key"] = KEY })
        assert.equal(200, code, body)
        return json.decode(body).envd
      end
      local sb = assert(new {})
      local before = connections()
      for i = 1, 20 do
        assert(sb:write_file("c" .. i, "x"))
        assert.equal("x", sb:read_file("c" .. i))
        assert(sb:stat("c" .. i))
      end
      assert.is_true(connections() - before <= 2, (connections() - before) .. " connections for 60 calls")
      sb:dispose()
    end)

    it("refuses escaping and denied paths before any request leaves the host", function()
      local sb = assert(new { rules = { deny = { "secret/**" } }, extensions = { write = { ".txt" } } })
      local function calls()
        local n = 0
        for _, k in pairs(envd_calls(sb)) do n = n + k end
        return n
      end
      local before = calls()
      for _, c in ipairs {
        { "EESCAPE", sb:read_file("../../etc/passwd") }, { "EESCAPE", sb:read_file("/etc/passwd") },
        { "EESCAPE", sb:write_file("../x.txt", "x") },
        -- commands: none at all, as the rules would not bind them on the engine (SPEC §6.1)
        { "ENOTSUP", sb:exec("cat", { "secret/key" }) },
        { "EESCAPE", sb:readdir("/home") }, { "EESCAPE", sb:rename("a.txt", "../../b.txt") },
        { "EACCES", sb:read_file("secret/key") }, { "EACCES", sb:write_file("notes.md", "x") },
        { "EINVAL", sb:read_file("a\0b") }, { "EINVAL", sb:remove(".") },
      } do
        assert.equal(c[1], c[4], tostring(c[3]))
      end
      assert.equal(before, calls(), "a request reached the engine")
      sb:dispose()
      local plain = assert(new())
      local n0 = 0
      for _, k in pairs(envd_calls(plain)) do n0 = n0 + k end
      assert.equal("EESCAPE", select(3, plain:exec("pwd", {}, { cwd = "../.." })))
      local n1 = 0
      for _, k in pairs(envd_calls(plain)) do n1 = n1 + k end
      assert.equal(n0, n1, "a request reached the engine")
      plain:dispose()
    end)

    it("refuses commands when read_only or rules are set: nothing on the engine binds them", function()
      for _, opts in ipairs { { read_only = true }, { rules = { allow = { "src/**" } } } } do
        local sb = assert(new(opts))
        local r, msg, code = sb:exec("true")
        assert.is_nil(r)
        assert.equal("ENOTSUP", code)
        assert.matches("do not bind them", msg)
        assert.matches("do not bind them", sb.confinement.refused)
        assert.is_false(sb.confinement[opts.read_only and "read_only" or "rules"].enforced)
        sb:dispose()
      end
    end)

    it("gives env to the sandbox at creation and to every command", function()
      local sb = assert(new { env = { GREETING = "hello" } })
      assert.equal("hello\n", assert(sb:exec("sh", { "-c", "echo $GREETING" })).stdout)
      sb:dispose()
    end)

    it("says why when the engine refuses: a wrong key, an unknown sandbox", function()
      local v, msg, code = new { api_key = "wrong-key-0123456789" }
      assert.is_nil(v)
      assert.equal("EACCES", code)
      assert.is_nil(msg:find("wrong-key-0123456789", 1, true), "the key is in the message: " .. msg)
      assert.equal("ENOENT", code_of(new { sandbox_id = "sbxnosuchbox" }))
    end)

    it("gives EIO for an engine that is not there, never a hang", function()
      local t = clock()
      local v, msg, code = new { api_url = "http://127.0.0.1:1", connect_timeout = 0.5 }
      assert.is_nil(v)
      assert.equal("EIO", code, msg)
      assert.is_true(clock() - t < 3, "took " .. (clock() - t) .. " s")
    end)

    it("checks its options as strictly as every constructor", function()
      assert.has_error(function() new { tempalte = "base" } end, "sandbox.remote: unknown option 'tempalte' (did you mean 'template'?)")
      assert.has_error(function() new { api_url = "ftp://x" } end)
      assert.has_error(function() new { sandbox_id = "../x" } end)
      assert.has_error(function() new { metadata = { a = 1 } } end)
      assert.has_error(function() new { memory_limit = "1GB" } end) -- local confinement: not an option here
    end)

    it("never shows the key or the token: fields, confinement, messages", function()
      local sb = assert(new())
      local code, body = peer_lib.http("GET", peer.api .. "/v2/sandboxes", { ["X-API-Key"] = KEY })
      assert.equal(200, code)
      local token
      for _, b in ipairs(json.decode(body)) do if b.sandboxID == sb.sandbox_id then token = b.envdAccessToken end end
      assert.is_string(token)
      local seen = {}
      local function walk(v, depth)
        if depth > 4 then return end
        if type(v) == "string" then seen[#seen + 1] = v end
        if type(v) == "table" then for k, x in pairs(v) do walk(k, depth + 1) walk(x, depth + 1) end end
      end
      walk(sb.confinement, 0)
      for _, k in ipairs { "sandbox_id", "kind", "cwd" } do seen[#seen + 1] = tostring(sb[k]) end
      seen[#seen + 1] = select(2, sb:read_file("missing")) or ""
      seen[#seen + 1] = select(2, sb:exec("no-such-program")) or ""
      for _, s in ipairs(seen) do
        assert.is_nil(s:find(KEY, 1, true), s)
        assert.is_nil(s:find(token, 1, true), s)
      end
      sb:dispose()
    end)
  end)

  describe("commands", function()
    local sb
    before_each(function() sb = assert(new { kill_grace = 0.3, allow_shell = true }) end)
    after_each(function() if sb then sb:dispose() end end)

    -- A host that dies mid-command: a Lua process that makes a kept
    -- sandbox (o.opts: more of its options, as Lua source), runs o.before
    -- (Lua source, with sb), then o.command, and is killed with SIGKILL
    -- o.after seconds after it began o.command (o.before may take long on
    -- a loaded machine). The sandbox's id.
    local function host_dies(o)
      local ready = os.tmpname() .. ".ready"
      local script = ([[%s%s -e '
          package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
          package.cpath = "%s/?.so;" .. package.cpath
          local sb = assert(require("sandbox").remote { api_url = "%s", envd_url = "%s", api_key = "%s",
            keep = true, kill_grace = 0.2%s })
          print(sb.sandbox_id); io.stdout:flush()
          %s
          assert(io.open("%s", "w")):close()
          %s' & pid=$!
          for _ in $(seq 1200); do [ -e %s ] && break; sleep 0.05; done
          sleep %s; kill -9 $pid; wait $pid]]):format(o.env or "", sh.lua(), sh.build, peer.api, peer.envd, KEY,
        o.opts or "", o.before or "", ready, o.command, sh.quote(ready), o.after)
      local _, out = sh.run(script)
      os.remove(ready)
      os.remove(ready:sub(1, -7))
      local id = out:match("sbx%w+")
      assert.is_truthy(id, out)
      return id
    end

    it("returns the SPEC result table", function()
      local r = assert(sb:exec("echo", { "hello", "world" }))
      assert.same({ 0, false, "hello world\n", "", false, 0 },
        { r.exit_code, r.timed_out, r.stdout, r.stderr, r.truncated, r.dropped_bytes })
      assert.is_nil(r.signal)
      assert.is_number(r.duration)
      assert.is_true(r.pid > 0)
    end)

    for _, c in ipairs {
      { "exit 0", 0 }, { "exit 3", 3 }, { "exit 255", 255 },
      { "kill -TERM $$", 143, "SIGTERM" }, { "kill -KILL $$", 137, "SIGKILL" },
      { "kill -INT $$", 130, "SIGINT" }, { "kill -SEGV $$", 139, "SIGSEGV" },
      { "kill -USR1 $$", 138, "SIGUSR1" }, { "kill -PIPE $$", 141, "SIGPIPE" }, { "kill -BUS $$", 135, "SIGBUS" },
      { "kill -XCPU $$", 152, "SIGXCPU" }, { "kill -ALRM $$", 142, "SIGALRM" },
    } do
      -- envd's end event carries `error` for every non-zero exit and signal
      -- (cmd.Wait()'s *exec.ExitError: envd process/handler/handler.go,
      -- Handler.Wait; the peer does the same): it is not a failed start
      it(("reports %q as exit_code %d, not as a command that could not run"):format(c[1], c[2]), function()
        local r = assert(sb:exec("sh", { "-c", c[1] }))
        assert.equal(c[2], r.exit_code)
        assert.equal(c[3], r.signal)
        assert.is_nil(r.status_lost)
        assert.is_nil(r.error)
      end)
    end

    it("passes argv as is, and round-trips stdin and binary output", function()
      assert.equal("[a b][*][$HOME]['q']", assert(sb:exec("printf", { "[%s]", "a b", "*", "$HOME", "'q'" })).stdout)
      local blob = {}
      for i = 0, 255 do blob[#blob + 1] = string.char(i) end
      blob = table.concat(blob):rep(300)
      local r = assert(sb:exec("cat", {}, { stdin = blob }))
      assert.equal(blob, r.stdout)
      r = assert(sb:exec("cat", {}, { timeout = 5 })) -- no input: an empty stdin, never a wait
      assert.same({ 0, "", false }, { r.exit_code, r.stdout, r.timed_out })
    end)

    it("runs in cwd, an agent path resolved beneath the root before any request", function()
      assert(sb:mkdir("sub/dir"))
      assert.matches("/home/user/sub/dir\n$", assert(sb:exec("pwd", {}, { cwd = "sub/dir" })).stdout)
      assert.equal("ENOENT", code_of(sb:exec("pwd", {}, { cwd = "missing" })))
      assert.equal("EESCAPE", code_of(sb:exec("pwd", {}, { cwd = "../.." })))
      assert(sb:write_file("f", "x"))
      assert.equal("ENOTDIR", code_of(sb:exec("pwd", {}, { cwd = "f" })))
      assert(sb:symlink("sub", "link"))
      assert.matches("/home/user/sub/dir\n$", assert(sb:exec("pwd", {}, { cwd = "link/dir" })).stdout)
    end)

    it("reports a program that cannot start as nil, msg, code", function()
      local v, msg, code = sb:exec("no-such-command-xyz")
      assert.is_nil(v)
      assert.equal("ENOENT", code)
      assert.equal("ENOENT: command not found: no-such-command-xyz", msg)
      assert(sb:write_file("script.sh", "#!/bin/sh\necho hi\n")) -- not executable
      assert.same({ "EACCES", "ENOENT", "EACCES" },
        { code_of(sb:exec("./script.sh")), code_of(sb:exec("./missing.sh")), code_of(sb:exec(".")) })
      assert.equal("ENOENT", code_of(sb:exec("no-such-command-xyz", {}, { background = true })))
      assert.same({}, sb:processes())
      -- a program found on PATH runs as exec runs it: never a shell's builtin
      assert.equal("a\\nb\n", assert(sb:exec("echo", { "a\\nb" })).stdout)
      -- nor from the second command on, where the wrapper runs a program
      -- the shell would find itself as a plain command (remote/tree.c)
      assert.equal("a\\nb\n", assert(sb:exec("echo", { "a\\nb" })).stdout)
      -- nor a function of the wrapper's, by its name on PATH
      local home = assert(sb:exec("pwd")).stdout:gsub("\n$", "")
      for _, name in ipairs { "quiet", "sweep", "guard" } do
        assert(sb:write_file("bin/" .. name, "#!/bin/sh\necho the program\n"))
        assert(sb:exec("chmod", { "+x", "bin/" .. name }))
        assert.equal("the program\n", assert(sb:exec(name, {}, { env = { PATH = home .. "/bin:/usr/bin:/bin" } })).stdout)
      end
    end)

    it("passes the environment: the sandbox's base, the call's, HOME at the root", function()
      local r = assert(sb:exec("sh", { "-c", "echo $HOME $A $PATH" }, { env = { A = "x" } }))
      assert.matches("^/home/user x /", r.stdout)
    end)

    it("times out with SIGTERM, then SIGKILL after kill_grace for one that ignores it", function()
      local t = clock()
      local r = assert(sb:exec("sleep", { "30" }, { timeout = 0.3 }))
      assert.same({ true, 143, "SIGTERM", "timeout" }, { r.timed_out, r.exit_code, r.signal, r.killed_by })
      r = assert(sb:exec_shell("trap '' TERM; sleep 30", { timeout = 0.3 }))
      assert.same({ true, 137, "SIGKILL" }, { r.timed_out, r.exit_code, r.signal })
      assert.is_true(clock() - t < 5, "took " .. (clock() - t) .. " s")
    end)

    describe("kill the whole tree, as the local runner does", function()
      require("support.tree_kill")(it, function() return sb end, assert_gone, 0.5)

      -- The wrapper stops its deadline watchdog with SIGUSR1 when the
      -- command ends; a USR1 that came while the watchdog was still setting
      -- its traps was once caught by `trap :` and lost, and a quick command
      -- then waited for its whole timeout (CI: 137 after 30 s, about one
      -- in a hundred under load). The wrapper as envd started it (read back
      -- from a running one) is run here with a pause at each point of the
      -- watchdog's start: the USR1 comes there every time.
      it("stops its watchdog wherever the watchdog's start is when the command ends", function()
        local m = procs.marker()
        local h = assert(sb:exec("sleep", { m }, { background = true }))
        local script
        for _ = 1, 100 do
          for _, pid in ipairs(procs.find(m)) do
            local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
            local args = {}
            for a in (f and f:read("*a") or ""):gmatch("([^%z]*)%z") do args[#args + 1] = a end
            if f then f:close() end
            if args[1] == "/bin/sh" and args[2] == "-c" and args[4] == "agent-sandbox" then script = args[3] end
          end
          if script then break end
          require("sandbox.core").sleep(0.05)
        end
        h:kill("KILL")
        assert(script, "no running wrapper found")
        local start = assert(script:find("  (trap '", 1, true), "the watchdog's start is not where it was")
        local pause = "j=0; while [ $j -lt 30000 ]; do j=$((j + 1)); done; "
        local points = { start + 3 } -- before its first trap
        for _, after in ipairs { "USR1; ", "trap : $t; " } do
          local at = assert(script:find(after, start, true), after)
          points[#points + 1] = at + #after
        end
        for _, at in ipairs(points) do
          local paused = script:sub(1, at - 1) .. pause .. script:sub(at)
          local t = clock()
          -- (the mark on the wrapper alone: its sweep would end a marked parent)
          local ok, out = sh.run(("timeout -s KILL 20 env AGENT_SANDBOX_TREE=spec-%s /bin/sh -c %s agent-sandbox run 30 2 - true; echo rc=$?")
            :format(m, sh.quote(paused)))
          assert.truthy(out:find("rc=0", 1, true), ("paused at %d: %s"):format(at, out))
          assert.is_true(clock() - t < 10, ("paused at %d: %.1f s"):format(at, clock() - t))
          assert(ok)
        end
      end)

      it("h:kill(sig) sends that signal to the whole tree, as locally", function()
        local h = assert(sb:exec("sh", { "-c", "trap 'echo got-usr1; exit 3' USR1; echo up; while :; do sleep 0.05; done" },
          { background = true }))
        assert.equal("up\n", h:read("stdout", 5))
        assert(h:kill("USR1"))
        local r = h:wait()
        assert.same({ 3, "up\ngot-usr1\n" }, { r.exit_code, r.stdout })
        assert.has_error(function() h:kill("NOPE") end)
      end)

      it("h:kill() and dispose take a background command's descendants too", function()
        local m1, m2 = procs.marker(), procs.marker()
        local h1 = assert(sb:exec("sh", { "-c", "sleep " .. m1 .. " & echo up; wait" }, { background = true }))
        local h2 = assert(sb:exec("sh", { "-c", "setsid sleep " .. m2 .. " & echo up; wait" }, { background = true }))
        assert.equal("up\n", h1:read("stdout", 5))
        assert.equal("up\n", h2:read("stdout", 5))
        assert(h1:kill())
        assert.equal("SIGTERM", h1:wait().signal)
        assert_gone(m1)
        assert.is_true(#procs.find(m2) > 0, "the other command's tree runs on")
        sb:dispose()
        sb = nil
        assert_gone(m2)
      end)

      it("fails closed where the template cannot have a tree killed (no grep -z): nothing runs", function()
        if not sh.run("test $(id -u) = 0") then pending("the peer fakes such a template with a mount: needs root") return end
        local s = assert(new { template = "no-grep-z", allow_shell = true })
        for _ = 1, 2 do -- asked again for every command until one passes
          local v, msg, code = s:exec_shell("touch ran")
          assert.same({ "ENOTSUP" }, { code }, msg)
          assert.is_nil(v)
          assert.matches("grep that takes %-z", msg)
        end
        assert.is_false(s:exists("ran"))
        assert.equal("ENOTSUP", code_of(s:exec("sleep", { "1" }, { background = true })))
        -- a start heard later (wait = false) says the same to on_exit
        local got
        assert(s:exec_shell("touch ran", { wait = false, on_exit = function(...) got = { ... } end }))
        local t0 = clock()
        while not got and clock() - t0 < 10 do s:poll(0.05) end
        assert.same("ENOTSUP", got and got[3])
        assert.is_nil(got[1])
        assert.matches("grep that takes %-z", got[2])
        assert.is_false(s:exists("ran"))
        assert.same({}, s:processes())
        s:dispose()
      end)

      it("a host that dies mid-command: the engine-side deadline still ends the whole tree", function()
        local m = procs.marker()
        local id = host_dies { after = 0.7,
          command = ('sb:exec("sh", { "-c", "setsid sleep %s & sleep %s" }, { timeout = 2 })'):format(m, m) }
        assert.is_true(#procs.find(m) > 0, "running after its host is gone")
        sh.run("sleep " .. 2 + 0.2 + 2 + 0.2 + 1) -- the watchdog's time (timeout, grace, margin), its grace, slack
        assert_gone(m)
        assert.equal("running", listed()[id]) -- the sandbox itself was kept
        peer_lib.http("DELETE", peer.api .. "/sandboxes/" .. id, { ["X-API-Key"] = KEY })
      end)
    end)

    -- The engine-side helper (remote/helper.h): uploaded after a sandbox's
    -- first command, it runs the commands after that in place of the sh
    -- wrapper, as the subreaper of all they start.
    describe("under the engine-side helper", function()
      -- What runs a command: its parent's command line.
      local function keeper(s)
        local r = assert(s:exec("sh", { "-c", "tr '\\000' ' ' </proc/$PPID/cmdline" }))
        return r.stdout
      end
      -- A sandbox whose commands run under its helper (commands started
      -- while the helper uploads run under the wrapper).
      local function helped(opts)
        local s = assert(new(opts))
        for _ = 1, 100 do
          local k = keeper(s)
          if k:find("/" .. "sandbox-rtree run ", 1, true) then return s, k:match("^(%S+)") end
          require("sandbox.core").sleep(0.02)
        end
        error("no command ran under the helper")
      end
      local hs
      before_each(function() hs = helped { kill_grace = 0.3, allow_shell = true } end)
      after_each(function() if hs then hs:dispose() end end)

      require("support.tree_kill")(it, function() return hs end, assert_gone, 0.5)

      it("is one upload a sandbox, under the engine's temporary directory, removed at dispose", function()
        local s, path = helped {}
        local tmp = assert(s:exec("sh", { "-c", "echo ${TMPDIR:-/tmp}" })).stdout:gsub("\n$", "")
        assert.equal(tmp .. "/", path:match("^(.*/)agent%-sandbox%-rtree%.%x+/sandbox%-rtree$"))
        assert.is_true(sh.run("test -x " .. path))
        for _ = 1, 3 do assert.equal(path, keeper(s):match("^(%S+)")) end
        assert.matches("subreaper", s.confinement.tree_kill.via)
        s:dispose()
        assert.is_false(sh.run("test -e " .. path:match("^(.*)/")), "its directory survived dispose")
      end)

      it("answers a program that cannot start as the wrapper does, and runs argv as exec does", function()
        assert(hs:write_file("script.sh", "#!/bin/sh\necho hi\n")) -- not executable
        assert(hs:write_file("noshebang", "echo no-shebang \"$@\"\n"))
        assert(hs:exec("chmod", { "+x", "noshebang" }))
        for _, c in ipairs { { "no-such-command-xyz", "ENOENT" }, { "./script.sh", "EACCES" }, { "./missing.sh", "ENOENT" },
                             { ".", "EACCES" } } do
          local v, msg, code = hs:exec(c[1])
          assert.same({ c[2] }, { code }, msg)
          assert.is_nil(v)
        end
        assert.equal("a\\nb\n", assert(hs:exec("echo", { "a\\nb" })).stdout) -- the program, not a builtin
        assert.equal("no-shebang x y\n", assert(hs:exec("./noshebang", { "x", "y" })).stdout) -- sh runs it, as execvp
        local r = assert(hs:exec("sh", { "-c", "exit 130" })) -- an exit status, not the signal it resembles
        assert.same({ 130 }, { r.exit_code })
        assert.is_nil(r.signal)
        r = assert(hs:exec("sh", { "-c", "kill -USR2 $$" }))
        assert.same({ "SIGUSR2" }, { r.signal })
      end)

      it("kills what left the tree's environment too: a daemon that rewrote its environment", function()
        local m = procs.marker()
        local r = assert(hs:exec("sh", { "-c", "(env -i setsid sleep " .. m .. " >/dev/null 2>&1 &); echo started" }))
        assert.same({ 0, "started\n" }, { r.exit_code, r.stdout })
        assert_gone(m)
        -- and through h:kill, below a background command
        local m2 = procs.marker()
        local h = assert(hs:exec("sh", { "-c", "(env -i setsid sleep " .. m2 .. " >/dev/null 2>&1 &); echo up; sleep " .. m2 },
          { background = true }))
        assert.equal("up\n", h:read("stdout", 5))
        assert(h:kill("KILL"))
        h:wait()
        assert_gone(m2)
      end)

      it("a command that removes the helper: the next one still runs, and a new helper is uploaded", function()
        local path = keeper(hs):match("^(%S+)")
        assert(hs:exec("sh", { "-c", "rm -rf " .. path:match("^(.*)/") }))
        local r = assert(hs:exec("sh", { "-c", "echo out; echo err >&2; exit 4" }))
        assert.same({ 4, "out\n", "err\n" }, { r.exit_code, r.stdout, r.stderr }) -- nothing of the failed start shows
        local again
        for _ = 1, 100 do
          again = keeper(hs):match("^(%S+/sandbox%-rtree) run ")
          if again and again ~= path then break end
        end
        assert.is_truthy(again and again ~= path, "no new helper")
      end)

      it("a host that dies mid-command: the helper ends the whole tree at its deadline", function()
        local m = procs.marker()
        local id = host_dies { after = 1,
          before = [[local t0 = os.time()
          while os.time() - t0 < 30 do -- the helper is uploaded by a thread: a while on a loaded machine
            local r = assert(sb:exec("sh", { "-c", "tr \"\\000\" \" \" </proc/$PPID/cmdline" }))
            if r.stdout:find("sandbox-rtree run", 1, true) then break end
          end]],
          command = ('sb:exec("sh", { "-c", "env -i setsid sleep %s & sleep %s" }, { timeout = 2 })'):format(m, m) }
        local live = procs.find(m)
        assert.is_true(#live > 0, "running after its host is gone")
        local under
        for _, pid in ipairs(live) do
          local parent = (sh.read_file("/proc/" .. pid .. "/stat") or ""):match("%) %a (%d+)")
          under = under or (sh.read_file("/proc/" .. tostring(parent) .. "/cmdline") or ""):find("sandbox-rtree", 1, true)
        end
        assert.is_truthy(under, "the command does not run under the helper")
        sh.run("sleep " .. 2 + 0.2 + 2 + 0.2 + 1) -- its deadline (timeout, grace, margin), its grace, slack
        assert_gone(m)
        peer_lib.http("DELETE", peer.api .. "/sandboxes/" .. id, { ["X-API-Key"] = KEY })
      end)

      it("where it cannot run (a /tmp that takes no programs), commands keep the wrapper", function()
        if not sh.run("test $(id -u) = 0") then pending("the peer fakes such a template with a mount: needs root") return end
        local s = assert(new { template = "noexec-tmp" })
        assert(s:exec("true")) -- (the first checks the template)
        for _ = 1, 10 do
          assert.matches("agent%-sandbox run ", keeper(s))
          require("sandbox.core").sleep(0.02)
        end
        assert.equal("x\n", assert(s:exec("echo", { "x" })).stdout)
        s:dispose()
      end)

      it("is not uploaded with tree_helper = false", function()
        local s = assert(new { tree_helper = false })
        assert(s:exec("true"))
        for _ = 1, 10 do
          assert.matches("agent%-sandbox run ", keeper(s))
          require("sandbox.core").sleep(0.02)
        end
        assert.not_matches("subreaper", s.confinement.tree_kill.via)
        s:dispose()
      end)
    end)

    -- The deadline guard (remote/tree.h): one process per runner keeps
    -- the deadlines of its commands, in place of a watchdog per command.
    describe("the deadline guard", function()
      -- Processes whose environment carries the mark (the guard marks
      -- itself and its sleeps with its own).
      local function marked(mark)
        local out = {}
        for _, pid in ipairs(procs.all()) do
          local env = sh.read_file("/proc/" .. pid .. "/environ") or ""
          if env:find("\0AGENT_SANDBOX_TREE=" .. mark .. "\0", 1, true) or env:find("^AGENT_SANDBOX_TREE=" .. mark .. "%z")
          then out[#out + 1] = pid end
        end
        return out
      end
      -- The guard a sandbox's commands are given: the argument after the
      -- grace in a running wrapper's command line ("PID DIR").
      local function guard_of(s)
        local m = procs.marker()
        local h = assert(s:exec("sleep", { m }, { background = true }))
        local spec
        for _ = 1, 100 do
          for _, pid in ipairs(procs.find(m)) do
            local args = {}
            for a in (sh.read_file("/proc/" .. pid .. "/cmdline") or ""):gmatch("([^%z]*)%z") do args[#args + 1] = a end
            if args[4] == "agent-sandbox" then spec = args[8] end
          end
          if spec then break end
          require("sandbox.core").sleep(0.05)
        end
        h:kill("KILL")
        h:wait()
        assert(spec, "no running wrapper found")
        if spec == "-" then return nil end
        local pid, dir = spec:match("^(%d+) (/.*)$")
        assert(pid, spec)
        return { pid = tonumber(pid), dir = dir, mark = dir:match("agent%-sandbox%-guard%.(%x+)$") }
      end
      -- The guard, once its own thread has started it (commands started
      -- meanwhile keep their own watchdogs): asked again after a command.
      local function next_guard(s, other)
        for _ = 1, 50 do
          local g = guard_of(s)
          if g and g.pid ~= (other and other.pid) then return g end
          assert(s:exec("true"))
        end
        error("no guard was made")
      end
      local function gone_within(seconds, what, f)
        local t0 = clock()
        while not f() and clock() - t0 < seconds do sh.run("sleep 0.1") end
        assert.is_true(f(), what)
      end

      -- (with the engine-side helper off: a helper runs every command but
      -- login ones, which still get the guard, see the last case here)
      it("is made after the first command, shared by the next ones, and ended with its directory at dispose", function()
        local s = assert(new { tree_helper = false })
        assert.is_nil(guard_of(s)) -- the first command checks the template: no guard yet
        assert(s:exec("true"))
        local g = next_guard(s)
        assert.is_true(#marked(g.mark) > 0)
        assert.is_true(sh.run("test -d " .. g.dir))
        for _ = 1, 3 do assert.equal(0, assert(s:exec("true")).exit_code) end
        assert.same(g, guard_of(s)) -- the same guard for every command
        s:dispose()
        assert.same({}, marked(g.mark), "the guard or its sleeps survived dispose")
        assert.is_false(sh.run("test -e " .. g.dir), "its directory survived dispose")
      end)

      it("keeps the deadlines of login commands, which the wrapper runs while the helper runs the rest", function()
        local s = assert(new { login = true })
        assert(s:exec("true"))
        local g = next_guard(s)
        assert.is_true(#marked(g.mark) > 0)
        s:dispose()
        assert.same({}, marked(g.mark), "the guard or its sleeps survived dispose")
      end)

      it("killed, a command keeps its own deadline and output, and the next one gets a new guard", function()
        local s = assert(new { kill_grace = 0.2, tree_helper = false })
        assert(s:exec("true"))
        local g = next_guard(s)
        sh.run("kill -9 " .. g.pid)
        gone_within(2, "the guard died", function() return not sh.read_file("/proc/" .. g.pid .. "/stat") end)
        -- its own watchdog, and not a byte of the wrapper's in the output
        local r = assert(s:exec("sh", { "-c", "echo out; echo err >&2" }))
        assert.same({ 0, "out\n", "err\n" }, { r.exit_code, r.stdout, r.stderr })
        local t = clock()
        r = assert(s:exec("sh", { "-c", "trap '' TERM; sleep 30" }, { timeout = 0.3 }))
        assert.same({ true, 137 }, { r.timed_out, r.exit_code })
        assert.is_true(clock() - t < 5)
        local g2 = next_guard(s, g)
        -- the old one's sleeps and directory were swept when it was found gone
        assert.same({}, marked(g.mark))
        assert.is_false(sh.run("test -e " .. g.dir))
        s:dispose()
        assert.same({}, marked(g2.mark))
      end)

      it("a host that dies mid-command: the guard ends the whole tree at its deadline, woken early for it, then ends itself", function()
        local m = procs.marker()
        -- commands with a later deadline until one is registered (its
        -- wrapper's guard argument, read by the command): the guard sleeps
        -- until that one's, and the last command must wake it
        local id = host_dies { env = "SANDBOX_REMOTE_GUARD_IDLE=1 ", opts = ", tree_helper = false", after = 1.5,
          before = [[assert(sb:exec("true"))
          local t0 = os.time()
          while os.time() - t0 < 30 do -- the guard is started by a thread: a while on a loaded machine
            local r = assert(sb:exec("sh", { "-c", "tr \"\\000\" \"\\n\" </proc/$PPID/cmdline | sed -n 8p" }, { timeout = 100 }))
            if r.stdout ~= "-\n" then break end
          end]],
          command = ('sb:exec("sh", { "-c", "setsid sleep %s & sleep %s" }, { timeout = 3 })'):format(m, m) }
        local live = procs.find(m)
        assert.is_true(#live > 0, "running after its host is gone")
        -- the command's wrapper was registered with the guard, not watched by its own
        local wrapper_mark, gdir
        for _, pid in ipairs(live) do
          wrapper_mark = wrapper_mark or (sh.read_file("/proc/" .. pid .. "/environ") or ""):match("AGENT_SANDBOX_TREE=(%x+)")
          local args = {}
          for a in (sh.read_file("/proc/" .. pid .. "/cmdline") or ""):gmatch("([^%z]*)%z") do args[#args + 1] = a end
          if args[4] == "agent-sandbox" then gdir = args[8]:match(" (/.*)$") end
        end
        assert.is_truthy(gdir, "no guard given to the command")
        assert.is_truthy(sh.read_file(gdir .. "/" .. wrapper_mark), "the command is not registered with the guard")
        -- its deadline (timeout, grace, margin) from about 1 s before now, its grace, slack
        sh.run("sleep " .. 3 + 0.2 + 2 - 1 + 0.2 + 0.5)
        assert_gone(m)
        -- nothing more to keep: it removes its directory and ends (idle 1 s)
        local gmark = gdir:match("guard%.(%x+)$")
        gone_within(5, "the guard ended by itself", function() return #marked(gmark) == 0 end)
        assert.is_false(sh.run("test -e " .. gdir))
        assert.equal("running", listed()[id]) -- the sandbox itself was kept
        peer_lib.http("DELETE", peer.api .. "/sandboxes/" .. id, { ["X-API-Key"] = KEY })
      end)
    end)

    it("keeps head and tail of output over max_output_bytes, counting what it dropped", function()
      local s = assert(new { max_output_bytes = 1000 })
      local r = assert(s:exec("seq", { "1", "100000" }))
      local total = #table.concat((function() local t = {} for i = 1, 100000 do t[i] = i .. "\n" end return t end)())
      assert.is_true(r.truncated)
      assert.equal(total - 1000, r.dropped_bytes)
      assert.equal("1\n2\n", r.stdout:sub(1, 4))
      assert.equal("99999\n100000\n", r.stdout:sub(-13))
      assert.matches("%[%.%.%. " .. (total - 1000) .. " bytes dropped %.%.%.%]", r.stdout)
      s:dispose()
    end)

    it("runs background handles: read, write, close_stdin, wait, processes", function()
      local h = assert(sb:exec("cat", {}, { background = true }))
      assert.is_true(h.pid > 0)
      assert.is_true(h:running())
      assert.same({ h }, sb:processes())
      assert.equal("", h:read("stdout"))
      assert.is_true(h:write("ping\n"))
      assert.equal("ping\n", h:read("stdout", 5))
      h:close_stdin()
      local r = assert(h:wait(5))
      assert.same({ 0, "ping\n", false }, { r.exit_code, r.stdout, r.timed_out })
      assert.is_nil(h:read("stdout"))
      assert.is_false(h:running())
      assert.same({}, sb:processes())
    end)

    it("kills a background process (SIGTERM, grace, SIGKILL) and refuses more than max_background_processes", function()
      local s = assert(new { max_background_processes = 1, kill_grace = 0.3 })
      local h = assert(s:exec_shell("trap '' TERM; echo ready; sleep 30", { background = true, allow_shell = true }))
      assert.equal("ready\n", h:read("stdout", 5))
      assert.equal("EAGAIN", code_of(h:wait(0.1)))
      assert.equal("EBUSY", code_of(s:exec("true", {}, { background = true })))
      local t = clock()
      assert(h:kill())
      local r = h:wait()
      assert.same({ 137, "SIGKILL", "kill" }, { r.exit_code, r.signal, r.killed_by })
      assert.is_true(clock() - t < 3)
      s:dispose()
    end)

    it("calls on_stdout / on_exit from the loop, and poll pumps it", function()
      local chunks, exited = {}, nil
      local h = assert(sb:exec("sh", { "-c", "echo a; sleep 0.1; echo b" }, { background = true,
        on_stdout = function(d) chunks[#chunks + 1] = d end, on_exit = function(r) exited = r.exit_code end }))
      local deadline = clock() + 5
      while exited == nil and clock() < deadline do sb:poll(0.1) end
      assert.equal(0, exited)
      assert.equal("a\nb\n", table.concat(chunks))
      assert.is_true(h:wait().exit_code == 0)
    end)

    it("kills what is still running at dispose, and kills the sandbox", function()
      local h = assert(sb:exec("sleep", { "30" }, { background = true }))
      local id = sb.sandbox_id
      local t = clock()
      sb:dispose()
      sb = nil
      assert.is_true(clock() - t < 3)
      assert.is_true(h:wait().exit_code ~= 0)
      assert.is_nil(listed()[id])
    end)

    it("holds a stream for a reader who pauses longer than idle_timeout: not a dead link, nothing lost", function()
      local s = assert(new { idle_timeout = 1, max_output_bytes = "64KB" })
      local h = assert(s:exec("head", { "-c", "40000000", "/dev/zero" }, { background = true }))
      local got = #assert(h:read("stdout", 5))
      sh.run("sleep 2.5") -- the stream is held (the queue is full) for longer than its idle limit
      while true do
        local c = h:read("stdout", -1)
        if not c then break end
        got = got + #c
      end
      local r = h:wait()
      assert.same({ 0, nil, 0, 40000000 }, { r.exit_code, r.status_lost, r.read_dropped, got })
      s:dispose()
    end)

    it("ends a command whose engine stopped answering with the reason, within idle_timeout", function()
      local s = assert(new { idle_timeout = 1 })
      local h = assert(s:exec("sleep", { "30" }, { background = true }))
      sh.run("kill -STOP " .. peer.pid)
      local t = clock()
      local r = h:wait()
      sh.run("kill -CONT " .. peer.pid)
      assert.is_true(r.status_lost)
      assert.matches("no data for 1 s", r.error)
      assert.is_true(clock() - t < 1 + 5 * 1.5 + 3, "took " .. (clock() - t) .. " s")
      s:dispose()
    end)
  end)

  describe("grep and snapshot fetch the files they read together", function()
    local calls = envd_calls
    -- what came between two counts was one tar: one Start, no file read alone
    local function one_tar(before, after)
      assert.equal(before["/files"] or 0, after["/files"] or 0)
      assert.equal(1, after["/process.Process/Start"] - before["/process.Process/Start"])
    end
    local function tree(sb)
      assert(sb:exec_shell("mkdir -p d/e && for i in $(seq 300); do echo \"line $i\" > d/f$i.txt; done && " ..
        "echo 'line 7 again' > d/e/deep.txt && ln d/f7.txt d/e/hard.txt", { allow_shell = true }))
      local want = { "d/e/deep.txt", "d/e/hard.txt", "d/f7.txt" }
      for i = 70, 79 do want[#want + 1] = "d/f" .. i .. ".txt" end
      table.sort(want)
      return want
    end

    it("in one tar in the sandbox, not a read per file, with every name of a hard-linked file", function()
      local sb = assert(new {})
      local want = tree(sb)
      local before = calls(sb)
      local got = assert(sb:grep("line 7", { mode = "files" }))
      table.sort(got)
      assert.same(want, got)
      one_tar(before, calls(sb))
      sb:dispose()
    end)

    it("snapshot too: every file's bytes in one tar", function()
      local sb = assert(new {})
      tree(sb)
      local before = calls(sb)
      local snap = assert(sb:snapshot())
      local n = 0
      for _ in pairs(snap) do n = n + 1 end
      assert.same({ 302, "line 7\n", "line 7 again\n", "line 7\n" },
        { n, snap["d/f7.txt"], snap["d/e/deep.txt"], snap["d/e/hard.txt"] })
      one_tar(before, calls(sb))
      sb:dispose()
    end)

    it("a file at a time where the sandbox has no tar, with the same results", function()
      if not sh.run("test $(id -u) = 0") then pending("the peer fakes such a template with a mount: needs root") return end
      local sb = assert(new { template = "no-tar" })
      local want = tree(sb)
      local got = assert(sb:grep("line 7", { mode = "files" }))
      table.sort(got)
      assert.same(want, got)
      assert.equal(302, calls(sb)["/files"]) -- every file searched, read alone
      sb:dispose()
    end)
  end)

  describe("over a link that is cut", function()
    local ns, far
    setup(function()
      ns = peer_lib.netns()
      far = peer_lib.start(KEY, { netns = ns.name, host = ns.peer_ip })
    end)
    teardown(function()
      if far then far.stop() end
      if ns then ns.remove() end
    end)

    it("resumes a command's stream once the link is back (reattached by pid), saying output may be missing", function()
      local s = assert(sandbox.remote { api_url = far.api, api_key = KEY, envd_url = far.envd, idle_timeout = 1,
        allow_shell = true })
      local h = assert(s:exec_shell("sleep 3; echo after", { background = true }))
      ns.cut()
      sh.run("sleep 1.3")
      ns.mend()
      local r = h:wait()
      assert.same({ 0, "after\n", true }, { r.exit_code, r.stdout, r.output_incomplete })
      assert.is_nil(r.status_lost)
      s:dispose()
    end)
  end)

  describe("against a real engine (E2B_API_KEY)", function()
    local key = os.getenv("E2B_API_KEY")
    if not key then
      pending("E2B_API_KEY is not set: no real engine to run against (E2B_API_URL picks the engine)")
      return
    end
    local envd_url = os.getenv("E2B_ENVD_URL") -- where the engine's routing differs (self-hosted)
    it("creates a sandbox, writes, reads, runs a command, and kills it at dispose", function()
      local sb = assert(sandbox.remote { api_url = os.getenv("E2B_API_URL"), envd_url = envd_url, api_key = key,
        timeout = 120 })
      assert(sb:write_file("hello.txt", "hi"))
      assert.equal("hi", sb:read_file("hello.txt"))
      assert.equal("hi", assert(sb:exec("cat", { "hello.txt" })).stdout)
      sb:dispose()
    end)

    it("kills a command's whole tree there too, says ENOENT, and fetches a grep's files", function()
      local sb = assert(sandbox.remote { api_url = os.getenv("E2B_API_URL"), envd_url = envd_url, api_key = key,
        timeout = 120, allow_shell = true, kill_grace = 0.5 })
      -- processes in the sandbox whose command line matches a pattern (that does not match itself)
      local function alive(pat)
        local r = assert(sb:exec_shell("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"
          .. " | grep -c -- '" .. pat .. "' || true"))
        return tonumber(r.stdout)
      end
      local r = assert(sb:exec_shell("(setsid sleep 1007.25 >/dev/null 2>&1 &); echo started"))
      assert.equal("started\n", r.stdout)
      assert.equal(0, alive("[1]007.25"))
      r = assert(sb:exec_shell("sleep 1007.5 & setsid sleep 1007.5 & wait", { timeout = 1 }))
      assert.is_true(r.timed_out)
      assert.equal(0, alive("[1]007.5"))
      assert.equal("ENOENT", code_of(sb:exec("no-such-command-xyz")))
      assert(sb:exec_shell("mkdir -p t && for i in $(seq 50); do echo \"n $i\" > t/f$i.txt; done"))
      assert.equal(11, #assert(sb:grep("n 4", { path = "t", mode = "files" }))) -- n 4 and n 40 to n 49
      sb:dispose()
    end)
  end)
end)
