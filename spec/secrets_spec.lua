-- Secrets that never enter the sandbox (issue 33, its plain-HTTP part):
-- the proxy sets a secret's header on requests to its host, replacing what
-- the command sent; the command sees neither the value nor a way to it.
-- HTTPS to a host with a secret is refused with the reason (interception
-- is not built yet), never sent without it or downgraded.
local sandbox = require "sandbox"
local backends = require "support.backends"
local httpd = require "support.httpd"
local sh = require "support.sh"

local confine = not os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile
local SECRET = "Bearer sk-test-9f8e7d6c5b4a-never-inside"
local BIN = (os.getenv("PWD") or ".") .. "/bin/agent-sandbox"

local function new(A, B, extra)
  local o = { base_dir = backends.tmpdir("secrets"), allow_shell = true, kill_grace = 0.3, confine = confine,
              allowed_hosts = { "127.0.0.1:" .. A.port, "127.0.0.1:" .. B.port },
              secrets = { { host = "127.0.0.1:" .. A.port, header = "Authorization", value = SECRET } } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return assert(sandbox.container(o))
end

describe("secrets", function()
  local A, B
  lazy_setup(function() A, B = httpd.start(), httpd.start() end)
  lazy_teardown(function() httpd.stop_all() end)

  it("are set by the proxy on plain-HTTP requests to their host, replacing the command's own header", function()
    local got = {}
    local sb = new(A, B, { audit = function(e) got[#got + 1] = e end })
    local r = assert(sb:exec_shell("curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer forged' "
      .. A.url "/hello"))
    assert.equal("200", r.stdout)
    local py = assert(sb:exec("python3", { "-c", "import urllib.request as u; print(u.urlopen('"
      .. A.url "/hello" .. "').status)" }))
    assert.equal("200\n", py.stdout)
    sb:dispose()
    local heads = A.heads()
    local n = select(2, heads:gsub("Authorization: " .. SECRET:gsub("%-", "%%-"), ""))
    assert.equal(2, n, heads) -- curl's and Python's, each with the secret
    assert.is_nil(heads:find("forged", 1, true), "the command's own header went upstream")
    assert.equal(2, select(2, heads:gsub("\nAuthorization:", ""))) -- one a request: replaced, not added
    -- the audit trail names the host and the header, never the value
    local injected = 0
    for _, e in ipairs(got) do
      if e.kind == "secret_injected" then
        injected = injected + 1
        assert.same({ "127.0.0.1", A.port, "Authorization" }, { e.host, e.port, e.header })
      end
      for _, v in pairs(e) do
        if type(v) == "string" then assert.is_nil(v:find("sk-test", 1, true)) end
      end
    end
    assert.equal(2, injected)
    assert.is_nil(require("sandbox.json").encode(got):find("sk-test", 1, true))
  end)

  it("go to no other host, not even an allowed one", function()
    local sb = new(A, B)
    assert.equal("200", assert(sb:exec_shell("curl -s -o /dev/null -w '%{http_code}' " .. B.url "/hello")).stdout)
    sb:dispose()
    assert.is_nil(B.heads():find("sk-test", 1, true))
  end)

  it("never reach anything the command can read: environment, files, /proc, process memory", function()
    local sb = new(A, B)
    assert(sb:exec_shell("curl -s " .. A.url "/hello" .. " > got.txt"))
    -- every process the command can see, its environment, command line and readable memory, and
    -- every file under the root and /tmp: the secret's bytes nowhere
    local scan = [[
import os, sys
needle = sys.argv[1].encode()
hits = []
me = str(os.getpid())  # the scanner holds the needle itself: every other process is searched
for pid in [p for p in os.listdir('/proc') if p.isdigit() and p != me]:
    for part in ('environ', 'cmdline'):
        try:
            if needle in open('/proc/%s/%s' % (pid, part), 'rb').read(): hits.append(pid + ' ' + part)
        except OSError: pass
    try:
        maps = open('/proc/%s/maps' % pid).read().splitlines()
        mem = open('/proc/%s/mem' % pid, 'rb', 0)
    except OSError: continue
    for line in maps:
        lo, hi = [int(x, 16) for x in line.split()[0].split('-')]
        if 'r' not in line.split()[1] or hi - lo > 1 << 28: continue
        try:
            mem.seek(lo)
            if needle in mem.read(hi - lo): hits.append(pid + ' mem ' + line)
        except (OSError, ValueError, OverflowError): pass
for top in ('.', '/tmp'):
    for d, _, fs in os.walk(top):
        for f in fs:
            try:
                if needle in open(os.path.join(d, f), 'rb').read(): hits.append(os.path.join(d, f))
            except OSError: pass
print(len(hits)); print('\n'.join(hits))
]]
    assert(sb:write_file("scan.py", scan))
    -- the needle is passed split, so the scanner's own argv does not hold it whole
    local r = assert(sb:exec_shell([[exec python3 scan.py "$(printf '%s%s' 'sk-test-9f8e7d' '6c5b4a-never-inside')"]]))
    assert.equal("0\n\n", r.stdout, r.stdout .. r.stderr)
    local env = assert(sb:exec("env"))
    assert.is_nil(env.stdout:find("sk-test", 1, true))
    sb:dispose()
  end)

  it("refuse HTTPS (CONNECT) to their host with the reason: never sent without the secret", function()
    local sb = new(A, B)
    local r = assert(sb:exec_shell("curl -s -p -o /dev/null -w '%{http_connect}' " .. A.url "/hello"))
    assert.equal("403", r.stdout)
    local why = assert(sb:exec_shell("curl -s -p " .. A.url "/hello" .. " 2>&1; curl -s -x \"$HTTP_PROXY\" "
      .. "-X CONNECT --request-target 127.0.0.1:" .. A.port .. " http://127.0.0.1:" .. A.port .. "/ -D -"))
    assert.truthy(why.stdout:find("X-Sandbox-Error: secret-needs-plain-http", 1, true), why.stdout)
    -- a host without a secret keeps its tunnel
    assert.equal("200", assert(sb:exec_shell("curl -s -p -o /dev/null -w '%{http_connect}' " .. B.url "/hello")).stdout)
    sb:dispose()
  end)

  it("are listed in sb.confinement.secrets and the created event by host and header only", function()
    local created
    local sb = new(A, B, { audit = function(e) if e.kind == "created" then created = e end end })
    assert.same({ { host = "127.0.0.1:" .. A.port, header = "Authorization" } }, sb.confinement.secrets)
    assert.same({ { host = "127.0.0.1:" .. A.port, header = "Authorization" } }, created.policy.secrets)
    sb:dispose()
  end)

  it("refuse bad input at construction with a clear error", function()
    local base = backends.tmpdir("secrets-bad")
    local allowed = { "127.0.0.1:" .. B.port, "*.example.org" }
    for _, c in ipairs {
      { { host = "127.0.0.1:" .. A.port, header = "Authorization", value = "x" }, "is not in allowed_hosts" },
      { { host = "127.0.0.1:" .. B.port, header = "Authorization", value = "" }, "must be a non%-empty string" },
      { { host = "127.0.0.1:" .. B.port, header = "X-Key", value = "a\r\nInjected: 1" }, "must not contain CR, LF" },
      { { host = "127.0.0.1:" .. B.port, header = "X:Key", value = "x" }, "must be a header name" },
      { { host = "127.0.0.1:" .. B.port, header = "X-Key\r\n", value = "x" }, "must be a header name" },
      { { host = "127.0.0.1:" .. B.port, header = "Host", value = "x" }, "frames the request" },
      { { host = "127.0.0.1:" .. B.port, header = "X-Key", value_from_env = "SANDBOX_SPEC_NO_SUCH_VAR" },
        "the host's environment has no SANDBOX_SPEC_NO_SUCH_VAR" },
      { { host = "127.0.0.1:" .. B.port, header = "X-Key", value = "x", value_from_env = "HOME" }, "exactly one of" },
      { { host = "*", header = "X-Key", value = "x" }, "every host" },
      { { host = "not a host", header = "X-Key", value = "x" }, "is not a host" },
      { { host = "127.0.0.1:" .. B.port, header = "X-Key", value = "x", extra = 1 }, "unknown key 'extra'" },
    } do
      local ok, err = pcall(sandbox.container, { base_dir = base, confine = confine, allowed_hosts = allowed,
                                                 secrets = { c[1] } })
      assert.is_false(ok, c[2])
      assert.matches(c[2], err)
      assert.is_nil(tostring(err):find("a\r\nInjected", 1, true))
    end
    local ok, err = pcall(sandbox.container, { base_dir = base, confine = confine,
      secrets = { { host = "example.org", header = "X-Key", value = "x" } } })
    assert.is_false(ok)
    assert.matches("secrets need allowed_hosts", err)
    -- a VirtualSandbox runs no commands: no proxy, no such option
    assert.has_error(function() sandbox.virtual { secrets = {} } end)
  end)

  it("take value_from_env from the host's environment, and --secret HOST:HEADER=ENVVAR on the command line", function()
    local dir = backends.tmpdir("secrets-env")
    local script = ([[SPEC_SECRET_TOKEN='%s' %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = assert(require("sandbox").container { base_dir = "%s", confine = %s, allowed_hosts = { "127.0.0.1:%d" },
        secrets = { { host = "127.0.0.1:%d", header = "X-Api-Key", value_from_env = "SPEC_SECRET_TOKEN" } } })
      print(s:exec("env").stdout:find("SPEC_SECRET", 1, true))
      print(s:exec("curl", { "-s", "-o", "/dev/null", "-w", "%%{http_code}", "http://127.0.0.1:%d/hello" }).stdout)
      s:dispose()']]):format("from-env-" .. SECRET:sub(8), sh.lua(), sh.build, dir, tostring(confine), A.port, A.port,
      A.port)
    local ok, out = sh.run(script)
    assert.is_true(ok, out)
    assert.equal("nil\n200\n", out)
    assert.matches("X%-Api%-Key: from%-env%-sk%-test", A.heads())
    -- the command line: the value from the environment, never from the flag's text
    local cli = ("cd %s && SPEC_SECRET_TOKEN='cli-%s' %s %s run --allow-host 127.0.0.1:%d --secret 127.0.0.1:%d:X-Cli-Key=SPEC_SECRET_TOKEN -- "
      .. "curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/hello"):format(sh.quote(dir), SECRET:sub(8),
      sh.lua(false), sh.quote(BIN), A.port, A.port, A.port)
    local cok, cout = sh.run(cli)
    assert.is_true(cok, cout)
    assert.equal("200", cout)
    assert.matches("X%-Cli%-Key: cli%-sk%-test", A.heads())
    local bad_ok, bad = sh.run(("%s %s run --secret 'example.org:X=not an env name' -- true"):format(sh.lua(false),
      sh.quote(BIN)))
    assert.is_false(bad_ok)
    assert.matches("expected HOST:HEADER=ENVVAR", bad)
  end)
end)
