-- Loopback HTTPS servers for the secrets specs (spec/support/tls_server.py):
-- a test root made with the openssl tool, servers whose certificates it
-- signed (or that nothing signed), each logging the request heads that
-- reached it.
local sh = require "support.sh"
local backends = require "support.backends"
local httpd = require "support.httpd"

local M = {}

local function run(cmd)
  local ok, out = sh.run(cmd)
  assert(ok, cmd .. "\n" .. tostring(out))
  return out
end

--- A test root and certificates in a new directory: {dir, ca, cert, key (for 127.0.0.1, signed by
--- the root), self_cert, self_key (127.0.0.1, self-signed: no one trusts it)}.
function M.certs()
  local d = backends.tmpdir("tls-certs")
  local q = sh.quote(d)
  run(("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
    .. "-days 2 -subj '/CN=sandbox spec root' -addext 'basicConstraints=critical,CA:TRUE' "
    .. "-addext 'keyUsage=critical,keyCertSign' 2>&1 && "
    .. "printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext && "
    .. "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr "
    .. "-subj '/CN=127.0.0.1' 2>&1 && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
    .. "-out srv.pem -days 1 -extfile ext 2>&1 && "
    .. "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout self.key -out self.pem "
    .. "-days 1 -subj '/CN=127.0.0.1' -addext 'subjectAltName=IP:127.0.0.1' 2>&1"):format(q))
  return { dir = d, ca = d .. "/ca.pem", cert = d .. "/srv.pem", key = d .. "/srv.key", self_cert = d .. "/self.pem",
           self_key = d .. "/self.key" }
end

--- A bare repository with one commit under a new directory, for git's smart HTTP: {root, head}.
function M.git_repo()
  local d = backends.tmpdir("tls-git")
  local q = sh.quote(d)
  run(("cd %s && git init -q src && git -C src -c user.name=spec -c user.email=spec@example.org commit -q "
    .. "--allow-empty -m one && git clone -q --bare src repo.git"):format(q))
  return { root = d, head = run(("git -C %s/repo.git rev-parse HEAD"):format(q)):match("%x+") }
end

--- Start a server: {port, url(path), heads() -> every request head as one string, stop()}.
--- opts: cert, key, expect (the Authorization it requires), git (a repository root); or silent
--- (a server that takes connections and never answers).
function M.start(opts)
  local log = backends.tmpdir("tls-server") .. "/heads.log"
  local p = sh.popen(opts.silent and ("exec python3 spec/support/tls_server.py --silent " .. sh.quote(log))
    or ("exec env %s python3 spec/support/tls_server.py %s %s %s %s"):format(
      opts.expect and ("EXPECT_AUTH=" .. sh.quote(opts.expect)) or "", sh.quote(opts.cert), sh.quote(opts.key),
      sh.quote(log), opts.git and sh.quote(opts.git) or ""))
  local line = p:read("*l") or ""
  local port, pid = line:match("^(%d+) (%d+)$")
  assert(port, "the TLS test server did not start: " .. line)
  local s = { port = tonumber(port), pid = tonumber(pid), pipe = p }
  function s.url(path) return ("https://127.0.0.1:%d%s"):format(s.port, path or "/") end
  return httpd.track(s, log)
end

M.stop_all = httpd.stop_all

return M
