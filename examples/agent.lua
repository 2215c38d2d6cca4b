-- Demo: a scripted "agent" working in a VirtualSandbox.
-- Run: bash scripts/demo.sh   (or: make demo)
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath

local sandbox = require "sandbox"

local log = {}
local sb <close> = sandbox.virtual {
  cwd = "/workspace",
  files = {
    ["README.md"] = "# demo project\n",
    ["src/main.lua"] = "local function greet(name)\n  return 'hello ' .. name\nend\nprint(greet('world'))\n",
    ["src/util.lua"] = "-- TODO: add helpers\nreturn {}\n",
  },
  rules = { deny = { ".env" } },
  audit = function(e) log[#log + 1] = e end,
}

local function show(step, ...)
  local v, msg = ...
  io.write(("\n> %s\n"):format(step))
  if v == nil then
    io.write("  error: ", msg, "\n")
  elseif type(v) == "table" then
    for _, x in ipairs(v) do
      if type(x) == "table" then
        io.write("  ", x.path and ("%s:%d: %s"):format(x.path, x.line, x.text) or
          ("%-10s %s"):format(x.type, x.name), "\n")
      else
        io.write("  ", x, "\n")
      end
    end
  else
    io.write("  ", tostring(v):gsub("\n", "\n  "), "\n")
  end
end

print(("VirtualSandbox %s at %s (version %s)"):format(tostring(sb), sb.cwd, sandbox.version))
show("list the project root", sb:readdir("."))
show("find Lua files", sb:glob("**/*.lua"))
show("search for TODO", sb:grep("TODO"))
show("read src/main.lua", sb:read_file("src/main.lua"))
local src = sb:read_file("src/main.lua")
show("edit: greet -> welcome", sb:write_file("src/main.lua", (src:gsub("greet", "welcome"))))
show("read it back through the absolute path", sb:read_file("/workspace/src/main.lua"))
show("try to escape with ../../etc/passwd", sb:read_file("../../etc/passwd"))
show("try an absolute host path", sb:read_file("/etc/passwd"))
show("write a denied file", sb:write_file(".env", "TOKEN=x"))
show("run a command (the virtual sandbox has none)", sb:exec("ls", {}))

print(("\naudit log: %d operations"):format(#log))
for _, e in ipairs(log) do
  print(("  %-10s %-22s %s"):format(e.op, e.path or "", e.ok and "ok" or e.code))
end
