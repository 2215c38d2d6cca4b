-- The benchmark driver (SPEC §10): runs every workload for the project and
-- its baselines interleaved (A B C A B C ..., the start rotating per round),
-- then prints one table of medians, ratios and targets, and writes the same
-- as JSON and as a chart.   lua5.4 bench/run.lua   (make bench sets it up)
-- Environment: BENCH_ROUNDS (5), BENCH_TMPFS (a tmpfs directory for real
-- files), BENCH_OUT (bench/out), BENCH_BUILD (build/bench), SANDBOX_BUILD.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("SANDBOX_BUILD") or "./build") .. "/?.so;" .. package.cpath
local cjson = require "cjson"
local sandbox = require "sandbox"

local ROUNDS = tonumber(os.getenv("BENCH_ROUNDS")) or 5
local TMPFS = assert(os.getenv("BENCH_TMPFS"), "BENCH_TMPFS: a directory on tmpfs")
local OUT = os.getenv("BENCH_OUT") or "bench/out"
local B = os.getenv("BENCH_BUILD") or "build/bench"
local HAVE_NODE = os.execute("command -v node >/dev/null 2>&1 && test -d " .. B .. "/node_modules/memfs") == true
local CAPS = sandbox.capabilities()
-- confined commands need Landlock and the sandbox's namespaces
local CONFINED = (CAPS.landlock_abi or 0) > 0 and CAPS.namespaces and CAPS.seccomp
local HAVE_BWRAP = os.execute("command -v bwrap >/dev/null 2>&1") == true

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  if not ok then error(("benchmark command failed (%s): %s\n%s"):format(tostring(code), cmd, out), 0) end
  return out
end

-- ---- the jobs ---------------------------------------------------------------
local SPAWNS, HEAP_SPAWNS, HEAP_MB, PIPE_BYTES = 500, 100, 1024, 500000000
local jobs = {}
-- warm: the program repeats its workload 3 times in-process; the first
-- repetition warms up (allocator, caches) and is left out
local function job(cmd, warm) jobs[#jobs + 1] = { cmd = cmd, warm = warm } end
local function dir(name) return TMPFS .. "/" .. name end

job("lua5.4 bench/vfs_ops.lua sandbox 3", true)
job("lua5.4 bench/vfs_ops.lua c-tree 3", true)
job("lua5.4 bench/vfs_ops.lua lua-tree 3", true)
if HAVE_NODE then job("node bench/baseline/memfs.js work 3", true) end
job(("%s/w2_c openat2 %s 3"):format(B, dir("c-openat2")), true)
job(("%s/w2_c openat2-atomic %s 3"):format(B, dir("c-atomic")), true)
job(("lua5.4 bench/container_ops.lua sandbox %s 3"):format(dir("sandbox")), true)
job(("lua5.4 bench/container_ops.lua lua-io %s 3"):format(dir("lua-io")), true)
job(("%s/w3_c spawn %d"):format(B, SPAWNS))
job(("lua5.4 bench/exec_ops.lua spawn %d 0 unconfined"):format(SPAWNS))
if CONFINED then
  job(("lua5.4 bench/exec_ops.lua spawn %d"):format(SPAWNS))
  -- the policy in the view: deny rules re-checked before each command (SPEC §6.1)
  job(("lua5.4 bench/exec_ops.lua spawn %d 0 deny-name"):format(SPAWNS))
  job(("lua5.4 bench/exec_ops.lua spawn %d 0 deny-tree"):format(SPAWNS // 4))
end
job(("lua5.4 bench/exec_ops.lua os-execute %d"):format(SPAWNS))
if CONFINED then job(("lua5.4 bench/exec_ops.lua first %d"):format(SPAWNS // 5)) end
if HAVE_BWRAP then job(("%s/w3_c bwrap %d %s"):format(B, SPAWNS, dir("bwrap"))) end
if HAVE_NODE then job(("node bench/baseline/spawn.js %d"):format(SPAWNS)) end
job(("%s/w3_c spawn %d %d"):format(B, HEAP_SPAWNS, HEAP_MB))
job(("lua5.4 bench/exec_ops.lua spawn %d %d unconfined"):format(HEAP_SPAWNS, HEAP_MB))
if CONFINED then
  job(("lua5.4 bench/exec_ops.lua spawn %d %d"):format(HEAP_SPAWNS, HEAP_MB))
  -- a new sandbox of a big host: its init is no copy of the host (csrc/init/)
  job(("lua5.4 bench/exec_ops.lua first %d %d"):format(SPAWNS // 25, HEAP_MB))
end
if HAVE_NODE then job(("node bench/baseline/spawn.js %d %d"):format(HEAP_SPAWNS // 3, HEAP_MB)) end
-- documents: the confined helper per read against the helper started bare
-- and pdftotext (the files: spec/support/office.py's, written once here)
local DOCS = dir("docs")
local HAVE_DOCS = CONFINED and require("sandbox.docparse").path() ~= nil
  and os.execute(("mkdir -p %s && /usr/bin/python3 spec/support/office.py %s 2>/dev/null"):format(DOCS, DOCS)) == true
if HAVE_DOCS then
  for _, m in ipairs { "read-document", "helper", "pdftotext" } do
    job(("lua5.4 bench/document_ops.lua %s 20 %s"):format(m, DOCS))
  end
end
job(("%s/w3_c pipe %d"):format(B, PIPE_BYTES))
job(("lua5.4 bench/exec_ops.lua pipe %d"):format(PIPE_BYTES))

-- samples[impl][phase][round] = { ops per second, ... } (warm iterations only)
local samples = {}
local function add(impl, phase, round, rate)
  samples[impl] = samples[impl] or {}
  samples[impl][phase] = samples[impl][phase] or {}
  local r = samples[impl][phase]
  r[round] = r[round] or {}
  table.insert(r[round], rate)
end

local t0 = os.time()
for round = 1, ROUNDS do
  io.stderr:write(("round %d/%d\n"):format(round, ROUNDS))
  for k = 0, #jobs - 1 do
    local j = jobs[(k + round - 1) % #jobs + 1]
    for impl, phase, ops, secs, it in sh(j.cmd):gmatch("RESULT (%S+) (%S+) (%d+) (%S+) (%d+)") do
      if not j.warm or tonumber(it) > 1 then add(impl, phase, round, tonumber(ops) / tonumber(secs)) end
    end
  end
end

-- ---- once: memory per file and concurrent streaming --------------------------
local memory = {}
local function mem(cmd)
  for impl, files, heap, rss in sh(cmd):gmatch("MEMORY (%S+) (%d+) (%S+) (%S+)") do
    memory[#memory + 1] = { impl = impl, files = tonumber(files), bytes_per_file = tonumber(heap),
                            rss_per_file = tonumber(rss) }
  end
end
mem("lua5.4 bench/vfs_ops.lua memory sandbox 100000")
mem("lua5.4 bench/vfs_ops.lua memory lua-tree 100000")
if HAVE_NODE then mem("node --expose-gc bench/baseline/memfs.js memory 100000") end
local s = { sh(("SCRATCH=%s lua5.4 bench/stream_ops.lua 64 8"):format(TMPFS)):match(
  "STREAM (%d+) (%d+) (%d+) (%d+) (%S+) (%-?%d+)") }
local stream = { processes = tonumber(s[1]), expected = tonumber(s[2]), received = tonumber(s[3]),
                 bad_bytes = tonumber(s[4]), seconds = tonumber(s[5]), rss_growth = tonumber(s[6]) }

-- ---- aggregation ---------------------------------------------------------------
local function median(t)
  if #t == 0 then return nil end
  local c = { table.unpack(t) }
  table.sort(c)
  local m = #c // 2
  return #c % 2 == 1 and c[m + 1] or (c[m] + c[m + 1]) / 2
end
local function rate(impl, phase)
  local all = {}
  for _, r in pairs((samples[impl] or {})[phase] or {}) do for _, v in ipairs(r) do all[#all + 1] = v end end
  return median(all)
end
-- the ratio within each round (noise hits both sides alike), then the median
local function ratio(a, pa, b, pb)
  local per = {}
  local A, Bs = (samples[a] or {})[pa], (samples[b] or {})[pb]
  if not A or not Bs then return nil end
  for round = 1, ROUNDS do
    if A[round] and Bs[round] then per[#per + 1] = median(A[round]) / median(Bs[round]) end
  end
  return median(per)
end

local rows = {}
-- kind "speed": ratio = our rate / theirs, higher is better; "time": ours / theirs, lower is better
local function row(workload, op, ours, theirs, phase_ours, phase_theirs, kind, target, note)
  local r = ratio(ours, phase_ours, theirs, phase_theirs or phase_ours)
  if not r then return end
  if kind == "time" then r = 1 / r end
  local met
  if target then met = kind == "time" and r <= target or kind == "speed" and r >= target end
  rows[#rows + 1] = { workload = workload, op = op, ours = ours, baseline = theirs,
                      ours_rate = rate(ours, phase_ours), baseline_rate = rate(theirs, phase_theirs or phase_ours),
                      kind = kind, ratio = r, target = target, met = met, note = note }
end

for _, ph in ipairs { "create", "read", "stat", "list", "delete" } do
  row("VirtualSandbox", ph, "lua-sandbox-virtual", "lua-c-uthash-tree", ph, nil, "speed", 0.7)
  row("VirtualSandbox", ph, "lua-sandbox-virtual", "lua-table-tree", ph, nil, "speed", 3)
  row("VirtualSandbox", ph, "lua-sandbox-virtual", "node-memfs", ph, nil, "speed", 20)
end
local CT = "lua-sandbox-container-auto"
for _, ph in ipairs { "create", "read", "stat", "list", "delete" } do
  local core = ph == "create" or ph == "read" or ph == "stat"
  -- read: issue 35's target (0.9); create and stat: SPEC §10's (0.8)
  row("ContainerSandbox (tmpfs)", ph, CT, "c-openat2", ph, nil, "speed", ph == "read" and 0.9 or core and 0.8 or nil,
      ph == "create" and "C writes in place (O_TRUNC); the sandbox replaces atomically" or nil)
  if ph == "create" then
    row("ContainerSandbox (tmpfs)", ph, CT, "c-openat2-atomic", ph, nil, "speed", 0.95,
        "C with the same atomic protocol (temporary file, fsync, rename)")
  end
  row("ContainerSandbox (tmpfs)", ph, CT, "lua-io", ph, nil, "speed", core and 1 or nil)
end
local function spawn_rows(ours, label, c_target)
  row("exec /bin/true", label, ours, "c-posix-spawn", "spawn", nil, "time", c_target)
  row("exec /bin/true", label, ours, "lua-os-execute", "spawn", nil, "time", 1)
  row("exec /bin/true", label, ours, "node-spawnsync", "spawn", nil, "time", 1)
end
-- issue 35's targets against C: 1.05 unconfined, 1.25 confined
spawn_rows("lua-sandbox-exec-unconfined", "unconfined", 1.05)
spawn_rows("lua-sandbox-exec-confined", "confined", 1.25)
row("exec /bin/true", "confined", "lua-sandbox-exec-confined", "bwrap-unshare-all", "spawn", nil, "time", 1,
    "bwrap builds its namespaces and view per command; the sandbox once per sandbox")
row("exec /bin/true", "confined, deny \".env\"", "lua-sandbox-exec-deny-name", "lua-sandbox-exec-confined", "spawn",
    nil, "time", nil, "vs confined without rules: one listing of the root per command")
row("exec /bin/true", "confined, deny \"**/*.pem\", 10k files", "lua-sandbox-exec-deny-tree", "lua-sandbox-exec-confined",
    "spawn", nil, "time", nil, "vs confined without rules: a walk of the tree per command")
-- time to first command (issue 35): hosted sandboxes' published create-to-
-- first-command medians are Daytona 0.11 s, E2B 0.44 s (ComputeSDK,
-- 2026-04-01); the target here is 10 ms
row("exec: first command", "container{} + exec(\"true\") + dispose", "lua-sandbox-first", "bwrap-unshare-all", "first",
    "spawn", "time", nil, "vs one bwrap --unshare-all true; target <= 10 ms (Daytona 110 ms, E2B 440 ms published)")
row("exec, 1 GiB host heap", "unconfined", "lua-sandbox-exec-unconfined-heap", "lua-sandbox-exec-unconfined",
    "spawn", nil, "time", 1.2, "vs the same without the heap")
row("exec, 1 GiB host heap", "confined", "lua-sandbox-exec-confined-heap", "lua-sandbox-exec-confined",
    "spawn", nil, "time", 1.2, "vs the same without the heap")
row("exec, 1 GiB host heap", "first command", "lua-sandbox-first-heap", "lua-sandbox-first", "first", nil, "time",
    1.2, "container{} + exec + dispose vs the same without the heap (the init was a fork of the host: 12x)")
row("exec, 1 GiB host heap", "C posix_spawn", "c-posix-spawn-heap", "c-posix-spawn", "spawn", nil, "time", nil,
    "baseline, for reference")
row("exec, 1 GiB host heap", "Node spawnSync", "node-spawnsync-heap", "node-spawnsync", "spawn", nil, "time", nil,
    "baseline, for reference (libuv forks)")
row("stdout through a pipe", "throughput", "lua-sandbox-exec", "c-read-loop", "pipe", nil, "speed", 0.9)
for _, ph in ipairs { "pdf", "docx" } do
  row("read_document (confined helper)", ph, "lua-sandbox-read-document", "helper", ph, nil, "time", nil,
    "the helper started bare: what the confinement adds")
end
row("read_document (confined helper)", "pdf", "lua-sandbox-read-document", "pdftotext", "pdf", nil, "time", nil,
  "Poppler's pdftotext")

-- issue 35's rows, for the summary make bench prints at its end
local lib = dofile("bench/lib.lua")
local function issue(label, workload, op, baseline)
  for _, r in ipairs(rows) do
    if r.workload == workload and r.op == op and r.baseline == baseline and r.target then
      lib.target(label, r.ratio, r.kind, r.target)
    end
  end
end
issue("confined exec /bin/true ÷ C posix_spawn", "exec /bin/true", "confined", "c-posix-spawn")
issue("unconfined exec /bin/true ÷ C posix_spawn", "exec /bin/true", "unconfined", "c-posix-spawn")
issue("ContainerSandbox read ÷ C openat2", "ContainerSandbox (tmpfs)", "read", "c-openat2")
issue("ContainerSandbox create ÷ C, same atomic protocol", "ContainerSandbox (tmpfs)", "create", "c-openat2-atomic")
local first = rate("lua-sandbox-first", "first")
if first then lib.target("first command: container{} + exec + dispose (ms)", 1e3 / first, "ms", 10) end

-- ---- output ----------------------------------------------------------------------
local function fmt_rate(v, phase_kind)
  if not v then return "-" end
  if phase_kind == "pipe" then return ("%.0f MB/s"):format(v / 1e6) end
  if phase_kind == "spawn" then return ("%.0f µs"):format(1e6 / v) end
  if phase_kind == "slow" then return ("%.1f ms"):format(1e3 / v) end
  if v >= 1e6 then return ("%.2f M/s"):format(v / 1e6) end
  return ("%.1f k/s"):format(v / 1e3)
end
local function unit(r)
  return r.workload:match("^exec") and "spawn" or r.workload:match("pipe") and "pipe"
    or r.workload:match("^read_document") and "slow" or "ops"
end

local lines = {}
local function out(s) lines[#lines + 1] = s end
out(("Benchmarks (%s, %d rounds interleaved, kernel %s; medians, ratios per round then median)")
  :format(os.date("!%Y-%m-%d %H:%M UTC"), ROUNDS, sh("uname -r"):gsub("%s+$", "")))
out("")
out("| workload | op | sandbox | baseline | baseline median | sandbox median | ratio | target | met |")
out("|---|---|---|---|---:|---:|---:|---:|:-:|")
for _, r in ipairs(rows) do
  local u = unit(r)
  local tgt = r.target and ((r.kind == "time" and "≤ " or "≥ ") .. ("%g×"):format(r.target)) or "-"
  local ratio_s = r.kind == "time" and ("%.2f× time"):format(r.ratio) or ("%.2f× speed"):format(r.ratio)
  out(("| %s | %s | %s | %s | %s | %s | %s | %s | %s |"):format(r.workload, r.op, r.ours, r.baseline,
    fmt_rate(r.baseline_rate, u), fmt_rate(r.ours_rate, u), ratio_s, tgt,
    r.met == nil and "" or r.met and "yes" or "**no**") .. (r.note and (" " .. r.note) or ""))
end
out("")
out("Memory for 100 000 files of 100 bytes (100 per directory):")
out("")
out("| implementation | bytes per file (allocated) | bytes per file (RSS growth) |")
out("|---|---:|---:|")
for _, m in ipairs(memory) do
  out(("| %s | %.0f | %.0f |"):format(m.impl, m.bytes_per_file, m.rss_per_file))
end
out("")
local stream_ok = stream.received == stream.expected and stream.bad_bytes == 0
  and stream.rss_growth < stream.expected / 10
out(("%d concurrent background processes streaming %d MB in all: %d bytes lost or out of order, %.0f MB/s, host peak RSS +%.1f MB: %s")
  :format(stream.processes, stream.expected // 1000000, stream.expected - stream.received + stream.bad_bytes,
    stream.received / stream.seconds / 1e6, stream.rss_growth / 1048576,
    stream_ok and "target met (no lost bytes, bounded memory)" or "**target not met**"))
if not HAVE_NODE then out("(node or memfs missing: the Node baselines were skipped)") end
if not CONFINED then out("(Landlock, namespaces or seccomp missing: the confined exec rows were skipped)") end
if not HAVE_BWRAP then out("(bwrap missing: the bubblewrap baseline was skipped)") end
out(("Total time: %d s"):format(os.time() - t0))
local text = table.concat(lines, "\n") .. "\n"
io.write(text)

os.execute("mkdir -p '" .. OUT .. "'")
local f = assert(io.open(OUT .. "/results.md", "w"))
f:write(text)
f:close()
f = assert(io.open(OUT .. "/results.json", "w"))
f:write(cjson.encode { date = os.date("!%Y-%m-%dT%H:%M:%SZ"), rounds = ROUNDS, rows = rows, memory = memory,
                       stream = stream, samples = samples })
f:close()

-- the chart: each row's ratio as a share of its target (1 = just met), log scale
if os.execute("command -v gnuplot >/dev/null 2>&1") then
  local dat = assert(io.open(OUT .. "/chart.dat", "w"))
  local n = 0
  for _, r in ipairs(rows) do
    if r.target then
      n = n + 1
      local score = r.kind == "time" and r.target / r.ratio or r.ratio / r.target
      dat:write(('%d "%s %s vs %s" %.4f %.4f\n'):format(n - 1, r.workload:gsub(" %(tmpfs%)", ""), r.op,
        r.baseline, score, r.ratio))
    end
  end
  dat:close()
  local gp = assert(io.open(OUT .. "/chart.gp", "w"))
  gp:write(([[
set terminal pngcairo size 1200,%d font ",9"
set output "%s/bench.png"
set title "sandbox vs baselines: measured ratio / target (right of the red line = target met; labels: the ratio)"
set logscale x 2
set xrange [0.1:*]
set yrange [%d:-1]
set ytics nomirror
set grid xtics
set style fill solid 0.7
unset key
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "red" lw 2
plot "%s/chart.dat" using 3:1:(0.1):3:($1-0.35):($1+0.35):($3 >= 1 ? 0x4477aa : 0xcc5544):yticlabels(2) \
       with boxxyerror lc rgb variable, \
     "" using ($3):1:(sprintf("%%.2f×", $4)) with labels left offset 0.5,0
]]):format(120 + 22 * n, OUT, n, OUT))
  gp:close()
  if os.execute(("gnuplot %s/chart.gp"):format(OUT)) then
    io.write(("chart: %s/bench.png\n"):format(OUT))
  end
end
io.write(("table: %s/results.md, data: %s/results.json\n"):format(OUT, OUT))
