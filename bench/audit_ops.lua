-- The audit trail's cost (SPEC §17, issue 32: 10 000 events under 5 % of
-- the operations' own time), side by side in one run: the same 10 000 file
-- operations (a write, then reads and stats of small files) on a sandbox
-- without audit and on one with audit_log (and with audit_log plus an
-- audit function), on a ContainerSandbox over the tmpfs and a VirtualSandbox.
--   lua5.4 bench/audit_ops.lua TMPFS_DIR   (make bench runs it)
local lib = dofile("bench/lib.lua")
local sandbox = require "sandbox"

local TMP = assert(arg[1], "usage: audit_ops.lua TMPFS_DIR")
local ROUNDS, sh, now, median = lib.ROUNDS, lib.sh, lib.now, lib.median
local N = 10000

-- one round: N operations (a tenth writes, the rest reads and stats)
local function work(sb)
  for i = 1, N do
    local p = "d/f" .. (i % 100) .. ".txt"
    local k = i % 10
    if k == 0 then assert(sb:write_file(p, "some content " .. i))
    elseif k < 6 then assert(sb:read_file(p))
    else assert(sb:stat(p)) end
  end
end

local function make(kind, extra, tag)
  local o = { exec = false }
  if kind == "container" then
    o.base_dir = TMP .. "/audit-" .. tag
    sh("rm -rf " .. o.base_dir .. " && mkdir -p " .. o.base_dir)
  else
    o.exec = nil
  end
  for k, v in pairs(extra) do o[k] = v end
  local sb = assert(sandbox[kind](o))
  for i = 0, 99 do assert(sb:write_file("d/f" .. i .. ".txt", "x")) end
  return sb
end

local function row(kind)
  local log = TMP .. "/audit-" .. kind .. ".log"
  sh("rm -f " .. log .. " " .. log .. ".head " .. log .. "2 " .. log .. "2.head")
  local seen = 0
  local sides = {
    { "none", make(kind, {}, "a") },
    { "audit_log", make(kind, { audit_log = log }, "b") },
    { "audit_log + audit fn", make(kind, { audit_log = log .. "2", audit = function() seen = seen + 1 end }, "c") },
  }
  local t = {}
  for _, s in ipairs(sides) do t[s[1]] = {} end
  for _ = 1, ROUNDS do -- the sides alternate within each round
    for _, s in ipairs(sides) do
      local t0 = now()
      work(s[2])
      t[s[1]][#t[s[1]] + 1] = now() - t0
    end
  end
  for _, s in ipairs(sides) do s[2]:dispose() end
  local base = median(t.none)
  print(("%-9s %d operations: %.1f ms without audit"):format(kind, N, base * 1000))
  for i = 2, #sides do
    local m = median(t[sides[i][1]])
    print(("  with %-20s %.1f ms: %.3f x, %+.1f %% (target < 5 %%)"):format(sides[i][1], m * 1000, m / base,
      (m / base - 1) * 100))
  end
  local ok, n = require("sandbox.audit").verify(log)
  print(("  the log: %s, %s lines"):format(ok and "verifies" or ("BROKEN " .. tostring(n)), tostring(n)))
end

print(("audit trail, %d rounds (median)"):format(ROUNDS))
row("container")
row("virtual")
