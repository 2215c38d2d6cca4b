-- Network for commands and agents (SPEC §5 phase 2): the host allowlist, the
-- proxy commands must go through, sb:http_get, and exposed ports with a
-- token and an idle TTL. Servers are real, on loopback, started by the tests;
-- every refusal also asserts the refused server never saw the request.
local sandbox = require "sandbox"
local backends = require "support.backends"
local httpd = require "support.httpd"
local sh = require "support.sh"
local hostcan = require "support.host"

local confine = not os.getenv("SANDBOX_TEST_UNCONFINED") -- valgrind: see the Makefile
local without_layers = require("support.host").without_layers("commands are kept off the network (or to allowed hosts) by a network namespace")
if without_layers then
  describe("network", function() pending(without_layers) end)
  return
end

local function new(opts)
  opts = opts or {}
  opts.base_dir = opts.base_dir or backends.tmpdir("net")
  opts.kill_grace = opts.kill_grace or 0.3
  opts.confine = confine
  return assert(sandbox.container(opts))
end

local function sleep(s) sh.run("sleep " .. s) end

local function now() return require("sandbox.core").clock() end

local function count(dir)
  local n, p = 0, io.popen("ls " .. dir)
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end

-- children of this process, from /proc (the namespace helper is one)
local function children()
  local dir = "/proc/" .. sh.pid() .. "/task/"
  local p = io.popen("ls " .. dir)
  local tasks = {}
  for t in p:lines() do tasks[#tasks + 1] = t end
  p:close() -- ls is reaped before the children are read
  local set = {}
  for _, t in ipairs(tasks) do
    local f = io.open(dir .. t .. "/children")
    if f then
      for pid in f:read("*a"):gmatch("%d+") do set[pid] = true end
      f:close()
    end
  end
  return set
end

local A, B -- A is allowed, B never is
lazy_setup(function()
  A = httpd.start()
  B = httpd.start()
end)
lazy_teardown(function() httpd.stop_all() end)

describe("allowed_hosts", function()
  it("refuses malformed entries when the sandbox is made", function()
    for _, bad in ipairs { "", "exa mple.org", "http://example.org", "*.", "1.2.3.4/33", "x.org:0",
                           "x.org:99999", "[::1", "a..b", "*x.org" } do
      assert.has_error(function() sandbox.virtual { allowed_hosts = { bad } } end)
      assert.has_error(function() sandbox.virtual { allowed_hosts = { "ok.org" }, denied_hosts = { bad } } end)
    end
    assert.has_error(function() sandbox.virtual { allowed_hosts = "example.org" } end)
  end)

  it("accepts names, wildcards, IPs, CIDRs and ports", function()
    local sb = sandbox.virtual { allowed_hosts = { "example.org", "*.example.com", "*", "127.0.0.1:8080",
                                                   "10.0.0.0/8", "::1", "[::1]:9000", "fd00::/8" } }
    assert.is_true(sb:host_allowed("example.org"))
    sb:dispose()
  end)

  it("refuses denied_hosts without allowed_hosts, and allowed_hosts with direct outbound access", function()
    assert.has_error(function() sandbox.virtual { denied_hosts = { "x.org" } } end)
    local ok, err = pcall(sandbox.container, { base_dir = backends.tmpdir("net"), allow_outbound = true,
                                                allowed_hosts = { "example.org" } })
    assert.is_false(ok)
    assert.matches("allow_outbound = false", err)
  end)

  it("matches names like the reference sandboxes: deny wins, *.x is only subdomains", function()
    local sb = sandbox.virtual {
      allowed_hosts = { "example.org", "*.example.com", "127.0.0.1:8080", "10.0.0.0/8", "[::1]:9000" },
      denied_hosts = { "bad.example.com", "10.6.6.6" },
    }
    local cases = {
      { "example.org", 443, true }, { "EXAMPLE.ORG.", 443, true }, { "www.example.org", 443, false },
      { "example.com", 443, false }, { "a.example.com", 80, true }, { "a.b.example.com", 80, true },
      { "bad.example.com", 443, false }, { "x.bad.example.com", 443, true },
      { "127.0.0.1", 8080, true }, { "127.0.0.1", 8081, false }, { "10.1.2.3", 22, true },
      { "10.6.6.6", 22, false }, { "11.0.0.1", 80, false }, { "::1", 9000, true }, { "::1", 9001, false },
      { "example.org.evil.net", 443, false }, { "notexample.org", 443, false },
    }
    for _, c in ipairs(cases) do
      local ok, why = sb:host_allowed(c[1], c[2])
      assert.equal(c[3], ok, c[1] .. ":" .. c[2] .. " " .. tostring(why))
      if not ok then assert.matches("_hosts", why) end
    end
    sb:dispose()
  end)
end)

describe("sb:http_get", function()
  local sb
  before_each(function() sb = sandbox.virtual { allowed_hosts = { "127.0.0.1:" .. A.port } } end)
  after_each(function() sb:dispose() end)

  it("fetches from an allowed host (a VirtualSandbox has it too)", function()
    local r = assert(sb:http_get(A.url "/hello"))
    assert.equal(200, r.status)
    assert.equal("hello from the test server\n", r.body)
    assert.equal("text/plain", r.headers["content-type"])
    assert.equal("127.0.0.1", r.address)
    assert.equal(0, r.redirects)
    assert.is_false(r.truncated)
  end)

  it("refuses a host not allowed, before any connection", function()
    local before = #B.requests()
    local r, msg, code = sb:http_get(B.url "/hello")
    assert.is_nil(r)
    assert.equal("EACCES", code)
    assert.matches("not in allowed_hosts", msg)
    assert.equal(before, #B.requests())
  end)

  it("follows redirects and re-checks every hop", function()
    local r = assert(sb:http_get(A.url("/redirect?to=" .. A.url "/hello")))
    assert.equal(200, r.status)
    assert.equal(1, r.redirects)
    assert.equal(A.url "/hello", r.url)

    local before = #B.requests()
    local r2, msg, code = sb:http_get(A.url("/redirect?to=" .. B.url "/hello"))
    assert.is_nil(r2)
    assert.equal("EACCES", code)
    assert.matches(tostring(B.port), msg)
    assert.equal(before, #B.requests())
  end)

  it("stops after max_redirects", function()
    local url = A.url("/redirect?to=" .. A.url "/hello")
    local r, msg, code = sb:http_get(url, { max_redirects = 0 })
    assert.is_nil(r)
    assert.equal("ELOOP", code, msg)
  end)

  it("keeps at most max_bytes of the body", function()
    local r = assert(sb:http_get(A.url "/big?n=300000", { max_bytes = 1000 }))
    assert.is_true(r.truncated)
    assert.equal(1000, #r.body)
    local full = assert(sb:http_get(A.url "/big?n=3000", { max_bytes = 3000 }))
    assert.is_false(full.truncated)
    assert.equal(3000, #full.body)
  end)

  it("gives up at the timeout", function()
    local t0 = now()
    local r, msg, code = sb:http_get(A.url "/slow?s=3", { timeout = 0.5 })
    assert.is_nil(r)
    assert.equal("EIO", code)
    assert.matches("timed out", msg)
    -- the peer answers after 3 s: ending before that proves the timeout cut it
    assert.is_true(now() - t0 < 2.5)
  end)

  it("refuses a name whose address is loopback unless the address is listed", function()
    local named = sandbox.virtual { allowed_hosts = { "localhost:" .. A.port } }
    local before = #A.requests()
    local r, msg, code = named:http_get(("http://localhost:%d/hello"):format(A.port))
    assert.is_nil(r)
    assert.equal("EACCES", code)
    assert.matches("loopback", msg)
    assert.equal(before, #A.requests())
    named:dispose()
    local listed = sandbox.virtual { allowed_hosts = { "localhost:" .. A.port, "127.0.0.1" } }
    assert.equal(200, assert(listed:http_get(("http://localhost:%d/hello"):format(A.port))).status)
    listed:dispose()
  end)

  it("refuses special addresses even to '*', in every spelling", function()
    local any = sandbox.virtual { allowed_hosts = { "*" } }
    local before = #A.requests()
    for _, host in ipairs { "127.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "127.1", "2130706433", "0.0.0.0" } do
      local r, msg, code = any:http_get(("http://%s:%d/hello"):format(host, A.port), { timeout = 5 })
      assert.is_nil(r, host)
      assert.is_true(code == "EACCES" or code == "EIO", host .. ": " .. tostring(msg))
    end
    assert.equal(before, #A.requests())
    any:dispose()
  end)

  it("lets denied_hosts win over allowed_hosts", function()
    local d = sandbox.virtual { allowed_hosts = { "127.0.0.1" }, denied_hosts = { "127.0.0.1:" .. B.port } }
    assert.equal(200, assert(d:http_get(A.url "/hello")).status)
    local _, _, code = d:http_get(B.url "/hello")
    assert.equal("EACCES", code)
    d:dispose()
  end)

  it("fetches only http and https URLs", function()
    for _, url in ipairs { "file:///etc/passwd", "ftp://127.0.0.1/", "gopher://127.0.0.1/", "not a url", "/relative" } do
      local r, msg, code = sb:http_get(url)
      assert.is_nil(r, url)
      assert.equal("EINVAL", code, msg)
    end
  end)

  it("is off without allowed_hosts", function()
    local plain = sandbox.virtual {}
    local r, msg, code = plain:http_get(A.url "/hello")
    assert.is_nil(r)
    assert.equal("EACCES", code)
    assert.matches("allowed_hosts", msg)
    plain:dispose()
  end)

  it("works on a ContainerSandbox the same way", function()
    local c = new { allowed_hosts = { "127.0.0.1:" .. A.port } }
    assert.equal(200, assert(c:http_get(A.url "/hello")).status)
    assert.equal("EACCES", select(3, c:http_get(B.url "/hello")))
    c:dispose()
  end)
end)

describe("the http_get tool", function()
  it("is offered only with allowed_hosts, and reports refusals to the model", function()
    assert.is_nil(sandbox.virtual {}:tools().http_get)
    local sb = sandbox.virtual { allowed_hosts = { "127.0.0.1:" .. A.port } }
    local t = sb:tools().http_get
    assert.is_true(t.read_only)
    local ok = t.execute { url = A.url "/hello" }
    assert.is_false(ok.is_error)
    assert.matches("^HTTP 200 from ", ok.content)
    assert.matches("hello from the test server", ok.content)
    local cut = t.execute { url = A.url "/big?n=5000", max_bytes = 100 }
    assert.matches("cut at max_bytes", cut.content)
    local refused = t.execute { url = B.url "/hello" }
    assert.is_true(refused.is_error)
    assert.matches("not in allowed_hosts", refused.content)
    assert.is_true(t.execute { url = 42 }.is_error)
    sb:dispose()
  end)
end)

describe("commands with allowed_hosts", function()
  local sb
  before_each(function() sb = new { allowed_hosts = { "127.0.0.1:" .. A.port }, allow_shell = true } end)
  after_each(function() sb:dispose() end)

  local function sh_in(script) return assert(sb:exec_shell(script, { timeout = 20 })) end

  it("are reported in sb.confinement, and a refusal gets a hint", function()
    assert.same({ enforced = true, mode = "allowed_hosts", namespace = sb.confinement.network.namespace },
      sb.confinement.network)
    local r = sh_in("curl -s -m 5 " .. B.url "/hello" .. "; exit 3")
    assert.is_true(r.sandbox_denied)
    assert.matches("allowed_hosts", r.hint)
  end)

  it("get the proxy in their environment", function()
    local r = sh_in 'echo "$HTTP_PROXY $HTTPS_PROXY $https_proxy"'
    local p = r.stdout:match("^(http://127%.0%.0%.1:%d+) ")
    assert.truthy(p, r.stdout)
    assert.equal(p .. " " .. p .. " " .. p .. "\n", r.stdout)
  end)

  it("reach an allowed host through the proxy, plain HTTP and CONNECT", function()
    local r = sh_in("curl -sS -m 5 " .. A.url "/hello")
    assert.equal("hello from the test server\n", r.stdout, r.stderr)
    local t = sh_in("curl -sS -m 5 -p " .. A.url "/hello") -- a tunnel (what HTTPS uses)
    assert.equal("hello from the test server\n", t.stdout, t.stderr)
    local log = table.concat(A.requests(), "\n")
    assert.matches("GET /hello HTTP/1.1", log)
  end)

  it("get a 403 with the reason for a host not allowed, and the host sees nothing", function()
    local before = #B.requests()
    local r = sh_in("curl -s -m 5 -D - " .. B.url "/hello")
    assert.matches("^HTTP/1.1 403", r.stdout)
    assert.matches("X%-Sandbox%-Error: blocked%-by%-allowlist", r.stdout)
    assert.matches("not in allowed_hosts", r.stdout)
    local t = sh_in("curl -s -m 5 -p -o /dev/null -w '%{http_connect}' " .. B.url "/hello")
    assert.equal("403", t.stdout) -- the CONNECT itself was refused
    local ext = sh_in("curl -s -m 5 -o /dev/null -w '%{http_connect}' https://example.org/")
    assert.equal("403", ext.stdout)
    assert.equal(before, #B.requests())
  end)

  it("cannot follow a redirect to a host not allowed", function()
    local before = #B.requests()
    local r = sh_in("curl -sL -m 5 -o /dev/null -w '%{http_code}' '" .. A.url("/redirect?to=" .. B.url "/hello") .. "'")
    assert.equal("403", r.stdout)
    assert.equal(before, #B.requests())
  end)

  it("cannot reach a name that resolves to loopback unless the address is listed", function()
    local named = new { allowed_hosts = { "localhost:" .. A.port }, allow_shell = true }
    local before = #A.requests()
    local r = assert(named:exec_shell(("curl -s -m 5 http://localhost:%d/hello"):format(A.port)))
    assert.matches("loopback", r.stdout)
    assert.equal(before, #A.requests())
    named:dispose()
  end)

  it("cannot reach the host itself through '*': no address of any of its interfaces (unless listed)", function()
    -- the host's own addresses other than loopback (eth0's, a bridge's),
    -- but the E2B peer's links (sbvh*: a remote spec in the other CI lane
    -- makes and removes them while this runs)
    local ok, out = sh.run("ip -o -4 addr show 2>/dev/null")
    local addrs = {}
    for dev, a in (ok and out or ""):gmatch("%d+:%s+(%S+)%s+inet ([%d%.]+)/") do
      if not a:match("^127%.") and not dev:match("^sbv") then addrs[#addrs + 1] = a end
    end
    if #addrs == 0 then
      hostcan.note("the proxy's refusal of the host's own addresses", "this host has no IPv4 address but loopback")
      return
    end
    local S = httpd.start("0.0.0.0") -- a host service on every address
    local star = new { allowed_hosts = { "*" }, allow_shell = true }
    for _, a in ipairs(addrs) do
      local before = #S.requests()
      local r = assert(star:exec_shell(("curl -s -m 5 -D - http://%s:%d/hello"):format(a, S.port)))
      assert.matches("^HTTP/1.1 403", r.stdout)
      assert.matches("an address of this host", r.stdout)
      local t = assert(star:exec_shell(("curl -s -m 5 -p -o /dev/null -w '%%{http_connect}' http://%s:%d/hello")
        :format(a, S.port)))
      assert.equal("403", t.stdout) -- the CONNECT itself was refused
      local body, msg, code = star:http_get(("http://%s:%d/hello"):format(a, S.port))
      assert.is_nil(body)
      assert.equal("EACCES", code, msg)
      assert.equal(before, #S.requests(), "the host's service saw a request")
    end
    star:dispose()
    -- listed by its address, it is reached: the refusal is the rule's
    local listed = new { allowed_hosts = { addrs[1] .. ":" .. S.port }, allow_shell = true }
    local r = assert(listed:exec_shell(("curl -sS -m 5 http://%s:%d/hello"):format(addrs[1], S.port)))
    assert.equal("hello from the test server\n", r.stdout, r.stderr)
    listed:dispose()
    S.stop()
  end)

  it("have no direct route around the proxy", function()
    local before = #A.requests()
    local r = sh_in("curl -sS -m 5 --noproxy '*' " .. A.url "/hello")
    assert.not_equal(0, r.exit_code)
    local ext = sh_in("curl -sS -m 5 --noproxy '*' http://1.1.1.1/")
    assert.equal(7, ext.exit_code) -- curl: could not connect
    assert.equal(before, #A.requests())
  end)

  it("are told how to use the proxy when they ask it the wrong way", function()
    assert(sh.run(("cp %s/test/httpd %s/httpd"):format(sh.build, sb.cwd)))
    local function raw(request) -- bytes exactly as given, straight to the proxy
      return sh_in(("printf '%s' | ./httpd --client \"${HTTP_PROXY##*:}\""):format(request)).stdout
    end
    local cases = {
      { "GET /hello HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n", "^HTTP/1.1 400 .*absolute http:// URLs or CONNECT" },
      { "GET https://example.org/ HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 400 .*through CONNECT" },
      { "CONNECT example.org HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 400 .*CONNECT needs host:port" },
      { "CONNECT [::1 HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 400" },
      { "GET http://user@127.0.0.1:" .. A.port .. "/hello HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 400 .*bad URL" },
      { "BOGUS\\r\\n\\r\\n", "^HTTP/1.1 400 .*malformed request line" },
      { "GET http://x/ HTTP/1.1\\r\\nA: b\\nHost: y\\r\\n\\r\\n", "^HTTP/1.1 400 .*malformed request head" },
      { "CONNECT [::1]:" .. A.port .. " HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 403 .*not in allowed_hosts" },
      { "GET http://[::ffff:127.0.0.2]:" .. A.port .. "/hello HTTP/1.1\\r\\n\\r\\n", "^HTTP/1.1 403" },
    }
    local before = #A.requests()
    for _, c in ipairs(cases) do assert.matches(c[2], raw(c[1])) end
    assert.equal(before, #A.requests())
    -- and a plain absolute-form request is forwarded with the URL's Host, one request per connection
    local echo = raw("GET http://127.0.0.1:" .. A.port .. "/echo HTTP/1.1\\r\\nHost: evil.example\\r\\n"
      .. "Proxy-Connection: keep-alive\\r\\nConnection: keep-alive\\r\\n\\r\\n")
    assert.matches("^HTTP/1.1 200", echo)
    assert.matches("GET /echo HTTP/1.1\r\n", echo, 1, true)
    assert.matches("Host: 127.0.0.1:" .. A.port, echo, 1, true)
    assert.matches("Connection: close", echo, 1, true)
    assert.is_nil(echo:find("evil.example", 1, true))
    assert.is_nil(echo:find("Proxy-Connection", 1, true))
    assert.is_nil(echo:find("keep-alive", 1, true))
    local huge = raw("GET http://127.0.0.1/ HTTP/1.1\\r\\nX: " .. ("a"):rep(40000) .. "\\r\\n\\r\\n")
    assert.matches("^HTTP/1.1 431", huge)
  end)

  it("get a 502 for a name that does not resolve", function()
    local any = new { allowed_hosts = { "*.invalid" }, allow_shell = true }
    local r = assert(any:exec_shell("curl -s -m 10 -D - http://no-such-host.invalid/"))
    assert.matches("^HTTP/1.1 502", r.stdout)
    assert.matches("dns%-failure", r.stdout)
    any:dispose()
  end)
end)

describe("exposed ports", function()
  local sb
  before_each(function()
    sb = new { allow_shell = true }
    assert(sh.run(("cp %s/test/httpd %s/httpd"):format(sh.build, sb.cwd)))
  end)
  after_each(function() sb:dispose() end)

  -- the server inside, on $PORT; returns once it answers through the gate
  local function serve(opts)
    opts.background = true
    local h = assert(sb:exec("./httpd", { "log.txt" }, opts))
    local headers = h.token and { "Authorization: Bearer " .. h.token } or nil
    local deadline = now() + 10
    while now() < deadline do
      if httpd.curl(h.url .. "hello", headers) == 200 then return h end
      sleep(0.05)
    end
    error("the exposed server never answered: " .. tostring(h.url))
  end

  local function inside_requests()
    local s = sb:read_file("log.txt") or ""
    local n = 0
    for _ in s:gmatch("[^\n]+") do n = n + 1 end
    return n
  end

  it("is reachable with the token and refused without it", function()
    local h = serve { expose_port = 0, port_auth = { type = "token", value = "s3cret-token-1" } }
    assert.matches("^http://127%.0%.0%.1:%d+/$", h.url)
    assert.equal(h.port, tonumber(h.url:match(":(%d+)/")))
    assert.is_true(h.child_port > 0)
    assert.equal("s3cret-token-1", h.token)

    local code, body = httpd.curl(h.url .. "hello", { "Authorization: Bearer s3cret-token-1" })
    assert.equal(200, code)
    assert.equal("hello from the test server\n", body)
    assert.equal(200, (httpd.curl(h.url .. "hello", { "X-Sandbox-Token: s3cret-token-1" })))

    local before = inside_requests()
    local c1, b1 = httpd.curl(h.url .. "hello")
    assert.equal(401, c1)
    assert.matches("token", b1)
    assert.equal(401, (httpd.curl(h.url .. "hello", { "Authorization: Bearer s3cret-token-2" })))
    assert.equal(401, (httpd.curl(h.url .. "hello", { "X-Sandbox-Token: s3cret-token-" })))
    assert.equal(before, inside_requests())
  end)

  it("never passes the token on to the command", function()
    local h = serve { expose_port = 0, port_auth = { type = "token" } }
    assert.matches("^%x+$", h.token)
    assert.equal(32, #h.token)
    local code, body = httpd.curl(h.url .. "echo", { "Authorization: Bearer " .. h.token, "X-Other: kept" })
    assert.equal(200, code)
    assert.matches("GET /echo", body)
    assert.matches("X%-Other: kept", body)
    assert.is_nil(body:find(h.token, 1, true))
    assert.is_nil(body:lower():find("authorization", 1, true))
  end)

  it("strips every form of the token it accepts, whichever one let the request in", function()
    local h = serve { expose_port = 0, port_auth = { type = "token" } }
    for _, hdrs in ipairs {
      { "X-Sandbox-Token: " .. h.token, "Authorization: Bearer " .. h.token },
      { "Authorization: Bearer " .. h.token, "X-Sandbox-Token: " .. h.token },
      { "X-Sandbox-Token: " .. h.token, "X-Sandbox-Token: " .. h.token },
      { "Authorization: bearer " .. h.token, "X-Other: kept" },
    } do
      local code, body = httpd.curl(h.url .. "echo", hdrs)
      assert.equal(200, code, table.concat(hdrs, ", "))
      assert.matches("GET /echo", body)
      assert.is_nil(body:find(h.token, 1, true), table.concat(hdrs, ", "))
    end
    -- the command's own credentials pass untouched
    local code, body = httpd.curl(h.url .. "echo", { "X-Sandbox-Token: " .. h.token, "Authorization: Basic dXNlcjpwdw==" })
    assert.equal(200, code)
    assert.matches("Authorization: Basic dXNlcjpwdw==", body)
    assert.is_nil(body:find(h.token, 1, true))
  end)

  it("refuses heads another server could read differently (bare LF, folding, NUL)", function()
    local socket = require "socket"
    local h = serve { expose_port = 0 }
    local before = inside_requests()
    for _, head in ipairs {
      "GET /hello HTTP/1.1\r\nX-A: 1\nX-Smuggled: 2\r\n\r\n",
      "GET /hello HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
      "GET /hello HTTP/1.1\r\nX-A: 1\0\r\n\r\n",
      "GET /hello HTTP/1.1\rX-A: 1\r\n\r\n",
    } do
      local c = assert(socket.connect("127.0.0.1", h.port))
      c:settimeout(5)
      assert(c:send(head))
      local status = c:receive("*l")
      c:close()
      assert.equal("HTTP/1.1 400 Bad Request", status)
    end
    assert.equal(before, inside_requests())
  end)

  it("serves at most 128 connections at a time", function()
    local socket = require "socket"
    local h = serve { expose_port = 0 }
    local held = {}
    for i = 1, 128 do held[i] = assert(socket.connect("127.0.0.1", h.port)) end
    local extra = assert(socket.connect("127.0.0.1", h.port))
    extra:settimeout(5)
    assert.equal("HTTP/1.1 503 Service Unavailable", extra:receive("*l"))
    extra:close()
    for _, c in ipairs(held) do c:close() end
    local deadline = now() + 5 -- the slots come back once the server saw them close
    while httpd.curl(h.url .. "hello") ~= 200 and now() < deadline do sleep(0.05) end
    assert.equal(200, (httpd.curl(h.url .. "hello")))
  end)

  it("gives the command its port in PORT, a fixed one when asked", function()
    local h = serve { expose_port = 18777 }
    assert.equal(18777, h.child_port)
    assert.equal(200, (httpd.curl(h.url .. "hello"))) -- no port_auth: open on loopback
  end)

  it("runs the README's example: a server listening on $PORT", function()
    local h = assert(sb:exec("sh", { "-c", 'exec python3 -m http.server --bind 127.0.0.1 "$PORT"' }, {
      background = true, expose_port = 0, port_auth = { type = "token" },
      port_ttl = sandbox.capabilities().pidfd and 300 or nil, -- (valgrind has no pidfd)
    }))
    local deadline, code = now() + 15, 0
    while now() < deadline and code ~= 200 do
      code = httpd.curl(h.url, { "Authorization: Bearer " .. h.token })
      if code ~= 200 then sleep(0.1) end
    end
    assert.equal(200, code)
  end)

  it("says that nothing listens on the port the command was given", function()
    local h = assert(sb:exec("sleep", { "30" }, { background = true, expose_port = 0 }))
    local code, body = httpd.curl(h.url)
    assert.equal(502, code)
    assert.matches("nothing listens on port " .. h.child_port .. " inside the sandbox, the port the command was given in %$PORT", body)
    h:kill()
  end)

  it("closes with its command", function()
    local h = serve { expose_port = 0 }
    h:kill()
    assert(h:wait(10))
    assert.equal(0, (httpd.curl(h.url .. "hello"))) -- connection refused
  end)

  local has_pidfd = sandbox.capabilities().pidfd

  it("refuses port_ttl without pidfd (fails closed, forced here)", function()
    local d = backends.tmpdir("nopidfd")
    local script = ([[SANDBOX_NO_PIDFD=1 %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require("sandbox").container { base_dir = "%s", confine = %s }
      local h, msg, code = s:exec("sleep", { "5" }, { background = true, expose_port = 0, port_ttl = 1 })
      print(h, code, msg)
      h = assert(s:exec("sleep", { "5" }, { background = true, expose_port = 0 }))
      print(type(h.url))
      s:dispose()']]):format(sh.lua(), sh.build, d, tostring(confine))
    local ok, out = sh.run(script)
    assert.is_true(ok, out)
    assert.matches("^nil\tENOTSUP\tENOTSUP: port_ttl needs pidfd", out)
    assert.matches("\nstring\n$", out)
  end)

  it("kills a command whose port stayed idle for port_ttl", function()
    if not has_pidfd then -- valgrind 3.19 does not know pidfd_open: the fail-closed path
      local h, _, code = sb:exec("./httpd", { "log.txt" }, { background = true, expose_port = 0, port_ttl = 1 })
      assert.is_nil(h)
      assert.equal("ENOTSUP", code)
      return
    end
    local t0 = now()
    local h = serve { expose_port = 0, port_ttl = 1 }
    local r = assert(h:wait(15))
    assert.equal("port_ttl", r.killed_by)
    assert.is_true(now() - t0 >= 1)
    assert.is_true(now() - t0 < 10)
    assert.equal(0, (httpd.curl(h.url .. "hello")))
  end)

  it("kills one that ignores SIGTERM after kill_grace", function()
    if not has_pidfd then return end -- see above
    local h = assert(sb:exec_shell("trap '' TERM; ./httpd log.txt >/dev/null 2>&1 & wait",
      { background = true, expose_port = 0, port_ttl = 1 }))
    local r = assert(h:wait(15))
    assert.equal("port_ttl", r.killed_by)
    assert.equal("SIGKILL", r.signal)
    assert.is_true(r.duration < 2.8, "took " .. r.duration) -- ttl 1 + kill_grace 0.3 (the default 2 would be >= 3)
  end)

  it("keeps a command alive while its port is used", function()
    if not has_pidfd then return end -- see above
    local h = serve { expose_port = 0, port_ttl = 1.5 }
    local t_end = now() + 3
    while now() < t_end do
      assert.equal(200, (httpd.curl(h.url .. "hello")))
      sleep(0.3)
    end
    assert.is_true(h:running())
    sb:poll(0)
    local r = assert(h:wait(15))
    assert.equal("port_ttl", r.killed_by)
  end)

  it("refuses bad combinations with a clear error", function()
    local cases = {
      { { expose_port = 0 }, "background" },
      { { background = true, port_ttl = 5 }, "needs expose_port" },
      { { background = true, expose_port = 0, bind_host = "0.0.0.0" }, "port_auth" },
      { { background = true, expose_port = 0, bind_host = "localhost", port_auth = { type = "token" } }, "IP address" },
    }
    for _, c in ipairs(cases) do
      local h, msg, code = sb:exec("./httpd", { "log.txt" }, c[1])
      assert.is_nil(h)
      assert.equal("EINVAL", code)
      assert.matches(c[2], msg)
    end
    assert.has_error(function() sb:exec("./httpd", {}, { background = true, expose_port = 70000 }) end)
    assert.has_error(function()
      sb:exec("./httpd", {}, { background = true, expose_port = 0, port_auth = { type = "basic" } })
    end)
    local open = new { allow_outbound = true }
    local h, msg, code = open:exec("/bin/true", {}, { background = true, expose_port = 0 })
    assert.is_nil(h)
    assert.equal("EINVAL", code)
    assert.matches("allow_outbound = false", msg)
    open:dispose()
  end)

  it("leaves no listener, thread, fd or helper process after dispose", function()
    local function cycle()
      local s = new { allow_shell = true, allowed_hosts = { "127.0.0.1:" .. A.port } }
      assert(sh.run(("cp %s/test/httpd %s/httpd"):format(sh.build, s.cwd)))
      local h = assert(s:exec("./httpd", { "log.txt" }, { background = true, expose_port = 0 }))
      local r = assert(s:exec_shell("curl -s -m 5 " .. A.url "/hello"))
      assert.equal("hello from the test server\n", r.stdout)
      local deadline = now() + 10
      while httpd.curl(h.url .. "hello") ~= 200 and now() < deadline do sleep(0.05) end
      local url = h.url
      s:dispose()
      return url
    end
    cycle() -- libuv's thread pool (DNS) is started once per process: warm it up
    collectgarbage() -- what other tests left to the collector is not this test's business,
    collectgarbage() -- and with the collector stopped nothing is released but by dispose
    collectgarbage("stop")
    local me = "/proc/" .. sh.pid()
    local fds, tasks, kids = #sh.open_fds(true), count(me .. "/task"), children()
    local url = cycle()
    local fds_after, tasks_after = #sh.open_fds(true), count(me .. "/task")
    collectgarbage("restart")
    assert.equal(fds, fds_after)
    -- none left behind (one an earlier test's sandbox started may end meanwhile)
    assert.is_true(tasks_after <= tasks, ("threads: %d before, %d after"):format(tasks, tasks_after))
    for pid in pairs(children()) do
      local f = io.open("/proc/" .. pid .. "/status")
      local st = f and f:read("*a") or ""
      if f then f:close() end
      assert.truthy(kids[pid], "process left: " .. pid .. " " .. st:sub(1, 200))
    end
    assert.equal(0, (httpd.curl(url .. "hello")))
  end)
end)
