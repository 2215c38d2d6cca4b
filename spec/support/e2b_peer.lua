-- The E2B test peer (spec/js/e2b/peer.mjs) for the specs: start one, and
-- make a sandbox on it. The peer exits when the process that started it is
-- gone (it watches our pid), so no peer outlives a crashed run.
local json = require "sandbox.json"
local sh = require "support.sh"

local M = {}

M.NPM = sh.build:gsub("/build[^/]*$", "/build/npm")
M.JS = (os.getenv("PWD") or ".") .. "/spec/js/e2b"

--- A running peer: {api =, envd =, pid =, stop = fn}. opts.netns and
--- opts.host run it in that network namespace, listening on that address;
--- opts.latency (ms) delays every request it serves, as a far engine would
--- (peer.envd_near is then the same envd without the delay);
--- opts.page_size makes listings page sooner than the API's 100;
--- opts.envd_version ("0.5.1", "0.5.6", "0.6.13") is the envd it stands for,
--- lacking what that one lacks.
function M.start(key, opts)
  opts = opts or {}
  local f = assert(io.open("/proc/self/stat"))
  local me = f:read("*l"):match("^(%d+)")
  f:close()
  local where = opts.netns and ("ip netns exec " .. opts.netns .. " ") or ""
  local host = (opts.host and (" --host " .. opts.host) or "") .. (opts.latency and (" --latency " .. opts.latency) or "")
    .. (opts.page_size and (" --page-size " .. opts.page_size) or "")
    .. (opts.envd_version and (" --envd-version " .. opts.envd_version) or "")
  -- its output and temporary directories (the sandboxes' roots) in a
  -- directory of its own, which it removes as it exits (--own-tmpdir) and
  -- stop() too: a spec that kills the peer leaves nothing behind either
  local _, tmp = sh.run("mktemp -d")
  tmp = tmp:gsub("%s+$", "")
  local out = tmp .. "/peer.out"
  local _, pid = sh.run(("TMPDIR=%s NPM_DIR=%s exec %snode %s/peer.mjs --own-tmpdir --key %s --parent %s%s > %s 2>&1 < /dev/null & echo $!"):format(
    sh.quote(tmp), sh.quote(M.NPM), where, sh.quote(M.JS), sh.quote(key), me, host, sh.quote(out)))
  local peer
  for _ = 1, 100 do
    local line = (sh.read_file(out) or ""):match("^([^\n]*)\n")
    if line and line:match("^{") then peer = json.decode(line) break end
    sh.run("sleep 0.1")
  end
  assert(peer, "the peer did not start: " .. tostring(sh.read_file(out)))
  peer.pid = pid:match("%d+")
  function peer.stop()
    sh.run("kill -CONT " .. peer.pid .. " 2>/dev/null; kill " .. peer.pid .. " 2>/dev/null; sleep 0.2")
    sh.run("rm -rf " .. sh.quote(tmp))
  end
  return peer
end

--- One HTTP request with curl: status, body.
function M.http(method, url, headers, body)
  local h = {}
  for k, v in pairs(headers or {}) do h[#h + 1] = "-H " .. sh.quote(k .. ": " .. v) end
  local ok, out = sh.run(("curl -s -o - -w '\\n%%{http_code}' -X %s %s %s %s"):format(
    method, table.concat(h, " "), body and ("--data-binary " .. sh.quote(body)) or "", sh.quote(url)))
  assert(ok, out)
  local text, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), text
end

--- A network namespace with a veth link to this one: {name =, host =
--- (the host side's device), peer_ip =, cut = fn, mend = fn, remove = fn}.
--- cut takes the link down (packets dropped, no reset: a dead link, not a
--- closed connection), mend brings it back.
function M.netns()
  local id = tostring(math.random(1000, 9999)) .. tostring(os.time() % 1000)
  local name, dev, inner = "sbpeer" .. id, "sbvh" .. id, "sbvp" .. id
  local net = ("10.%d.%d"):format(200 + math.random(0, 50), math.random(0, 250))
  local ok, out = sh.run(table.concat({
    "ip netns add " .. name,
    ("ip link add %s type veth peer name %s"):format(dev, inner),
    ("ip link set %s netns %s"):format(inner, name),
    ("ip addr add %s.1/30 dev %s && ip link set %s up"):format(net, dev, dev),
    ("ip netns exec %s ip addr add %s.2/30 dev %s"):format(name, net, inner),
    ("ip netns exec %s ip link set %s up && ip netns exec %s ip link set lo up"):format(name, inner, name),
  }, " && "))
  assert(ok, "setting up the peer's network namespace (needs root and iproute2): " .. out)
  return {
    name = name, host = dev, peer_ip = net .. ".2",
    cut = function() assert(sh.run("ip link set " .. dev .. " down")) end,
    mend = function() assert(sh.run("ip link set " .. dev .. " up")) end,
    remove = function() sh.run("ip netns del " .. name .. "; ip link del " .. dev .. " 2>/dev/null; true") end,
  }
end

--- A new sandbox on the peer: its JSON (sandboxID, envdAccessToken, ...).
function M.create(peer, key, timeout, insecure)
  local code, body = M.http("POST", peer.api .. "/v2/sandboxes", { ["X-API-Key"] = key,
    ["Content-Type"] = "application/json" }, ('{"templateID":"base","timeout":%d,"secure":%s}'):format(timeout or 60,
    insecure and "false" or "true"))
  assert(code == 201, body)
  return json.decode(body)
end

return M
