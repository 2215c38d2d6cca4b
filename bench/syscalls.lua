-- System calls per operation (issue 35, item 4): the ContainerSandbox's
-- read and create against the C baselines (bench/w2_c: openat2, and the
-- same atomic protocol), counted by strace over the second iteration of
-- 10 000 files (a phase's calls are those before its RESULT line; stdout
-- is line-buffered so each line is one write).
--   lua5.4 bench/syscalls.lua TMPFS_DIR   (make bench runs it)
local lib = dofile("bench/lib.lua")

local TMP = assert(arg[1], "usage: syscalls.lua TMPFS_DIR")
local B = os.getenv("BENCH_BUILD") or "build/bench"
if not os.execute("command -v strace >/dev/null 2>&1") then
  print("(strace missing: system calls per operation not counted)")
  return
end

-- {phase = {total =, [name] = count}} of the second iteration
local function count(cmd)
  local log = TMP .. "/syscalls.strace"
  lib.sh(("stdbuf -oL strace -qq -s 200 -o %s %s >/dev/null 2>&1"):format(log, cmd))
  local phases, acc = {}, {}
  for line in io.lines(log) do
    local ph, it = line:match('^write%(1, "RESULT %S+ (%a+) %d+ %S+ (%d+)')
    if ph then
      if it == "2" then phases[ph] = acc end
      acc = {}
    else
      local name = line:match("^([%w_]+)%(")
      if name then acc[name] = (acc[name] or 0) + 1 end
    end
  end
  os.remove(log)
  return phases
end

local function describe(t, n)
  local names, total = {}, 0
  for k, v in pairs(t or {}) do
    names[#names + 1] = k
    total = total + v
  end
  table.sort(names, function(a, b) return t[a] > t[b] or t[a] == t[b] and a < b end)
  local parts = {}
  for _, k in ipairs(names) do
    if t[k] / n >= 0.05 then parts[#parts + 1] = ("%s %.2f"):format(k, t[k] / n) end
  end
  return ("%.2f (%s)"):format(total / n, table.concat(parts, ", "))
end

local N = 10000
local sb = count(("lua5.4 bench/container_ops.lua sandbox %s/sc-sandbox 2"):format(TMP))
local c = count(("%s/w2_c openat2 %s/sc-c 2"):format(B, TMP))
local ca = count(("%s/w2_c openat2-atomic %s/sc-atomic 2"):format(B, TMP))
lib.sh(("rm -rf %s/sc-sandbox %s/sc-c %s/sc-atomic"):format(TMP, TMP, TMP))
print("system calls per operation (strace, 10 000 files of 100 bytes; each call's share at 0.05 and over):")
print(("  read    sandbox %s"):format(describe(sb.read, N)))
print(("          C openat2 %s"):format(describe(c.read, N)))
print(("  create  sandbox %s"):format(describe(sb.create, N)))
print(("          C, same atomic protocol %s"):format(describe(ca.create, N)))
