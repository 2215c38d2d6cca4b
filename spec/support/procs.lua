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

--- Every pid, as strings.
M.all = pids

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

--- Live processes (zombies left out) descending from pid: what a call
--- that returned may have left running.
function M.descendants(pid)
  local parent, live = {}, {}
  for _, name in ipairs(pids()) do
    local stat = read("/proc/" .. name .. "/stat") or ""
    local state, ppid = stat:match("^%d+ %b() (%a) (%d+)")
    if state then
      parent[name] = ppid
      live[name] = state ~= "Z" and state ~= "X"
    end
  end
  local out = {}
  for name in pairs(parent) do
    local p, hops = parent[name], 0
    while p and p ~= tostring(pid) and hops < 64 do p, hops = parent[p], hops + 1 end
    if p == tostring(pid) and live[name] then out[#out + 1] = tonumber(name) end
  end
  return out
end

--- A marker unique to this test run, usable as a sleep duration argument:
-- this process's pid is in it (two Lua lanes running the same case at once
-- must not count each other's processes), and the duration stays under
-- three days, so a process a failed case leaves behind ends by itself.
local n = 0
local self_pid = tonumber((read("/proc/self/stat") or ""):match("^(%d+)")) or 0
function M.marker()
  n = n + 1
  return ("%d.%d%07d%d"):format(100000 + os.time() % 100000, n, self_pid, math.random(1000, 9999))
end

return M
