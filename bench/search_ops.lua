-- Search rows of SPEC §10, measured side by side in one run: grep (literal,
-- ignore-case, regex with a literal, regex without one) and glob over tmpfs copies of real trees, against
-- ripgrep (default threads and -j1), grep -rn and find -name. Every row
-- checks that the result counts agree before it prints a ratio.
--   lua5.4 bench/search_ops.lua TMPFS_DIR   (make bench runs it)
local lib = dofile("bench/lib.lua")
local sandbox = require "sandbox"

local TMP = assert(arg[1], "usage: search_ops.lua TMPFS_DIR")
local ROUNDS, sh, now, median = lib.ROUNDS, lib.sh, lib.now, lib.median

local function wall(f)
  local t0 = now()
  local r = f()
  return now() - t0, r
end

local trees = {
  { name = "include", src = "/usr/include" },
  { name = "lua-share", src = "/usr/share/lua" },
}
if os.execute("test -d /usr/share/perl") then trees[2] = { name = "perl", src = "/usr/share/perl" } end

local rows = {
  { "literal", "static", { literal = true }, "-F" },
  { "literal return", "return", { literal = true }, "-F" },
  { "ignore-case", "error", { literal = true, ignore_case = true }, "-F -i" },
  { "regex", "malloc *\\(", {}, "" },
  -- no literal to look for first: every line through the engine, Unicode classes and boundaries
  { "regex \\d \\b", "\\b\\d{5,}\\b", {}, "" },
}

-- ctL, vtL: mode = "lines" (one string in rg's words, no table a hit: the
-- row SPEC §10 sets against rg, targets ct <= 0.9x, vt <= 0.5x)
print(("%-10s %-16s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s"):format("tree", "search", "hits", "ct ms", "vt ms",
  "rg ms", "ct/rg", "ct/rg-j1", "ct/grep", "vt/rg", "ctL/rg", "vtL/rg"))
local met = { ct = 0, vt = 0, n = 0 }
for _, t in ipairs(trees) do
  local dir = TMP .. "/search-" .. t.name
  sh(("rm -rf %s && mkdir -p %s && cp -r %s %s/tree"):format(dir, dir, t.src, dir))
  local ct = assert(sandbox.container { base_dir = dir, max_read_bytes = "64MB" })
  local files = ct:snapshot { max_bytes = 1 << 30 }
  local vt = sandbox.virtual { files = files, max_read_bytes = "64MB", max_total_bytes = "1GB" }
  for _, r in ipairs(rows) do
    local o = { max_results = 1000000 }
    for k, v in pairs(r[3]) do o[k] = v end
    local samples = { ct = {}, vt = {}, rg = {}, rg1 = {}, grep = {}, ctl = {}, vtl = {} }
    local ol = { mode = "lines" }
    for k, v in pairs(o) do ol[k] = ol[k] or v end
    local hits = {}
    local rgcmd = ("cd %s && rg --no-config -n %s -e '%s' tree"):format(dir, r[4], r[2])
    local grepcmd = ("cd %s && grep -rn %s -e '%s' tree"):format(dir, r[4] == "" and "-E" or r[4], r[2])
    for _ = 1, ROUNDS do
      local dt, res = wall(function() return ct:grep(r[2], o) end)
      samples.ct[#samples.ct + 1], hits.ct = dt, #res
      dt, res = wall(function() return vt:grep(r[2], o) end)
      samples.vt[#samples.vt + 1], hits.vt = dt, #res
      dt, res = wall(function() return select(2, ct:grep(r[2], ol)) end)
      samples.ctl[#samples.ctl + 1], hits.ctl = dt, res
      dt, res = wall(function() return select(2, vt:grep(r[2], ol)) end)
      samples.vtl[#samples.vtl + 1], hits.vtl = dt, res
      dt, res = wall(function() return sh(rgcmd .. " | wc -l") end)
      samples.rg[#samples.rg + 1], hits.rg = dt, tonumber(res)
      dt, res = wall(function() return sh(rgcmd:gsub("rg ", "rg -j1 ", 1) .. " | wc -l") end)
      samples.rg1[#samples.rg1 + 1] = dt
      dt, res = wall(function() return sh(grepcmd .. " | wc -l") end)
      samples.grep[#samples.grep + 1], hits.grep = dt, tonumber(res)
    end
    local same = hits.ct == hits.vt and hits.ct == hits.rg and hits.ctl == hits.ct and hits.vtl == hits.ct
    local m = {}
    for k, v in pairs(samples) do m[k] = median(v) end
    met.n, met.ct, met.vt = met.n + 1, met.ct + (m.ctl / m.rg <= 0.9 and 1 or 0), met.vt + (m.vtl / m.rg <= 0.5 and 1 or 0)
    if same then
      lib.target(("grep %s %s, container ÷ rg"):format(t.name, r[1]), m.ctl / m.rg, "time", 0.9)
      lib.target(("grep %s %s, VirtualSandbox ÷ rg"):format(t.name, r[1]), m.vtl / m.rg, "time", 0.5)
    end
    print(("%-10s %-16s %8d %8.1f %8.1f %8.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f%s"):format(t.name, r[1], hits.ct,
      m.ct * 1e3, m.vt * 1e3, m.rg * 1e3, m.ct / m.rg, m.ct / m.rg1, m.ct / m.grep, m.vt / m.rg, m.ctl / m.rg,
      m.vtl / m.rg, same and "" or ("  COUNTS DIFFER: rg %d, virtual %d, grep %d, lines %d/%d"):format(hits.rg,
        hits.vt, hits.grep, hits.ctl, hits.vtl)))
  end
  -- glob **/*.c against find -name
  local gs, fs = {}, {}
  local gn, fn
  for _ = 1, ROUNDS do
    local dt, res = wall(function() return ct:glob("**/*.c", { max_results = 1000000 }) end)
    gs[#gs + 1], gn = dt, #res
    dt, res = wall(function() return sh(("cd %s && find . -name '*.c' -type f | wc -l"):format(dir)) end)
    fs[#fs + 1], fn = dt, tonumber(res)
  end
  print(("%-10s %-16s %8d %8.1f %8s %8.1f %8.2f  (find -name)%s"):format(t.name, "glob **/*.c", gn,
    median(gs) * 1e3, "", median(fs) * 1e3, median(gs) / median(fs), gn == fn and "" or "  COUNTS DIFFER: find " .. fn))
  ct:dispose()
  vt:dispose()
  sh("rm -rf " .. dir)
end
print(("grep mode = \"lines\" against rg: container <= 0.9x met in %d of %d rows, virtual <= 0.5x in %d of %d"):format(
  met.ct, met.n, met.vt, met.n))

-- ---- big files: read_file / write_file of 50 MB against C -----------------
local BENCH = os.getenv("BENCH_BUILD") or "build/bench"
local big = TMP .. "/bigfile"
sh(("mkdir -p %s && head -c 52428800 /dev/urandom > %s/f"):format(big, big))
local ct = assert(sandbox.container { base_dir = big, max_read_bytes = "64MB", max_write_bytes = "64MB" })
local vt = sandbox.virtual { max_read_bytes = "64MB", max_write_bytes = "64MB", max_total_bytes = "128MB" }
local data = ct:read_file("f")
assert(vt:write_file("f", data))
local function per_op(f)
  local t = {}
  for i = 1, ROUNDS * 2 do
    collectgarbage()
    local t0 = now()
    f()
    t[i] = now() - t0
  end
  return median(t) * 1e3
end
local c_read = tonumber(sh(("%s/bigfile_c read %s/f %d"):format(BENCH, big, ROUNDS * 2)))
sh(("head -c 52428800 /dev/zero > %s/g"):format(big))
local c_write = tonumber(sh(("%s/bigfile_c write %s/g %d"):format(BENCH, big, ROUNDS * 2)))
local ct_read = per_op(function() assert(#ct:read_file("f") == #data) end)
local vt_read = per_op(function() assert(#vt:read_file("f") == #data) end)
local ct_write = per_op(function() assert(ct:write_file("g", data)) end)
print(("%-27s %8.1f ms   C read into a fresh buffer %8.1f ms   %.2fx  (target <= 1.3x)"):format("container read_file 50 MB", ct_read, c_read, ct_read / c_read))
print(("%-27s %8.1f ms   C read into a fresh buffer %8.1f ms   %.2fx  (target <= 1.3x)"):format("virtual read_file 50 MB", vt_read, c_read, vt_read / c_read))
print(("%-27s %8.1f ms   C write                    %8.1f ms   %.2fx  (target <= 1.3x)"):format("container write_file 50 MB", ct_write, c_write, ct_write / c_write))
ct:dispose()
vt:dispose()
sh("rm -rf " .. big)
