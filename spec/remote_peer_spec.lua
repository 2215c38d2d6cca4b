-- The RemoteSandbox's test peer (SPEC §15, issue "RemoteSandbox"): E2B's
-- REST control plane and envd's Connect services (spec/js/e2b/peer.mjs, on
-- the reference Connect server) over temporary directories. It counts only
-- for what E2B's official npm SDK accepts, so the SDK's own calls run
-- against it first (spec/js/e2b/sdk_check.mjs); the backend's tests build
-- on it. What the peer must refuse is checked too: a peer that accepts
-- anything would make the remote tests meaningless.
local json = require "sandbox.json"
local sh = require "support.sh"

local NPM = sh.build:gsub("/build[^/]*$", "/build/npm")
local JS = (os.getenv("PWD") or ".") .. "/spec/js/e2b"

-- Start a peer; returns its URLs and a stop function. The peer also exits
-- when this process is gone (it watches our pid), so no peer outlives a
-- crashed run.
local function start_peer(key)
  local f = assert(io.open("/proc/self/stat"))
  local me = f:read("*l"):match("^(%d+)")
  f:close()
  local out = os.tmpname()
  local _, pid = sh.run(("NPM_DIR=%s node %s/peer.mjs --key %s --parent %s > %s 2>&1 < /dev/null & echo $!"):format(
    sh.quote(NPM), sh.quote(JS), sh.quote(key), me, sh.quote(out)))
  local urls
  for _ = 1, 100 do
    local line = (sh.read_file(out) or ""):match("^([^\n]*)\n")
    if line and line:match("^{") then urls = json.decode(line) break end
    sh.run("sleep 0.1")
  end
  assert(urls, "the peer did not start: " .. tostring(sh.read_file(out)))
  return urls, function()
    sh.run("kill " .. pid:match("%d+") .. " 2>/dev/null; sleep 0.2")
    os.remove(out)
  end
end

-- One HTTP request with curl: status, body.
local function http(method, url, headers, body)
  local h = {}
  for k, v in pairs(headers or {}) do h[#h + 1] = "-H " .. sh.quote(k .. ": " .. v) end
  local ok, out = sh.run(("curl -s -o - -w '\\n%%{http_code}' -X %s %s %s %s"):format(
    method, table.concat(h, " "), body and ("--data-binary " .. sh.quote(body)) or "", sh.quote(url)))
  assert(ok, out)
  local text, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), text
end

describe("the E2B test peer", function()
  local urls, stop
  setup(function() urls, stop = start_peer("peer-key") end)
  teardown(function() if stop then stop() end end)

  it("is accepted by E2B's official SDK: files, commands, timeouts, background, reconnect, kill, lifecycle", function()
    local ok, out = sh.run(("NPM_DIR=%s node %s/sdk_check.mjs %s %s peer-key"):format(
      sh.quote(NPM), sh.quote(JS), urls.api, urls.envd))
    assert(ok, out)
    assert.matches("all passed\n?$", out)
    local n = select(2, out:gsub("\nok ", "\n"))
    assert.is_true(n >= 4, out)
    assert.is_nil(out:find("FAIL", 1, true))
  end)

  it("refuses a wrong API key and a wrong access token, and a sandbox that is gone", function()
    assert.equal(401, (http("POST", urls.api .. "/v2/sandboxes", { ["X-API-Key"] = "wrong" }, "{}")))
    local code, body = http("POST", urls.api .. "/v2/sandboxes", { ["X-API-Key"] = "peer-key",
      ["Content-Type"] = "application/json" }, '{"templateID":"base","timeout":30}')
    assert.equal(201, code)
    local sbx = json.decode(body)
    local rpc = urls.envd .. "/filesystem.Filesystem/Stat"
    local function stat(token)
      return http("POST", rpc, { ["Content-Type"] = "application/json", ["Connect-Protocol-Version"] = "1",
        ["E2b-Sandbox-Id"] = sbx.sandboxID, ["X-Access-Token"] = token }, '{"path":"/home/user"}')
    end
    assert.equal(200, (stat(sbx.envdAccessToken)))
    local bad, why = stat("not-the-token")
    assert.equal(401, bad)
    assert.matches("unauthenticated", why)
    -- a path that leaves the sandbox's root is refused, not served from the peer's host
    local esc = http("POST", rpc, { ["Content-Type"] = "application/json", ["Connect-Protocol-Version"] = "1",
      ["E2b-Sandbox-Id"] = sbx.sandboxID, ["X-Access-Token"] = sbx.envdAccessToken }, '{"path":"/../../etc"}')
    assert.is_true(esc == 400 or esc == 404, "an escape must not be served: " .. tostring(esc))
    assert.equal(204, (http("DELETE", urls.api .. "/sandboxes/" .. sbx.sandboxID, { ["X-API-Key"] = "peer-key" })))
    assert.equal(404, (stat(sbx.envdAccessToken)))
    assert.equal(404, (http("DELETE", urls.api .. "/sandboxes/" .. sbx.sandboxID, { ["X-API-Key"] = "peer-key" })))
  end)
end)
