-- Loopback HTTP servers for the network specs (build/test/httpd, from
-- spec/c/httpd.c). Each logs the request lines it received, so a test can
-- assert that a refused request never arrived.
local sh = require "support.sh"
local backends = require "support.backends"

local M = {}

local running = {}

--- Start a server on 127.0.0.1 (or `bind`, "0.0.0.0": every address of
--- the host), a free port. Returns {port, pid, url(path), requests() ->
--- {request lines}, stop()}.
function M.start(bind)
  local log = backends.tmpdir("httpd") .. "/requests.log"
  local p = sh.popen(("exec %s/test/httpd %s%s"):format(sh.build, bind and ("--bind " .. bind .. " ") or "",
    sh.quote(log)))
  local port, pid = p:read("*l"):match("^(%d+) (%d+)$")
  local s = { port = tonumber(port), pid = tonumber(pid), pipe = p, log = log }
  function s.url(path) return ("http://127.0.0.1:%d%s"):format(s.port, path or "/") end
  function s.requests()
    local f = io.open(log)
    local t = {}
    if f then
      for l in f:lines() do t[#t + 1] = l end
      f:close()
    end
    return t
  end
  return M.track(s, log .. ".heads")
end

--- A started server {pid, pipe} gets heads() (every request head that
--- arrived, as one string, from the file heads_log) and stop(); stop_all
--- stops it. Shared with support.tls_peer.
function M.track(s, heads_log)
  function s.heads()
    local f = io.open(heads_log)
    if not f then return "" end
    local t = f:read("*a")
    f:close()
    return t
  end
  function s.stop()
    if not s.pipe then return end
    sh.run("kill " .. s.pid)
    s.pipe:close()
    s.pipe = nil
  end
  running[#running + 1] = s
  return s
end

function M.stop_all()
  for i = #running, 1, -1 do
    running[i].stop()
    running[i] = nil
  end
end

--- curl on the host (not in a sandbox): status code and body.
function M.curl(url, headers)
  local h = ""
  for _, x in ipairs(headers or {}) do h = h .. " -H " .. sh.quote(x) end
  local ok, out = sh.run(("curl -s -m 5 -w '\\n%%{http_code}' %s %s"):format(h, sh.quote(url)))
  local body, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code) or 0, body or out, ok
end

return M
