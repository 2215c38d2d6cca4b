-- Processes by a marker in their command line, from /proc (no procps
-- needed, and no helper process that would show up itself). Zombies are
-- listed apart: they are dead, only not yet reaped by their parent.
local sandbox = require "sandbox"
local sh = require "support.sh"

local M = {}

local function pids()
  local proc = assert(sandbox.container { base_dir = "/proc", mode = "r", exec = false })
  local out = {}
  for _, e in ipairs(assert(proc:readdir("."))) do
    if e.name:match("^%d+$") then out[#out + 1] = e.name end
  end
  proc:dispose()
  return out
end

local read = sh.read_file

--- pids whose cmdline contains marker: live, zombies
function M.find(marker)
  local live, zombies = {}, {}
  for _, name in ipairs(pids()) do
    do
      local cmd = read("/proc/" .. name .. "/cmdline")
      if cmd and cmd:gsub("%z", " "):find(marker, 1, true) then
        local stat = read("/proc/" .. name .. "/stat") or ""
        local state = stat:match("^%d+ %b() (%a)")
        if state == "Z" then zombies[#zombies + 1] = tonumber(name)
        elseif state then live[#live + 1] = tonumber(name) end
      end
    end
  end
  return live, zombies
end

--- Children of pid that are zombies (what the module must never leave).
function M.zombie_children(pid)
  local out = {}
  for _, name in ipairs(pids()) do
    local stat = read("/proc/" .. name .. "/stat") or ""
    local state, ppid = stat:match("^%d+ %b() (%a) (%d+)")
    if state == "Z" and tonumber(ppid) == tonumber(pid) then out[#out + 1] = tonumber(name) end
  end
  return out
end

--- A marker unique to this test run, usable as a sleep duration argument.
local n = 0
function M.marker()
  n = n + 1
  return ("1000%d.%d%d"):format(os.time() % 100000, n, math.random(1000, 9999))
end

return M
