-- Differential testing: a seeded generator of random file operations with
-- nasty paths, run against several sandboxes; every result and error code
-- must be the same on all of them. A failure shrinks to a minimal sequence.
local M = {}

local fmt, concat = string.format, table.concat

-- a tiny deterministic PRNG (Park-Miller), exact in doubles, so a seed
-- means the same run on every Lua (5.1 and LuaJIT have no 64-bit integers)
local function rng(seed)
  local s = (seed * 7919 + 12345) % 2147483647
  if s == 0 then s = 1 end
  return function(n) -- integer in [1, n]
    s = s * 16807 % 2147483647
    return s % n + 1
  end
end

local COMPS = { "a", "b", "c", "d.txt", "e.lua", "..", ".", "", "é", "x y", "A", "a.b.c" }

local SHORT = { "a", "b", "c", "d.txt", "a/b", "b/c", "a/b/c", "c/a" }

local function gen_path(r)
  local k = r(10)
  if k >= 8 then return { rel = SHORT[r(#SHORT)] } end -- few names: operations meet each other's files and links
  if k == 1 then -- specials
    local sp = { ".", "./", "a/", "a/.", "a//b", "../a", "a/../..", "", "a\0b", "/etc/passwd",
                 ("n"):rep(256), ("n"):rep(255), "ÿ/þ", "a/b/c/d/e/f", ("a/"):rep(2048) }
    if r(4) == 1 then return { abs = ({ "", "/", "a/..", "../x" })[r(4)] } end -- the root, by cwd
    return { rel = sp[r(#sp)] }
  end
  local parts = {}
  for i = 1, r(4) do parts[i] = COMPS[r(#COMPS)] end
  local p = concat(parts, "/"):gsub("^/+", "") -- "relative", whatever the parts
  if r(12) == 1 then p = p .. "/" end
  if r(8) == 1 then return { abs = p } end -- absolute under the sandbox's cwd
  return { rel = p }
end

local function resolve(sb, path)
  if path.abs then return (sb.cwd == "/" and "" or sb.cwd) .. "/" .. path.abs end
  return path.rel
end

local GLOBS = { "*", "**", "**/*.txt", "a/*", "?", "[ab]*", "*/**/c", "**/e.lua", "a/**", "x*/*" }
local GREPS = { "x", "^a", "[0-9]+", "z$", "." }
-- link texts: inside, chains, dangling, loops (a link to itself or its
-- parent), out by "..", absolute, with trailing slashes and dots
local LINKS = { "a", "b", "a/b", "d.txt", "..", ".", "./a", "a/..", "../a", "../..", "b/../..", "nope",
                "a/", "a/.", "/etc", "/", "x y", "c", "e.lua/", "A/../a" }

--- A random operation: {kind, path(s), args}.
function M.gen_op(r)
  local kinds = { "write", "write", "write", "read", "read", "mkdir", "mkdir", "remove", "rename",
                  "readdir", "stat", "exists", "glob", "grep", "symlink", "symlink", "readlink", "realpath" }
  local k = kinds[r(#kinds)]
  local op = { kind = k, path = gen_path(r) }
  if k == "write" then
    local contents = { "", "x", "xyz\n", "line1\nline2 z\n", ("y"):rep(r(300)), "\0bin\0", "a1\nb22\n" }
    op.data = contents[r(#contents)]
    op.opts = { overwrite = r(4) ~= 1, parents = r(5) ~= 1 }
  elseif k == "mkdir" then
    op.opts = { parents = r(3) ~= 1 }
  elseif k == "remove" then
    op.opts = { recursive = r(2) == 1 }
  elseif k == "rename" then
    op.to = gen_path(r)
    op.opts = { overwrite = r(2) == 1 }
  elseif k == "glob" then
    op.pattern = GLOBS[r(#GLOBS)]
  elseif k == "grep" then
    op.pattern = GREPS[r(#GREPS)]
    op.opts = { literal = r(3) == 1 }
  elseif k == "symlink" then
    op.target = LINKS[r(#LINKS)]
  elseif k == "stat" then
    op.opts = { follow = r(2) == 1 }
  end
  return op
end

function M.gen_sequence(seed, n)
  local r = rng(seed)
  local ops = {}
  for i = 1, n do ops[i] = M.gen_op(r) end
  return ops
end

-- Run one op; the outcome as a comparable string.
local function outcome(v, _, code)
  if v == nil then return "error " .. tostring(code) end
  if type(v) ~= "table" then return "ok " .. tostring(v) end
  local parts = {}
  if v.type then -- stat
    return fmt("stat %s %d", v.type, v.size)
  end
  for i, e in ipairs(v) do
    if type(e) == "table" then
      parts[i] = e.name and fmt("%s:%s:%d", e.name, e.type, e.size) or fmt("%s:%d:%s", e.path, e.line, e.text)
    else
      parts[i] = tostring(e)
    end
  end
  return "list " .. concat(parts, "|") .. (v.truncated and " (truncated)" or "")
end

function M.apply(sb, op)
  local p = resolve(sb, op.path)
  local k = op.kind
  if k == "write" then return outcome(sb:write_file(p, op.data, op.opts))
  elseif k == "read" then return outcome(sb:read_file(p))
  elseif k == "mkdir" then return outcome(sb:mkdir(p, op.opts))
  elseif k == "remove" then return outcome(sb:remove(p, op.opts))
  elseif k == "rename" then return outcome(sb:rename(p, resolve(sb, op.to), op.opts))
  elseif k == "readdir" then return outcome(sb:readdir(p))
  elseif k == "stat" then return outcome(sb:stat(p, op.opts))
  elseif k == "symlink" then return outcome(sb:symlink(op.target, p))
  elseif k == "readlink" then return outcome(sb:readlink(p))
  elseif k == "realpath" then return outcome(sb:realpath(p))
  elseif k == "exists" then return outcome(sb:exists(p))
  elseif k == "glob" then return outcome(sb:glob(op.pattern, { max_results = 50 }))
  elseif k == "grep" then return outcome(sb:grep(op.pattern, { literal = op.opts.literal, max_results = 50 }))
  end
end

local function show_path(p)
  if p.abs then return fmt("cwd .. %q", "/" .. p.abs) end
  return fmt("%q", p.rel)
end

--- An op as Lua code, for the reproduction.
function M.describe(op)
  local k = op.kind
  local function o(t)
    if not t then return "" end
    local parts = {}
    for key, v in pairs(t) do parts[#parts + 1] = key .. " = " .. tostring(v) end
    table.sort(parts)
    return ", {" .. concat(parts, ", ") .. "}"
  end
  if k == "write" then return fmt("sb:write_file(%s, %q%s)", show_path(op.path), op.data, o(op.opts)) end
  if k == "rename" then return fmt("sb:rename(%s, %s%s)", show_path(op.path), show_path(op.to), o(op.opts)) end
  if k == "glob" then return fmt("sb:glob(%q)", op.pattern) end
  if k == "symlink" then return fmt("sb:symlink(%q, %s)", op.target, show_path(op.path)) end
  if k == "grep" then return fmt("sb:grep(%q%s)", op.pattern, o(op.opts)) end
  local name = ({ read = "read_file", mkdir = "mkdir", remove = "remove", readdir = "readdir",
                  stat = "stat", exists = "exists", readlink = "readlink", realpath = "realpath" })[k]
  return fmt("sb:%s(%s%s)", name, show_path(op.path), o(op.opts))
end

--- Run ops on fresh sandboxes from each factory; returns nil when all agree,
--- else the index of the first divergence and the outcomes per factory.
function M.run(factories, ops)
  local sbs = {}
  for i, f in ipairs(factories) do sbs[i] = f.new() end
  local bad
  for i, op in ipairs(ops) do
    local outs = {}
    for j, sb in ipairs(sbs) do outs[j] = M.apply(sb, op) end
    for j = 2, #outs do
      if outs[j] ~= outs[1] then bad = { at = i, outs = outs } break end
    end
    if bad then break end
  end
  for i, f in ipairs(factories) do f.done(sbs[i]) end
  return bad
end

--- Shrink a failing sequence (one op at a time, as long as it still fails).
function M.shrink(factories, ops)
  local cur = ops
  local bad = M.run(factories, cur)
  for i = #cur, 1, -1 do
    if i <= #cur then
      local try = {}
      for j, op in ipairs(cur) do if j ~= i then try[#try + 1] = op end end
      local b = M.run(factories, try)
      if b then cur, bad = try, b end
    end
  end
  -- ops after the divergence never matter
  local cut = {}
  for j = 1, bad.at do cut[j] = cur[j] end
  return cut, bad
end

function M.report(factories, seed, ops, bad)
  local lines = { fmt("divergence with seed %d; minimal reproduction (%d ops):", seed, #ops) }
  for i, op in ipairs(ops) do lines[#lines + 1] = "  " .. M.describe(op) .. (i == bad.at and "   -- here" or "") end
  for j, f in ipairs(factories) do lines[#lines + 1] = fmt("  %-22s -> %s", f.name, bad.outs[j]) end
  return concat(lines, "\n")
end

return M
