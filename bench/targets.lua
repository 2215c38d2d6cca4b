-- The end of make bench: issue 35's rows (recorded by each driver through
-- lib.target into BENCH_OUT/targets.tsv), each with its target and whether
-- it is met, as one table; also written to BENCH_OUT/targets.md.
--   lua5.4 bench/targets.lua
local OUT = os.getenv("BENCH_OUT") or "bench/out"
local f = io.open(OUT .. "/targets.tsv")
if not f then
  io.write("no target rows were recorded (bench/lib.lua's target)\n")
  return
end
local lines = { "Issue 35's rows (ratios measured side by side in this run):", "",
                "| row | measured | target | met |", "|---|---:|---:|:-:|" }
local met, n = 0, 0
for line in f:lines() do
  local row, v, kind, target = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)$")
  if row then
    v, target = tonumber(v), tonumber(target)
    local ok
    if kind == "speed" then ok = v >= target else ok = v <= target end
    local unit = kind == "ms" and " ms" or "×"
    local measured = kind == "ms" and ("%.1f ms"):format(v) or ("%.2f×%s"):format(v, kind == "speed" and " speed" or "")
    lines[#lines + 1] = ("| %s | %s | %s %g%s | %s |"):format(row, measured, kind == "speed" and "≥" or "≤", target,
      unit, ok and "yes" or "**no**")
    n, met = n + 1, met + (ok and 1 or 0)
  end
end
f:close()
lines[#lines + 1] = ""
lines[#lines + 1] = ("%d of %d rows meet their target"):format(met, n)
local text = table.concat(lines, "\n") .. "\n"
io.write(text)
local o = assert(io.open(OUT .. "/targets.md", "w"))
o:write(text)
o:close()
