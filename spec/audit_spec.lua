-- The audit trail (SPEC §17): one event stream from every layer, the
-- audit_log hash chain, sandbox.audit.verify and `agent-sandbox audit`.
-- Events come from real activity: files, a refused escape, commands in the
-- foreground and background, a timeout, the proxy allowing and refusing,
-- an approval refused, tool calls. (The MCP server's tool calls through
-- the SDK's client: spec/mcp_spec.lua.)
local sandbox = require "sandbox"
local audit = require "sandbox.audit"
local json = require "sandbox.json"
local backends = require "support.backends"
local httpd = require "support.httpd"
local sh = require "support.sh"
local hostcan = require "support.host"

local confine = not os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile
local BIN = (os.getenv("PWD") or ".") .. "/bin/agent-sandbox"

local function container(opts)
  opts.base_dir = opts.base_dir or backends.tmpdir("audit")
  opts.kill_grace = opts.kill_grace or 0.3
  opts.confine = confine
  return assert(sandbox.container(opts))
end

local function log_path() return backends.tmpdir("auditlog") .. "/audit.log" end

local function read(path) return sh.read_file(path) end

local function lines_of(path)
  local t = {}
  for l in read(path):gmatch("([^\n]*)\n") do t[#t + 1] = l end
  return t
end

local function write(path, lines)
  local f = assert(io.open(path, "wb"))
  f:write(table.concat(lines, "\n"), #lines > 0 and "\n" or "")
  f:close()
end

local function events_of(path)
  local t = {}
  for _, l in ipairs(lines_of(path)) do t[#t + 1] = json.decode(l) end
  return t
end

-- The events of a kind (and matching fields) among a list.
local function find(events, kind, fields)
  local out = {}
  for _, e in ipairs(events) do
    local ok = e.kind == kind
    for k, v in pairs(fields or {}) do ok = ok and e[k] == v end
    if ok then out[#out + 1] = e end
  end
  return out
end

local SECRET = "s3cr3t-VALUE-that-must-not-leak"

describe("the audit stream", function()
  local A, B
  lazy_setup(function() A, B = httpd.start(), httpd.start() end)
  lazy_teardown(function() httpd.stop_all() end)

  it("reports every layer's events in order, to the callback and the log alike", function()
    -- the proxy and the gates are reached through the commands' network namespace
    if not hostcan.can("the audit of every layer, the network's included", hostcan.layers()) then return end
    local got, path = {}, log_path()
    local sb = container {
      audit = function(e) got[#got + 1] = e end, audit_log = path,
      env = { API_TOKEN = SECRET }, allowed_hosts = { "127.0.0.1:" .. A.port }, allow_shell = true,
    }
    -- files, and a refused escape
    assert(sb:write_file("notes.txt", SECRET .. "\n"))
    assert(sb:read_file("notes.txt"))
    assert.is_nil(sb:read_file("../../etc/passwd"))
    -- a foreground command that prints the secret, one with an extra variable
    local r = assert(sb:exec_shell('echo "$API_TOKEN"; cat notes.txt', { env = { EXTRA = SECRET } }))
    assert.truthy(r.stdout:find(SECRET, 1, true))
    -- a timeout, a background command killed by h:kill, one killed by dispose
    assert(sb:exec("sleep", { "5" }, { timeout = 0.2 }))
    local h = assert(sb:exec("sleep", { "5" }, { background = true }))
    assert(h:kill("KILL"))
    h:wait()
    assert(sb:exec("sleep", { "5" }, { background = true }))
    -- the proxy: one host allowed, one refused
    local ok = assert(sb:exec_shell("curl -s -m 5 " .. A.url "/hello"))
    assert.matches("hello", ok.stdout)
    local no = assert(sb:exec_shell("curl -s -m 5 " .. B.url "/hello"))
    assert.matches("allowed_hosts", no.stdout)
    assert(sb:http_get(A.url "/hello"))
    -- tools: a refused approval, a call that works, one that fails
    local tools = sb:tools { approve = function() return "not now" end }
    assert.is_true(sandbox.tools.dispatch(tools, { name = "delete_file", arguments = { path = "notes.txt" } }).is_error)
    assert.is_false(sandbox.tools.dispatch(tools, { name = "read_file", arguments = { path = "notes.txt" } }).is_error)
    assert.is_true(sandbox.tools.dispatch(tools, { name = "read_file", arguments = { path = "nope" } }).is_error)
    -- and answered later, through dispatch with on_done: granted this time
    local later = sb:tools { approve = function(_, reply) reply(true) return sandbox.tools.PENDING end }
    local done
    sandbox.tools.dispatch(later, { name = "write_file", arguments = { path = "b.txt", content = "b" } },
      { on_done = function(x) done = x end })
    while not done do sb:poll(0.02) end
    assert.is_false(done.is_error)
    sb:dispose()

    local logged = events_of(path)
    assert.equal("audit_start", logged[1].kind)
    table.remove(logged, 1)
    assert.equal(#got, #logged)
    for i, e in ipairs(got) do
      assert.equal(i, e.seq)
      assert.equal(e.seq, logged[i].seq)
      assert.equal(e.kind, logged[i].kind)
      assert.is_number(e.time)
    end
    local created = got[1]
    assert.equal("created", created.kind)
    assert.equal("container", created.backend)
    assert.equal(sb.cwd, created.root)
    assert.same({ "API_TOKEN" }, created.policy.env_names)
    assert.same({ "127.0.0.1:" .. A.port }, created.policy.allowed_hosts)
    assert.is_table(created.confinement.enforced)
    assert.equal("disposed", got[#got].kind)

    assert.equal(1, #find(got, "file", { op = "write_file", path = "notes.txt", ok = true, size = #SECRET + 1 }))
    local esc = find(got, "file", { op = "read_file", ok = false })
    assert.equal("EESCAPE", esc[1].code)

    local starts = find(got, "command_start")
    assert.same({ "/bin/sh", "-c", 'echo "$API_TOKEN"; cat notes.txt' }, starts[1].argv)
    assert.same({ "EXTRA" }, starts[1].env_names)
    assert.is_false(starts[1].background)
    assert.is_true(starts[3].background)
    local first_end = find(got, "command_end", { id = starts[1].id })[1]
    assert.equal(0, first_end.exit_code)
    assert.equal(2 * (#SECRET + 1), first_end.output_bytes)
    local timed = find(got, "command_end", { id = starts[2].id })[1]
    assert.same({ "timeout" }, timed.limits)
    assert.equal("timeout", find(got, "command_killed", { id = starts[2].id })[1].by)
    assert.equal("kill", find(got, "command_killed", { id = starts[3].id })[1].by)
    assert.equal("dispose", find(got, "command_killed", { id = starts[4].id })[1].by)

    local allowed = find(got, "net", { allowed = true, port = A.port })
    assert.equal(1, #allowed)
    assert.equal("proxy", allowed[1].server)
    assert.equal("GET", allowed[1].method)
    assert.equal("allowed_hosts", allowed[1].rule)
    local refused = find(got, "net", { allowed = false, port = B.port })
    assert.equal(1, #refused)
    assert.matches("not in allowed_hosts", refused[1].rule)
    assert.equal(403, refused[1].status)
    local ended = find(got, "net_end", { port = A.port })
    assert.equal(1, #ended)
    assert.is_true(ended[1].bytes_up > 0 and ended[1].bytes_down > 0)
    assert.equal(0, #B.requests(), "the refused request never reached its server")
    local get = find(got, "http_get")[1]
    assert.equal(200, get.status)
    assert.is_true(get.ok)

    local approvals = find(got, "approval")
    assert.same({ "asked", "refused", "asked", "granted" }, { approvals[1].decision, approvals[2].decision,
      approvals[3].decision, approvals[4].decision })
    assert.equal("notes.txt", approvals[1].path)
    assert.equal("b.txt", approvals[3].path)
    local calls = find(got, "tool_call")
    assert.same({ "delete_file", "read_file", "read_file", "write_file" },
      { calls[1].tool, calls[2].tool, calls[3].tool, calls[4].tool })
    assert.same({ false, true, false, true }, { calls[1].ok, calls[2].ok, calls[3].ok, calls[4].ok })

    -- the secret (a file's content, an environment value, a command's output) is nowhere
    assert.is_nil(read(path):find(SECRET, 1, true))
    assert.is_nil(json.encode(got):find(SECRET, 1, true))
    assert.is_true((audit.verify(path)))
  end)

  it("records an exposed port's refusals (no token) and a command its port's TTL killed", function()
    if not hostcan.can("the audit of an exposed port's refusals", hostcan.layers()) then return end
    local got = {}
    local sb = container { audit = function(e) got[#got + 1] = e end, allow_shell = true }
    assert(sh.run(("cp %s/test/httpd %s/httpd"):format(sh.build, sb.cwd)))
    local ttl = sandbox.capabilities().pidfd and 1 or nil -- port_ttl needs pidfd (valgrind 3.19 has none)
    if not ttl then hostcan.note("a command killed by its port's TTL, audited", "no pidfd here") end
    local h = assert(sb:exec("./httpd", { "log.txt" }, { background = true, expose_port = 0, port_ttl = ttl,
                                                          port_auth = { type = "token" } }))
    local deadline = require("sandbox.core").clock() + 10
    local code
    repeat -- refused, token or not, until the server inside is up; then refused for want of one
      code = httpd.curl(h.url .. "hello")
      sb:poll(0.05)
    until code == 401 or require("sandbox.core").clock() > deadline
    assert.equal(401, code)
    if ttl then
      local r = assert(h:wait(10)) -- idle past its TTL: killed
      assert.equal("port_ttl", r.killed_by)
    end
    sb:poll(0)
    local refused = find(got, "net", { server = "port", allowed = false, status = 401 })
    assert.is_true(#refused >= 1)
    assert.equal("GET", refused[1].method)
    sb:dispose()
    assert.equal(ttl and "port_ttl" or "dispose", find(got, "command_killed", { id = h.id })[1].by)
  end)

  it("is the same on a VirtualSandbox, and a callback alone needs no log", function()
    local got = {}
    local sb = sandbox.virtual { audit = function(e) got[#got + 1] = e end }
    assert(sb:write_file("a.txt", "x"))
    local tools = sb:tools()
    assert.is_false(sandbox.tools.dispatch(tools, { name = "file_exists", arguments = { path = "a.txt" } }).is_error)
    sb:dispose()
    local kinds = {}
    for _, e in ipairs(got) do kinds[#kinds + 1] = e.kind end
    assert.same({ "created", "file", "file", "tool_call", "disposed" }, kinds)
    assert.equal("write_file", got[2].op) -- the old file entries keep their fields
    assert.same({ "code", "kind", "ok", "op", "path", "seq", "size", "time" }, (function()
      local k = {}
      for name in pairs(got[2]) do k[#k + 1] = name end
      k[#k + 1] = "code" -- present on refusals only
      table.sort(k)
      return k
    end)())
  end)

  it("hears the calls a tool makes in a forked copy (search), numbered in the host", function()
    local got = {}
    local sb = container { audit = function(e) got[#got + 1] = e end }
    assert(sb:write_file("src/a.lua", "local x = 1\n"))
    local tools = sb:tools()
    local r
    sandbox.tools.dispatch(tools, { name = "search_code", arguments = { pattern = "local" } },
      { on_done = function(x) r = x end })
    while not r do sb:poll(0.05) end
    assert.is_false(r.is_error)
    sb:dispose()
    local grep = find(got, "file", { op = "grep" })
    assert.equal(1, #grep)
    for i, e in ipairs(got) do assert.equal(i, e.seq) end
  end)
end)

describe("audit_log", function()
  local function sample()
    local path = log_path()
    local sb = sandbox.virtual { audit_log = path }
    assert(sb:write_file("a.txt", "hello"))
    assert(sb:read_file("a.txt"))
    assert.is_nil(sb:read_file("../x"))
    sb:dispose()
    return path
  end

  it("is verified as written, and a second sandbox continues its chain", function()
    local path = sample()
    local ok, n = audit.verify(path)
    assert.is_true(ok)
    assert.equal(5, n)
    local sb = sandbox.virtual { audit_log = path }
    sb:dispose()
    ok, n = audit.verify(path)
    assert.is_true(ok)
    assert.equal(7, n)
    assert.equal(1, select(2, read(path):gsub('"audit_start"', "")))
  end)

  it("refuses every single-line edit, insertion and deletion", function()
    local path = sample()
    local orig = lines_of(path)
    for i = 1, #orig do
      local cases = {
        edit = function(t) t[i] = t[i]:gsub('"time":', '"time": ') end,
        insert = function(t) table.insert(t, i + 1, t[i]) end,
        delete = function(t) table.remove(t, i) end,
        edit_value = function(t) t[i] = t[i]:gsub('"seq":(%d+)', function(d) return '"seq":' .. (d + 1) end) end,
      }
      for what, change in pairs(cases) do
        local t = { (table.unpack or unpack)(orig) }
        change(t)
        write(path, t)
        local ok, why = audit.verify(path)
        assert.is_nil(ok, what .. " of line " .. i .. " was not noticed")
        assert.matches("^line %d+: ", why)
      end
    end
    write(path, orig)
    assert.is_true((audit.verify(path)))
  end)

  it("refuses a log cut short, a missing head, and a file that is no log", function()
    local path = sample()
    local data = read(path)
    write(path, { data:sub(1, -10) })
    assert.matches("not a JSON object", select(2, audit.verify(path)))
    local f = assert(io.open(path, "wb"))
    f:write(data)
    f:close()
    os.remove(path .. ".head")
    assert.matches("head file .* is missing", select(2, audit.verify(path)))
    assert.is_true((audit.verify(path, { head = false })))
    -- a later sandbox refuses to go on with a log whose end is in doubt
    local sb, msg = sandbox.virtual { audit_log = path }
    assert.is_nil(sb)
    assert.matches("does not end where", msg)
    write(path, { "just some text" })
    sb, msg = sandbox.virtual { audit_log = path }
    assert.is_nil(sb)
    assert.matches("not a sandbox audit log", msg)
    assert.equal("just some text\n", read(path), "the file was not touched")
  end)

  it("is an error at construction when it cannot be written, or is in use", function()
    local sb, msg, code = sandbox.virtual { audit_log = "/nonexistent-dir/audit.log" }
    assert.is_nil(sb)
    assert.matches("cannot open /nonexistent%-dir/audit.log", msg)
    assert.equal("ENOENT", code)
    local dir = backends.tmpdir("auditdir")
    sb, msg, code = sandbox.virtual { audit_log = dir }
    assert.is_nil(sb)
    assert.equal("EISDIR", code)
    assert.matches("[Ii]s a directory", msg)
    local path = log_path()
    local first = assert(sandbox.virtual { audit_log = path })
    sb, msg, code = sandbox.virtual { audit_log = path }
    assert.is_nil(sb)
    assert.equal("EBUSY", code)
    assert.matches("in use by another sandbox", msg)
    first:dispose()
    assert(sandbox.virtual { audit_log = path }):dispose()
  end)

  it("is an error at construction when its first line cannot be written (a full disk)", function()
    local sb, msg, code = sandbox.virtual { audit_log = "/dev/full" }
    assert.is_nil(sb)
    assert.equal("ENOSPC", code)
    assert.matches("cannot write /dev/full: No space left on device", msg)
  end)

  it("reports a file that stops growing through the callback as audit_error, and loses no operation", function()
    -- a file-size limit (SIGXFSZ ignored: writes fail with EFBIG), in a child
    local dir = backends.tmpdir("auditfull")
    local script = ([[(trap '' XFSZ; ulimit -f 8; exec %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local errors = {}
      local sb = assert(require("sandbox").virtual { audit_log = "%s/a.log",
        audit = function(e) if e.kind == "audit_error" then errors[#errors + 1] = e.message end end })
      for i = 1, 400 do assert(sb:write_file("f" .. i, "x")) end
      for i = 1, 400 do assert(sb:read_file("f" .. i) == "x") end
      local st, t0 = sb:audit_state(), os.time()
      while not st.error and os.time() - t0 < 4 do sb:poll(0.05) st = sb:audit_state() end
      sb:dispose()
      print(#errors, errors[1], st.buffered > 0, st.error)')]]):format(sh.lua(), sh.build, dir)
    local ok, out = sh.run(script)
    assert.is_true(ok, out)
    assert.matches("^1\taudit_log: cannot write .*/a.log: File too large\ttrue\taudit_log: cannot write", out)
    -- what reached the file is a chain cut where the file stopped growing: verify says so
    local vok, why = audit.verify(dir .. "/a.log")
    assert.is_nil(vok)
    assert.matches("the last line is cut short", why)
  end)

  it("is written by its own thread: at a command's end, within a second when idle, all of it at dispose", function()
    local path = log_path()
    local sb = container { audit_log = path }
    local function lines_within(n, seconds)
      local deadline = require("sandbox.core").clock() + seconds
      while #lines_of(path) < n and require("sandbox.core").clock() < deadline do sh.run("sleep 0.02") end
      return #lines_of(path)
    end
    local before = #lines_of(path)
    assert(sb:exec("true"))
    assert.is_true(lines_within(before + 2, 0.9) >= before + 2, "the command's start and end")
    local n = #lines_of(path)
    assert(sb:write_file("b", "2")) -- and then no call at all: the writer's timer
    assert.equal(n + 1, lines_within(n + 1, 1.5))
    for i = 1, 100 do assert(sb:write_file("c" .. i, "3")) end
    sb:dispose()
    assert.equal(n + 102, #lines_of(path))
    assert.equal("disposed", events_of(path)[n + 102].kind)
  end)
end)

describe("agent-sandbox audit", function()
  it("verify says intact (exit 0) or why not (exit 1); show prints a timeline", function()
    local dir = backends.tmpdir("auditcli")
    local path = dir .. "/run.log"
    local ok = sh.run(("cd %s && %s %s run --audit-log %s -- sh -c 'echo hi > out.txt'"):format(sh.quote(dir),
      sh.lua(false), sh.quote(BIN), sh.quote(path)))
    assert.is_true(ok)
    local vok, out = sh.run(("%s %s audit verify %s"):format(sh.lua(false), sh.quote(BIN), sh.quote(path)))
    assert.is_true(vok)
    assert.matches("intact, 4 line", out)
    local sok, show = sh.run(("%s %s audit show %s"):format(sh.lua(false), sh.quote(BIN), sh.quote(path)))
    assert.is_true(sok)
    assert.matches("created%s+container sandbox at", show)
    assert.matches("command_start%s+#1 %[sh %-c echo hi > out.txt%]", show)
    assert.matches("command_end%s+#1 exit 0", show)
    assert.matches("disposed", show)
    local t = lines_of(path)
    table.remove(t, 3)
    write(path, t)
    local bad, why = sh.run(("%s %s audit verify %s 2>&1"):format(sh.lua(false), sh.quote(BIN), sh.quote(path)))
    assert.is_false(bad)
    assert.matches("line 3: its prev is not the hash of line 2", why)
  end)
end)
