-- Run by spec/isolation_spec.lua as an unprivileged user (setpriv):
--   lua5.4 spec/support/attacks_as_user.lua <root> <host pid> <shm id> <socket path>
-- prints one "name<TAB>output" line per attack (newlines as \n).
local build = os.getenv("SANDBOX_BUILD") or "./build"
package.path = "./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local attacks = require "support.attacks"
local out = attacks.run(arg[1], { pid = arg[2], shm = arg[3], sock = arg[4] })
for k, v in pairs(out) do
  if type(v) == "string" then io.write(k, "\t", (v:gsub("\n", "\\n")), "\n") end
end
local c = out.confinement
io.write("userns\t", tostring(c.namespaces and c.namespaces.user), "\n")
