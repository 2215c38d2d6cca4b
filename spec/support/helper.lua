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
