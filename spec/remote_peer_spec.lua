-- The RemoteSandbox's test peer (SPEC §15, issue "RemoteSandbox"): E2B's
-- REST control plane and envd's Connect services (spec/js/e2b/peer.mjs, on
-- the reference Connect server) over temporary directories. It counts only
-- for what E2B's official npm SDK accepts, so the SDK's own calls run
-- against it first (spec/js/e2b/sdk_check.mjs); the backend's tests build
-- on it. What the peer must refuse is checked too: a peer that accepts
-- anything would make the remote tests meaningless.
local sh = require "support.sh"

local peer_lib = require "support.e2b_peer"
local http = peer_lib.http
local NPM, JS = peer_lib.NPM, peer_lib.JS

describe("the E2B test peer", function()
  local urls
  setup(function() urls = peer_lib.start("peer-key") end)
  teardown(function() if urls then urls.stop() end end)

  -- at each envd version the peer stands for: the SDK picks its upload
  -- (multipart below 0.5.7) from the envdVersion it is told
  for _, version in ipairs { "0.6.13", "0.5.6", "0.5.1" } do
    it("is accepted by E2B's official SDK at envd " .. version
      .. ": files, links, commands, timeouts, background, reconnect, kill, lifecycle", function()
      local p = version == "0.6.13" and urls or peer_lib.start("peer-key", { envd_version = version })
      local ok, out = sh.run(("NPM_DIR=%s node %s/sdk_check.mjs %s %s peer-key"):format(
        sh.quote(NPM), sh.quote(JS), p.api, p.envd))
      if p ~= urls then p.stop() end
      assert(ok, out)
      assert.matches("all passed\n?$", out)
      local n = select(2, ("\n" .. out):gsub("\nok ", "\n"))
      assert.is_true(n >= 6, out)
      assert.is_nil(out:find("FAIL", 1, true))
    end)
  end

  it("refuses a wrong API key and a wrong access token, and a sandbox that is gone", function()
    assert.equal(401, (http("POST", urls.api .. "/v2/sandboxes", { ["X-API-Key"] = "wrong" }, "{}")))
    local sbx = peer_lib.create(urls, "peer-key", 30)
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
    -- as the API and envd: no `secure`, no token issued, and envd then takes any call
    -- (api/internal/handlers/sandbox_create.go; envd/internal/api/auth.go, WithAuthorization)
    local open = peer_lib.create(urls, "peer-key", 30, true)
    assert.is_nil(open.envdAccessToken)
    assert.equal(200, (http("POST", rpc, { ["Content-Type"] = "application/json", ["Connect-Protocol-Version"] = "1",
      ["E2b-Sandbox-Id"] = open.sandboxID }, '{"path":"/home/user"}')))
  end)
end)
