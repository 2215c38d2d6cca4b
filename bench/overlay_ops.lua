-- OverlaySandbox rows of SPEC §10 / issue 18, side by side in one run:
--   a read of an untouched file: overlay ÷ container over the same tree;
--   changes() + diff() of 1 000 edited files in a 10 000-file tree ÷
--   git diff --no-index of the base and an edited copy (the same edits).
-- The diff's line counts are checked against git's before a ratio prints.
--   lua5.4 bench/overlay_ops.lua TMPFS_DIR   (make bench runs it)
local lib = dofile("bench/lib.lua")
local sandbox = require "sandbox"

local TMP = assert(arg[1], "usage: overlay_ops.lua TMPFS_DIR")
local ROUNDS, sh, now, median = lib.ROUNDS, lib.sh, lib.now, lib.median

local function time(f, n)
  local runs = {}
  for _ = 1, ROUNDS do
    local t0 = now()
    for _ = 1, n or 1 do f() end
    runs[#runs + 1] = now() - t0
  end
  return median(runs)
end

-- a 10 000-file tree: 100 directories of 100 files of 40 lines
local base = TMP .. "/overlay-base"
sh("rm -rf " .. base .. " " .. TMP .. "/overlay-copy")
local writer = assert(sandbox.container { base_dir = TMP, exec = false })
for d = 1, 100 do
  for f = 1, 100 do
    local lines = {}
    for l = 1, 40 do lines[l] = ("dir %d file %d line %d: some text to diff"):format(d, f, l) end
    assert(writer:write_file(("overlay-base/d%03d/f%03d.txt"):format(d, f), table.concat(lines, "\n") .. "\n"))
  end
end
writer:dispose()

local ct = assert(sandbox.container { base_dir = base, exec = false })
local ov = assert(sandbox.overlay { base_dir = base, exec = false })
local ou = assert(sandbox.overlay { base_dir = base, exec = false, confine = { namespaces = false } })
assert(ou.overlay_view == "userspace")
local target = "d050/f050.txt"
assert(ct:read_file(target) == ov:read_file(target) and ct:read_file(target) == ou:read_file(target))
-- the two sides alternate within each round (a slower stretch of the
-- machine falls on both), and the ratio is the median of the rounds' ratios
local function side_by_side(fa, fb, n)
  local ta, tb, q = {}, {}, {}
  for _ = 1, ROUNDS do
    local t0 = now()
    for _ = 1, n do fa() end
    local a = now() - t0
    t0 = now()
    for _ = 1, n do fb() end
    local b = now() - t0
    ta[#ta + 1], tb[#tb + 1], q[#q + 1] = a, b, a / b
  end
  return median(ta) / n, median(tb) / n, median(q)
end
local to, tc, q = side_by_side(function() ov:read_file(target) end, function() ct:read_file(target) end, 2000)
print(("overlay read of an untouched file: %.1f µs, container %.1f µs: %.2fx (target <= 1.1x)"):format(
  to * 1e6, tc * 1e6, q))
lib.target("overlay read of an untouched file ÷ container", q, "time", 1.1)
local tu, tc2, qu = side_by_side(function() ou:read_file(target) end, function() ct:read_file(target) end, 2000)
print(("  the same through the userspace overlay (no kernel mount): %.1f µs, container %.1f µs: %.2fx"):format(
  tu * 1e6, tc2 * 1e6, qu))
ou:dispose()

-- 1 000 edits: line 20 of every tenth file, in the overlay and in a copy
sh(("cp -a %s %s/overlay-copy"):format(base, TMP))
local copy = assert(sandbox.container { base_dir = TMP .. "/overlay-copy", exec = false })
local n = 0
for d = 1, 100 do
  for f = 1, 100, 10 do
    local p = ("d%03d/f%03d.txt"):format(d, f)
    local text = assert(ov:read_file(p)):gsub("line 20:", "LINE 20 (edited):")
    assert(ov:write_file(p, text))
    assert(copy:write_file(p, text))
    n = n + 1
  end
end
copy:dispose()
local d = assert(ov:diff())
local ours = select(2, d:gsub("\n%+[^+]", "")), select(2, d:gsub("\n%-[^-]", ""))
local git_stat = sh(("cd %s && git diff --no-index --numstat overlay-base overlay-copy | awk '{a+=$1; r+=$2} END {print a, r}'"):format(TMP))
local ga, gr = git_stat:match("(%d+) (%d+)")
assert(#ov:changes() == n, "changes() lists every edited file")
assert(tonumber(ga) == n and tonumber(gr) == n, "git counts " .. git_stat)
local tr = time(function()
  local c = ov:changes()
  local t = ov:diff()
  assert(#c == n and #t > 0)
end)
local tg = time(function() sh(("cd %s && git diff --no-index overlay-base overlay-copy > /dev/null"):format(TMP)) end)
print(("changes() + diff() of %d edited files in 10 000: %.0f ms, git diff --no-index %.0f ms: %.2fx (target <= 1x)"):format(
  n, tr * 1000, tg * 1000, tr / tg))
ov:dispose()
ct:dispose()
sh("rm -rf " .. base .. " " .. TMP .. "/overlay-copy")
