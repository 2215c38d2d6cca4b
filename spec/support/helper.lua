-- Loaded before every spec file: make sure the module under test is the one
-- just built (build/ or build-asan/), never a copy installed elsewhere.
local build = os.getenv("SANDBOX_BUILD") or "./build"
package.cpath = build .. "/?.so;" .. package.cpath
package.path = "./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path

-- The specs run on 5.1 and LuaJIT too, where unpack is a global.
table.unpack = table.unpack or unpack -- luacheck: ignore

-- Container test roots are removed after every test file.
local backends = require "support.backends"
local busted = require "busted"
busted.subscribe({ "file", "end" }, function()
  backends.cleanup()
  return nil, true
end)

-- A build without Linux's layers: the suite's commands unconfined, with the
-- host's network (spec/support/unlayered.lua)
require "support.unlayered"
local caps = require("sandbox").capabilities()

-- Commands fail closed on a kernel without Landlock (SPEC §6): the specs that
-- run them cannot pass there, and the run says so before anything else.
if caps.confine_layers and not caps.landlock_abi and not os.getenv("SANDBOX_TEST_UNCONFINED") then
  require("support.host").note("the confined-command specs",
    "this kernel has no Landlock (Linux 5.13 or later, CONFIG_SECURITY_LANDLOCK, lsm=landlock): commands are refused there by design")
end
