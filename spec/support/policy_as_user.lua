-- Run by spec/policy_commands_spec.lua as an unprivileged user (setpriv):
--   lua5.4 spec/support/policy_as_user.lua <case> <kind> <dir>
-- prints one "field<TAB>text" line per field of the case's result (newlines
-- as \n, backslashes as \\).
local build = os.getenv("SANDBOX_BUILD") or "./build"
package.path = "./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
package.cpath = build .. "/?.so;" .. package.cpath
local cases = require "support.policy_cases"
local out = cases.cases[arg[1]](arg[2], arg[3])
for k, v in pairs(out) do
  io.write(k, "\t", (tostring(v):gsub("\\", "\\\\"):gsub("\n", "\\n")), "\n")
end
