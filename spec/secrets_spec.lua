-- Secrets that never enter the sandbox (issue 33): the proxy sets a
-- secret's header on requests to its host, replacing what the
-- command sent; the command sees neither the value nor a way to it.
-- HTTPS to a host with a secret is intercepted with the sandbox's own
-- authority (verified upstream; a failure is a 502 with the reason), never
-- sent without it or downgraded.
local sandbox = require "sandbox"
local backends = require "support.backends"
local httpd = require "support.httpd"
local sh = require "support.sh"
local tls = require "support.tls_peer"

local confine = not os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile
local without_layers = require("support.host").without_layers("the secrets proxy is reached through the commands' network namespace")
if without_layers then
  describe("secrets", function() pending(without_layers) end)
  return
end
local SECRET = "Bearer sk-test-9f8e7d6c5b4a-never-inside"
local BIN = (os.getenv("PWD") or ".") .. "/bin/agent-sandbox"

local function new(A, B, extra, make)
  local o = { base_dir = backends.tmpdir("secrets"), allow_shell = true, kill_grace = 0.3, confine = confine,
              allowed_hosts = { "127.0.0.1:" .. A.port, "127.0.0.1:" .. B.port },
              secrets = { { host = "127.0.0.1:" .. A.port, header = "Authorization", value = SECRET } } }
  for k, v in pairs(extra or {}) do o[k] = v end
  return assert((make or sandbox.container)(o))
end

-- Every process the command can see (its environment, command line and
-- readable memory) and every file under the root and /tmp: the secret's
-- bytes nowhere, and not in the command's environment.
local function assert_nowhere(sb)
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
  if confine then -- and no core dump of anything: the hard limit is 0
    assert.equal("0\n", assert(sb:exec_shell("ulimit -H -c")).stdout)
  end
end

-- The audit trail's secret_injected events, each naming the host and the
-- header, no event holding the value.
local function injections(got, port)
  local n = 0
  for _, e in ipairs(got) do
    if e.kind == "secret_injected" then
      n = n + 1
      assert.same({ "127.0.0.1", port, "Authorization" }, { e.host, e.port, e.header })
    end
    for _, v in pairs(e) do
      if type(v) == "string" then assert.is_nil(v:find("sk-test", 1, true)) end
    end
  end
  return n
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
    assert.equal(2, injections(got, A.port))
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
    assert_nowhere(sb)
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
    -- an upstream_ca that cannot be loaded: nil and why (the file), no sandbox
    local usb, uerr, ucode = sandbox.container { base_dir = base, confine = confine, allowed_hosts = allowed,
      secrets = { { host = "127.0.0.1:" .. B.port, header = "X-Key", value = "x" } }, upstream_ca = base .. "/none.pem" }
    assert.is_nil(usb)
    assert.matches("upstream_ca: cannot load it: .*No such file", uerr)
    assert.equal("EIO", ucode)
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

describe("secrets over HTTPS", function()
  -- A requires the secret; B (no secret) and C (a certificate no one signed) record what reached them.
  local certs, repo, A, B, C
  lazy_setup(function()
    certs, repo = tls.certs(), tls.git_repo()
    A = tls.start { cert = certs.cert, key = certs.key, expect = SECRET, git = repo.root }
    B = tls.start { cert = certs.cert, key = certs.key }
    C = tls.start { cert = certs.self_cert, key = certs.self_key }
  end)
  lazy_teardown(function() tls.stop_all() end)

  local function new_tls(extra, make)
    local o = { upstream_ca = certs.ca, read_paths = { (os.getenv("PWD") or ".") .. "/build/npm" },
                allowed_hosts = { "127.0.0.1:" .. A.port, "127.0.0.1:" .. B.port, "127.0.0.1:" .. C.port },
                secrets = { { host = "127.0.0.1:" .. A.port, header = "Authorization", value = SECRET },
                            { host = "127.0.0.1:" .. C.port, header = "Authorization", value = SECRET } } }
    for k, v in pairs(extra or {}) do o[k] = v end
    return new(A, B, o, make)
  end

  it("reach a host that requires the header from curl, Python, git and Node's fetch; the command's own is replaced",
    function()
      local got = {}
      local sb = new_tls { audit = function(e) got[#got + 1] = e end }
      local curl = assert(sb:exec_shell("curl -sS -w ' %{http_code}' -H 'Authorization: Bearer forged' "
        .. A.url "/curl"))
      assert.equal('{"auth": true, "path": "/curl", "method": "GET", "body_bytes": 0} 200', curl.stdout, curl.stderr)
      local py = assert(sb:exec("python3", { "-c", "import urllib.request as u; print(u.urlopen('" .. A.url "/py"
        .. "').status)" }))
      assert.equal("200\n", py.stdout, py.stderr)
      local git = assert(sb:exec_shell("GIT_TERMINAL_PROMPT=0 git ls-remote " .. A.url "/git/repo.git" .. " HEAD"))
      assert.equal(repo.head .. "\tHEAD\n", git.stdout, git.stderr)
      local node = assert(sb:exec("node", { "--no-warnings", "-e", ([[
        const u = require(%q)
        u.fetch(%q, { dispatcher: new u.EnvHttpProxyAgent() })
          .then(r => console.log(r.status)).catch(e => { console.log(String(e.cause || e)); process.exit(1) })]]):format(
        (os.getenv("PWD") or ".") .. "/build/npm/node_modules/undici-node20", A.url "/node") }))
      assert.equal("200\n", node.stdout, node.stderr)
      sb:dispose()
      local heads = A.heads()
      assert.is_nil(heads:find("forged", 1, true), "the command's own header went upstream")
      local requests = select(2, heads:gsub("\nAuthorization: ", ""))
      assert.equal(requests, select(2, heads:gsub("\nAuthorization: " .. SECRET:gsub("%-", "%%-"), "")))
      assert.is_true(requests >= 4, heads) -- curl, Python, git, Node
      assert.equal(requests, injections(got, A.port))
      assert.is_nil(require("sandbox.json").encode(got):find("sk-test", 1, true))
    end)

  it("are presented with the sandbox's own authority; a host without a secret keeps its tunnel and its certificate",
    function()
      -- trusting only the test root: B's real certificate passes, A's (the proxy's leaf) does not
      local sb = new_tls { read_paths = { certs.dir } }
      local only_root = "curl -s -o /dev/null -w '%{http_code}' --cacert " .. sh.quote(certs.ca) .. " "
      assert.equal("200", assert(sb:exec_shell(only_root .. B.url "/b")).stdout)
      assert.equal("000", assert(sb:exec_shell(only_root .. A.url "/a")).stdout)
      local issuer = assert(sb:exec_shell("echo | openssl s_client -proxy \"${HTTPS_PROXY#http://}\" -connect 127.0.0.1:"
        .. A.port .. " 2>/dev/null | openssl x509 -noout -issuer"))
      assert.matches("sandbox proxy CA", issuer.stdout)
      sb:dispose()
      assert.is_nil(B.heads():find("sk-test", 1, true), "a host without a secret got it")
    end)

  it("fail a request whose host's certificate does not verify: a 502 with the reason, nothing sent", function()
    local sb = new_tls()
    local r = assert(sb:exec_shell("curl -s -p -o /dev/null -w '%{http_connect}' " .. C.url "/c"))
    assert.equal("502", r.stdout)
    local why = assert(sb:exec_shell("curl -s -x \"$HTTP_PROXY\" -X CONNECT --request-target 127.0.0.1:" .. C.port
      .. " http://127.0.0.1:" .. C.port .. "/ -D -"))
    assert.truthy(why.stdout:find("X-Sandbox-Error: upstream-tls", 1, true), why.stdout)
    assert.truthy(why.stdout:find("certificate verification failed", 1, true), why.stdout)
    sb:dispose()
    assert.equal("", C.heads())
  end)

  it("fail a request whose host never completes TLS after 10 s: a 504 with the reason", function()
    local S = tls.start { silent = true }
    local host = "127.0.0.1:" .. S.port
    local sb = new_tls { allowed_hosts = { host },
                         secrets = { { host = host, header = "Authorization", value = SECRET } } }
    local t = require("sandbox.core").clock()
    local r = assert(sb:exec_shell("curl -s -x \"$HTTP_PROXY\" -X CONNECT --request-target " .. host
      .. " http://" .. host .. "/ -D -"))
    local took = require("sandbox.core").clock() - t
    sb:dispose()
    S.stop()
    assert.truthy(r.stdout:find("HTTP/1.1 504", 1, true), r.stdout)
    assert.truthy(r.stdout:find("no handshake within 10 s", 1, true), r.stdout)
    assert.is_true(took > 9 and took < 30, tostring(took))
  end)

  it("pass keep-alive, chunked uploads, upgraded and streamed responses through unchanged", function()
    local got = {}
    local sb = new_tls { audit = function(e) got[#got + 1] = e end }
    -- two requests on one kept-alive connection: one CONNECT, two injections
    local two = assert(sb:exec_shell("curl -sS " .. A.url "/one" .. " " .. A.url "/two"))
    assert.equal('{"auth": true, "path": "/one", "method": "GET", "body_bytes": 0}'
      .. '{"auth": true, "path": "/two", "method": "GET", "body_bytes": 0}', two.stdout, two.stderr)
    local connects = 0
    for _, e in ipairs(got) do if e.kind == "net" and e.method == "CONNECT" then connects = connects + 1 end end
    assert.equal(1, connects)
    assert.equal(2, injections(got, A.port))
    -- a chunked upload of 300 000 bytes, then a request on the same connection
    local up = assert(sb:exec_shell("head -c 300000 /dev/zero | curl -sS -T - -H 'Transfer-Encoding: chunked' "
      .. A.url "/up" .. " --next " .. A.url "/after"))
    assert.equal('{"auth": true, "path": "/up", "method": "PUT", "body_bytes": 300000}'
      .. '{"auth": true, "path": "/after", "method": "GET", "body_bytes": 0}', up.stdout, up.stderr)
    -- an upgraded stream is bytes, not requests: what follows the 101 passes untouched, even
    -- when it looks like a request head
    local ws = assert(sb:exec("python3", { "-c", ([[
import os, socket, ssl
proxy = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", proxy))
s.sendall(b"CONNECT 127.0.0.1:%%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" %% %d)
head = b""
while b"\r\n\r\n" not in head: head += s.recv(1)
t = ssl.create_default_context().wrap_socket(s, server_hostname="127.0.0.1")
t.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head: head += t.recv(1)
payload = b"GET /inner HTTP/1.1\r\nHost: x\r\n\r\nraw \x00\xff bytes"
t.sendall(payload)
got = b""
while len(got) < len(payload): got += t.recv(65536)
print(head.split(b"\r\n")[0].decode(), got == payload)]]):format(A.port) }))
    assert.equal("HTTP/1.1 101 Switching Protocols True\n", ws.stdout, ws.stderr)
    -- server-sent events arrive as they are sent (chunked, 50 ms apart)
    local ev = assert(sb:exec_shell("curl -sSN " .. A.url "/events"))
    assert.equal("data: event 0\n\ndata: event 1\n\ndata: event 2\n\n", ev.stdout, ev.stderr)
    sb:dispose()
  end)

  it("work the same on an OverlaySandbox", function()
    local sb = new_tls({}, sandbox.overlay)
    local r = assert(sb:exec_shell("curl -sS -H 'Authorization: Bearer forged' " .. A.url "/overlay"))
    assert.equal('{"auth": true, "path": "/overlay", "method": "GET", "body_bytes": 0}', r.stdout, r.stderr)
    sb:dispose()
  end)

  it("work without a mount view too (Landlock only): the variables name the bundle's host file", function()
    local sb = new_tls { confine = { namespaces = false } }
    local r = assert(sb:exec_shell("echo $SSL_CERT_FILE; curl -sS -o /dev/null -w '%{http_code}' " .. A.url "/ll"))
    local bundle = r.stdout:match("^(%S+)\n")
    assert.matches("/sandbox%-ca%.[^/]+/ca%-bundle%.pem$", bundle)
    assert.equal(bundle .. "\n200", r.stdout, r.stderr)
    sb:dispose()
    assert.is_nil(io.open(bundle), "the bundle outlived the sandbox")
  end)

  it("come from --secret and --upstream-ca on the command line", function()
    local host = "127.0.0.1:" .. A.port
    local cli = ("cd %s && SPEC_SECRET_TOKEN=%s %s %s run --allow-host %s --secret %s:Authorization=SPEC_SECRET_TOKEN "
      .. "--upstream-ca %s -- curl -sS -o /dev/null -w '%%{http_code}' %s"):format(
      sh.quote(backends.tmpdir("secrets-cli-tls")), sh.quote(SECRET), sh.lua(false), sh.quote(BIN), host, host,
      sh.quote(certs.ca), A.url "/cli")
    local ok, out = sh.run(cli)
    assert.is_true(ok, out)
    assert.equal("200", out) -- A answers 401 without exactly the secret
  end)

  it("come from --secret and --upstream-ca on the MCP server: run_command's curl gets through", function()
    local host = "127.0.0.1:" .. A.port
    local json = require "sandbox.json"
    local lines = {
      json.encode { jsonrpc = "2.0", id = 0, method = "initialize", params = { protocolVersion = "2025-11-25",
        capabilities = {}, clientInfo = { name = "spec", version = "1" } } },
      json.encode { jsonrpc = "2.0", id = 1, method = "tools/call", params = { name = "run_command",
        arguments = { command = { "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", A.url "/mcp" } } } },
    }
    local dir = backends.tmpdir("secrets-mcp")
    local f = assert(io.open(dir .. "/in", "wb"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    -- the input stays open until the call's answer is out (at the end of its input the server
    -- waits 2 s for calls in flight, which a loaded machine can outlast)
    local ok, out = sh.run(("{ cat %s/in; i=0; while [ $i -lt 600 ] && ! grep -qs '\"id\":1' %s/out; do sleep 0.1; "
      .. "i=$((i + 1)); done; } | SPEC_SECRET_TOKEN=%s %s %s mcp --dir %s --allow-host %s "
      .. "--secret %s:Authorization=SPEC_SECRET_TOKEN --upstream-ca %s > %s/out 2>&1; cat %s/out"):format(dir, dir,
      sh.quote(SECRET), sh.lua(false), sh.quote(BIN), sh.quote(dir), host, host, sh.quote(certs.ca), dir, dir))
    assert.is_true(ok, out)
    local answer
    for l in out:gmatch("[^\n]+") do
      local okj, m = pcall(json.decode, l) -- stderr's lines are not JSON
      if okj and type(m) == "table" and m.id == 1 then answer = m end
    end
    assert.is_table(answer, out)
    assert.matches("200", json.encode(answer.result.content), 1, true)
    assert.is_nil(out:find("sk-test", 1, true), "the value reached the agent")
  end)

  it("are vouched for by an authority that may name their hosts only (name constraints)", function()
    local sb = new_tls()
    -- the bundle's last certificate is the sandbox's authority
    local text = assert(sb:exec_shell([[awk '/BEGIN CERTIFICATE/{c=""} {c=c $0 "\n"} END{printf "%s", c}' ]]
      .. [["$SSL_CERT_FILE" | openssl x509 -noout -subject -ext nameConstraints]]))
    assert.matches("sandbox proxy CA", text.stdout, 1, true)
    assert.matches("Permitted:%s+IP:127%.0%.0%.1/255%.255%.255%.255", text.stdout)
    sb:dispose()
  end)

  it("never reach anything the command can read", function()
    local sb = new_tls()
    assert.equal("200", assert(sb:exec_shell("curl -s -o got.txt -w '%{http_code}' " .. A.url "/hello")).stdout)
    assert_nowhere(sb)
    sb:dispose()
  end)
end)
