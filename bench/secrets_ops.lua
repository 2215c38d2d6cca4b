-- The cost of the secrets proxy's TLS interception (issue 33) against the
-- plain CONNECT tunnel a host without a secret gets, side by side in each
-- round: curl in a confined ContainerSandbox, through the sandbox's proxy,
-- to a loopback HTTPS server (bench/tls_srv.c, OpenSSL, keep-alive).
--   lua5.4 bench/secrets_ops.lua [requests] [rounds]
-- Rows: requests per second on one kept-alive connection (tiny answers),
-- and MB/s of one 64 MiB download. Medians of the rounds; ratios within
-- rounds. BENCH_CPU=1 prints each run's wall time and the CPU time of this
-- process (the proxy runs on its service thread) to stderr.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local sandbox = require "sandbox"
local clock = require("sandbox.core").clock

local N, ROUNDS = tonumber(arg[1]) or 2000, tonumber(arg[2]) or 5
local B = os.getenv("BENCH_BUILD") or "build/bench"

local function sh(cmd)
  local p = io.popen(cmd)
  local out = p:read("*a")
  local ok = p:close()
  assert(ok, cmd .. "\n" .. out)
  return out
end

local dir = sh("mktemp -d /dev/shm/sb-secrets-bench.XXXXXX"):match("%S+")
sh(("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
  .. "-days 1 -subj '/CN=bench root' -addext 'basicConstraints=critical,CA:TRUE' 2>&1 && "
  .. "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv.key -out srv.csr -subj '/CN=127.0.0.1' "
  .. "2>&1 && printf 'subjectAltName=IP:127.0.0.1\\n' > ext && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
  .. "-CAcreateserial -out srv.pem -days 1 -extfile ext 2>&1 && mkdir root"):format(dir))
sh(("cd %s && (%s/tls_srv srv.pem srv.key > port.txt & echo $! > pid.txt)"):format(dir, os.getenv("PWD") .. "/" .. B))
local port
for _ = 1, 100 do
  local f = io.open(dir .. "/port.txt")
  port = f and tonumber(f:read("*l") or "")
  if f then f:close() end
  if port then break end
  sh("sleep 0.05")
end
assert(port, "bench/tls_srv did not start")
local host = "127.0.0.1:" .. port
local f = assert(io.open(dir .. "/urls.txt", "w"))
for _ = 1, N do f:write(('url = "https://%s/s"\noutput = "/dev/null"\n'):format(host)) end
f:close()

local function box(secret)
  local o = { base_dir = dir .. "/root", allowed_hosts = { host }, read_paths = { dir }, allow_shell = true }
  if secret then
    o.secrets = { { host = host, header = "Authorization", value = "Bearer bench" } }
    o.upstream_ca = dir .. "/ca.pem"
  end
  return assert(sandbox.container(o))
end
local tunnel, icpt = box(false), box(true)
-- the tunnel's curl trusts the server's own root; the intercepted one the sandbox's bundle
local function timed(sb, args)
  local cmd = "curl -sS --fail " .. (sb == tunnel and ("--cacert " .. dir .. "/ca.pem ") or "") .. args
  local t, cpu = clock(), os.clock()
  local r = assert(sb:exec_shell(cmd))
  if os.getenv("BENCH_CPU") then io.stderr:write(("%s wall %.3f proxy cpu %.3f\n"):format(sb == tunnel and "tunnel" or "icpt", clock() - t, os.clock() - cpu)) end
  assert(r.exit_code == 0, ("exit %s: %s%s"):format(tostring(r.exit_code), r.stdout, r.stderr))
  return clock() - t
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end
local rows = { reqs = { tunnel = {}, icpt = {}, ratio = {} }, mbs = { tunnel = {}, icpt = {}, ratio = {} } }
timed(tunnel, "-K " .. dir .. "/urls.txt") -- warm both: the first leaf is issued here
timed(icpt, "-K " .. dir .. "/urls.txt")
for _ = 1, ROUNDS do
  local a, b = N / timed(tunnel, "-K " .. dir .. "/urls.txt"), N / timed(icpt, "-K " .. dir .. "/urls.txt")
  rows.reqs.tunnel[#rows.reqs.tunnel + 1], rows.reqs.icpt[#rows.reqs.icpt + 1] = a, b
  rows.reqs.ratio[#rows.reqs.ratio + 1] = b / a
  local big = "-o /dev/null https://" .. host .. "/big"
  local c, d = 64 / timed(tunnel, big), 64 / timed(icpt, big)
  rows.mbs.tunnel[#rows.mbs.tunnel + 1], rows.mbs.icpt[#rows.mbs.icpt + 1] = c, d
  rows.mbs.ratio[#rows.mbs.ratio + 1] = d / c
end
tunnel:dispose()
icpt:dispose()
sh(("kill $(cat %s/pid.txt); rm -rf %s"):format(dir, dir))

print(("secrets proxy: interception vs CONNECT tunnel (%d rounds, medians; curl in a confined sandbox)"):format(ROUNDS))
print(("| row | tunnel | intercepted | intercepted / tunnel |"))
print("|---|---:|---:|---:|")
print(("| requests/s, %d on one kept-alive connection | %.0f | %.0f | %.2f× |"):format(N, median(rows.reqs.tunnel),
  median(rows.reqs.icpt), median(rows.reqs.ratio)))
print(("| MB/s, one 64 MiB download | %.0f | %.0f | %.2f× |"):format(median(rows.mbs.tunnel), median(rows.mbs.icpt),
  median(rows.mbs.ratio)))
