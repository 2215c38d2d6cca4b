-- Review of an OverlaySandbox (SPEC §11), on the host's side: what the
-- agent changed (the upper layer, in the kernel's format, against base_dir),
-- as a git diff; commit into base_dir, discard, checkpoints and restore.
--
-- Reading is direct: the upper layer and base_dir as they lie on disk
-- (core.review_scan/review_entry: no link followed). Every change to the
-- view — discard, restore — goes through the merged view itself, as the
-- agent's own operations do, so the kernel keeps the layers consistent
-- (editing a layer under a live overlayfs is undefined). Commit writes
-- base_dir, each file atomically, only where the base still is what the
-- sandbox first saw (the snapshot taken when the overlay was made).
-- overlay/layers.lua reads the layers and writes the view; overlay/links.lua
-- judges the links a commit would leave.
local core = require "sandbox.core"
local json = require "sandbox.json"
local diff = require "sandbox.diff"
local options = require "sandbox.options"
local layers = require "sandbox.overlay.layers"
local links = require "sandbox.overlay.links"

local M = {}

local type, pairs, ipairs, tostring, tonumber, error, pcall, fmt =
  type, pairs, ipairs, tostring, tonumber, error, pcall, string.format
local sort, concat = table.sort, table.concat

local scan_map, read_from, put, drop, to_lower = layers.scan, layers.read, layers.put, layers.drop, layers.to_lower

local BIG = 2 ^ 40 -- the helpers' read and write limits: the host's own review has none of the agent's

local states = setmetatable({}, { __mode = "k" })

-- A plain ContainerSandbox over dir for the review's own reads and writes.
local function helper(dir, mode)
  local sb, msg = require("sandbox.container").new {
    base_dir = dir, mode = mode, exec = false, max_read_bytes = BIG, max_write_bytes = BIG,
  }
  if not sb then error("overlay review: " .. tostring(msg), 0) end
  return sb
end

local function state(sb, who)
  local st = states[sb]
  if not st then error(who .. ": not an OverlaySandbox", 3) end
  if st.closed or not pcall(core.check_open, sb, who) then error(who .. ": the sandbox is closed", 3) end
  return st
end

-- ---- the base as first seen -------------------------------------------------

local function save_snapshot(st)
  assert(st.statedir:write_file("snapshot.json", json.encode(st.snapshot)))
end

local function load_snapshot(st)
  local text = st.statedir:read_file("snapshot.json")
  if text then
    local v = json.decode(text)
    if type(v) ~= "table" then return nil, "EINVAL: state_dir's snapshot.json is damaged", "EINVAL" end
    st.snapshot = v
    return true
  end
  st.snapshot = setmetatable({}, json.OBJECT)
  for _, e in ipairs((scan_map(st.base))) do
    if e.type ~= "dir" then st.snapshot[e.path] = e.fingerprint end
  end
  save_snapshot(st)
  return true
end

--- Set up the review of a new OverlaySandbox (called by sandbox.overlay).
function M.attach(sb)
  -- the upper layer: in state_dir, or in memory (max_disk_usage binding commands)
  local st = { base = sb.cwd, upper = sb.upper_dir or (sb.state_dir .. "/upper") }
  local ok, err = pcall(function()
    if sb.overlay_view == "kernel" then
      -- the kernel's mount, as the sandbox's own file operations reach it
      st.merged = helper(st.base, "rw")
      local ok, why = core.review_merged(st.merged, sb)
      if not ok then error("the overlay's merged view: " .. tostring(why), 0) end
    else -- the same layers in userspace, as the sandbox's own file operations see them
      local m, msg = require("sandbox.overlay").raw {
        base_dir = sb.cwd, state_dir = sb.state_dir, exec = false, confine = false,
        max_read_bytes = BIG, max_write_bytes = BIG,
      }
      if not m then error(msg, 0) end
      st.merged = m
    end
    st.lower = helper(st.base, "r")
    st.upperh = helper(st.upper, "r")
    st.statedir = helper(sb.state_dir, "rw")
  end)
  if not ok then
    for _, k in ipairs { "lower", "upperh", "merged", "statedir" } do if st[k] then st[k]:dispose() end end
    return nil, "EIO: overlay review: " .. tostring(err), "EIO"
  end
  local lok, lerr, lcode = load_snapshot(st)
  if not lok then return nil, lerr, lcode end
  -- a checkpoint a crash left half-written is not a checkpoint
  for _, e in ipairs(st.statedir:readdir("checkpoints") or {}) do
    if e.name:match("%.tmp$") then st.statedir:remove("checkpoints/" .. e.name, { recursive = true }) end
  end
  local rok, rerr, rcode = M.resume(st)
  if not rok then return nil, rerr, rcode end
  states[sb] = st
  for name, fn in pairs(M.methods) do core.setfield(sb, name, fn) end
  -- disposing the sandbox lets go of the helpers (one holds the merged view's mount)
  local dispose = sb.dispose
  local function release(self)
    local s = states[self]
    if s and not s.closed then
      for _, k in ipairs { "lower", "upperh", "merged", "statedir" } do s[k]:dispose() end
      states[self] = { closed = true }
    end
    return dispose(self)
  end
  core.setfield(sb, "dispose", release)
  core.setfield(sb, "close", release)
  return true
end

-- ---- what changed --------------------------------------------------------------

-- Files (and links) of base_dir below dir, as the upper layer hides them.
local function lower_below(st, dir, out)
  local e = core.review_entry(st.base, dir)
  if not e or e.type ~= "dir" then return end
  for _, x in ipairs((scan_map(st.base .. "/" .. dir))) do
    if x.type ~= "dir" then out[#out + 1] = { path = dir .. "/" .. x.path, lower = x } end
  end
end

local function same_content(st, path, up, lo)
  if up.type ~= lo.type or up.size ~= lo.size then return false end
  return read_from(st.upperh, path, up) == read_from(st.lower, path, lo)
end

-- {path, kind, from} sorted by path; kind added | modified | deleted | renamed.
local function compute(st)
  local up, upmap = scan_map(st.upper)
  local added, deleted, out = {}, {}, {}
  for _, e in ipairs(up) do
    local lo = core.review_entry(st.base, e.path)
    if e.type == "whiteout" then
      if lo and lo.type == "dir" then lower_below(st, e.path, deleted)
      elseif lo then deleted[#deleted + 1] = { path = e.path, lower = lo } end
    elseif e.type == "dir" then
      if lo and lo.type ~= "dir" then deleted[#deleted + 1] = { path = e.path, lower = lo }
      elseif lo and e.opaque then
        local below = {}
        lower_below(st, e.path, below)
        for _, d in ipairs(below) do if not upmap[d.path] then deleted[#deleted + 1] = d end end
      end
    elseif e.type == "file" or e.type == "link" then
      if not lo or lo.type == "dir" then
        added[#added + 1] = { path = e.path, upper = e }
        if lo then
          local below = {}
          lower_below(st, e.path, below)
          for _, d in ipairs(below) do deleted[#deleted + 1] = d end
        end
      elseif not same_content(st, e.path, e, lo) then
        out[#out + 1] = { path = e.path, kind = "modified", upper = e, lower = lo }
      end
    end
  end
  -- a deleted file whose bytes reappear under a new name was renamed (git's exact renames)
  local by_size = {}
  for _, d in ipairs(deleted) do
    if d.lower.type == "file" then
      local k = d.lower.size
      by_size[k] = by_size[k] or {}
      by_size[k][#by_size[k] + 1] = d
    end
  end
  for _, a in ipairs(added) do
    local cands = a.upper.type == "file" and by_size[a.upper.size]
    local content
    for i, d in ipairs(cands or {}) do
      content = content or read_from(st.upperh, a.path, a.upper)
      if not d.taken and read_from(st.lower, d.path, d.lower) == content then
        d.taken, a.from = true, d
        table.remove(cands, i)
        break
      end
    end
    if a.from then
      out[#out + 1] = { path = a.path, kind = "renamed", from = a.from.path, upper = a.upper, lower = a.from.lower }
    else
      out[#out + 1] = { path = a.path, kind = "added", upper = a.upper }
    end
  end
  for _, d in ipairs(deleted) do
    if not d.taken then out[#out + 1] = { path = d.path, kind = "deleted", lower = d.lower } end
  end
  sort(out, function(x, y) return x.path < y.path end)
  return out
end

-- A selector as given (a path or a directory above paths) in its clean form.
local function clean_selector(p) return (p:gsub("^%./", ""):gsub("/+$", "")) end

-- Does the clean selector p select path (the path itself, or below it)?
local function selects(p, path)
  return p == "" or p == "." or path == p or path:sub(1, #p + 1) == p .. "/"
end

-- The changes `paths` selects: each a path or a directory above changes
-- (nil: all). An unknown path is an error, not silently nothing.
local function select_changes(who, st, paths)
  local all = compute(st)
  if paths == nil then return all end
  local list, why = options.string_list(paths, "paths")
  if not list then error(who .. ": " .. why, 3) end
  local out, used = {}, {}
  for _, c in ipairs(all) do
    for _, p in ipairs(list) do
      p = clean_selector(p)
      if selects(p, c.path) or c.from == p then
        out[#out + 1] = c
        used[p] = true
        break
      end
    end
  end
  for _, p in ipairs(list) do
    if not used[clean_selector(p)] then return nil, fmt("ENOENT: %s has no change to select", p), "ENOENT" end
  end
  return out
end

-- The prologue of the methods that act on a selection.
local function selection(sb, who, paths)
  local st = state(sb, who)
  return st, select_changes(who, st, paths)
end

local function public(c)
  return { path = c.path, kind = c.kind, from = c.from }
end

M.methods = {}

--- sb:changes() -> sorted {path, kind = "added"|"modified"|"deleted"|"renamed", from =}.
function M.methods.changes(sb)
  local st = state(sb, "changes")
  local out = {}
  for i, c in ipairs(compute(st)) do out[i] = public(c) end
  return out
end

--- sb:diff([paths]) -> a unified diff in git's format of the changes.
function M.methods.diff(sb, paths)
  local st, sel, msg, code = selection(sb, "diff", paths)
  if not sel then return nil, msg, code end
  local parts = {}
  for _, c in ipairs(sel) do
    if c.kind == "renamed" then
      parts[#parts + 1] = fmt("diff --git %s %s\nsimilarity index 100%%\nrename from %s\nrename to %s\n",
        diff.quote("a/" .. c.from), diff.quote("b/" .. c.path), diff.quote(c.from), diff.quote(c.path))
    else
      local old = c.lower and read_from(st.lower, c.path, c.lower) or nil
      local new = c.upper and read_from(st.upperh, c.path, c.upper) or nil
      parts[#parts + 1] = (diff.diff(old, new, { path = c.path }))
    end
  end
  return concat(parts)
end

-- ---- commit --------------------------------------------------------------------

local function fingerprint(st, path)
  local e = core.review_entry(st.base, path)
  return e and e.type ~= "dir" and e.fingerprint or nil
end

--- sb:commit([paths]) -> true, {paths} | nil, msg, "EAGAIN", {paths where
--- the base changed}: the changes into base_dir, each file atomically.
function M.methods.commit(sb, paths)
  local st, sel, msg, code = selection(sb, "commit", paths)
  if not sel then return nil, msg, code end
  local conflicts = {}
  for _, c in ipairs(sel) do
    for _, p in ipairs { c.path, c.from } do
      if fingerprint(st, p) ~= st.snapshot[p] then conflicts[#conflicts + 1] = p end
    end
  end
  -- a link a command made may lead anywhere: the base gets none that leads
  -- out of it, judged in the tree as the commit would leave it
  local outward = links.outward(st, sel)
  if #outward > 0 then
    return nil, "EACCES: after this commit these symbolic links would lead out of base_dir (as the kernel "
      .. "follows them, through the other links), which a commit does not create: "
      .. concat(outward, ", ") .. " (nothing was committed)", "EACCES", outward
  end
  if #conflicts > 0 then
    sort(conflicts)
    return nil, "EAGAIN: the base changed after the sandbox first read it: " .. concat(conflicts, ", ")
      .. " (nothing was committed; review, discard or commit the other paths)", "EAGAIN", conflicts
  end
  local base = helper(st.base, "rw")
  local done = {}
  local ok, err = pcall(function()
    for _, c in ipairs(sel) do
      if c.upper then
        local data = read_from(st.upperh, c.path, c.upper)
        if c.upper.type == "link" then
          base:remove(c.path)
          assert(base:symlink(data, c.path))
        else
          assert(base:write_file(c.path, data))
        end
      end
      local gone = c.kind == "deleted" and c.path or c.from
      if gone then assert(base:remove(gone)) end
      done[#done + 1] = c.path
      for _, p in ipairs { c.path, c.from } do st.snapshot[p] = fingerprint(st, p) end
    end
  end)
  base:dispose()
  save_snapshot(st)
  if not ok then return nil, "EIO: commit stopped after " .. #done .. " of " .. #sel .. " changes: " .. tostring(err), "EIO", done end
  return true, done
end

-- ---- discard, checkpoints, restore: through the merged view ----------------------

--- sb:discard([paths]) -> true: the selected changes undone (the view shows base_dir there again).
function M.methods.discard(sb, paths)
  local st, sel, msg, code = selection(sb, "discard", paths)
  if not sel then return nil, msg, code end
  -- the helper writes sb's upper layer behind sb's back: sb forgets what it
  -- knew of the layer before (nothing of sb's runs until the end) and after
  core.review_changed(sb)
  for _, c in ipairs(sel) do
    to_lower(st, c.path)
    if c.from then to_lower(st, c.from) end
  end
  -- directories the agent made that the base lacks (empty ones are no
  -- change of their own, as in git) go too, under what was selected
  local gone
  for _, e in ipairs((scan_map(st.upper))) do
    local under = gone and e.path:sub(1, #gone + 1) == gone .. "/"
    if e.type == "dir" and not under and not core.review_entry(st.base, e.path) then
      local chosen = paths == nil
      for _, p in ipairs(paths or {}) do
        if selects(clean_selector(p), e.path) then chosen = true end
      end
      if chosen then
        drop(st, e.path)
        gone = e.path
      end
    end
  end
  core.review_changed(sb)
  return true
end

local function checkpoint_ids(st)
  local ids = {}
  for _, e in ipairs(st.statedir:readdir("checkpoints") or {}) do
    local n = tonumber(e.name:match("^(%d+)$"))
    if n then ids[#ids + 1] = n end
  end
  sort(ids)
  return ids
end

--- sb:checkpoint() -> id: the agent's changes so far, to come back to.
--- Copies only what the upper layer holds (changed files), never the base.
function M.methods.checkpoint(sb)
  local st = state(sb, "checkpoint")
  local ids = checkpoint_ids(st)
  local id = (ids[#ids] or 0) + 1
  local dir, tmp = "checkpoints/" .. id, "checkpoints/" .. id .. ".tmp"
  local d = st.statedir
  assert(d:mkdir(tmp))
  local manifest = setmetatable({}, json.ARRAY)
  for i, e in ipairs((scan_map(st.upper))) do
    local m = { path = e.path, type = e.type, opaque = e.opaque }
    if e.type == "file" then
      m.blob = fmt("%d", i) -- a name: JSON numbers may come back as floats
      assert(d:write_file(tmp .. "/" .. m.blob, read_from(st.upperh, e.path, e)))
    elseif e.type == "link" then
      m.target = read_from(st.upperh, e.path, e)
    end
    manifest[#manifest + 1] = m
  end
  assert(d:write_file(tmp .. "/manifest.json", json.encode(manifest)))
  assert(d:rename(tmp, dir)) -- a checkpoint exists whole or not at all
  return id
end

--- sb:checkpoints() -> the ids, oldest first.
function M.methods.checkpoints(sb)
  return checkpoint_ids(state(sb, "checkpoints"))
end

-- The view made what checkpoint id holds, entry by entry. Idempotent: run
-- again after a crash in the middle, it finishes the job.
local function apply_checkpoint(st, id)
  local dir = "checkpoints/" .. fmt("%d", id)
  local text = st.statedir:read_file(dir .. "/manifest.json")
  if not text then return nil, fmt("ENOENT: there is no checkpoint %d", id), "ENOENT" end
  local want = {}
  local list = assert(json.decode(text))
  for _, m in ipairs(list) do want[m.path] = m end
  -- what the upper layer holds that the checkpoint does not: back to the base, deepest first
  local now = (scan_map(st.upper))
  for i = #now, 1, -1 do
    local e = now[i]
    if not want[e.path] then
      local lo = core.review_entry(st.base, e.path)
      if not (e.type == "dir" and lo and lo.type == "dir" and not e.opaque) then to_lower(st, e.path) end
    end
  end
  -- then the checkpoint's entries, parents first
  local _, cur = scan_map(st.upper)
  for _, m in ipairs(list) do
    local c = cur[m.path]
    if m.type == "whiteout" then
      drop(st, m.path)
    elseif m.type == "dir" then
      if m.opaque and not (c and c.opaque) then drop(st, m.path) end
      local s = st.merged:stat(m.path)
      if s and s.type ~= "directory" then drop(st, m.path) end
      local lo = core.review_entry(st.base, m.path)
      if not m.opaque and lo and lo.type == "dir" and (not s or (c and c.opaque)) then
        -- made again over the base's directory, the kernel hides the base's
        -- entries (an opaque directory): the checkpoint saw them, copy them
        -- in; the checkpoint's own entries below come next
        to_lower(st, m.path)
      end
      assert(st.merged:mkdir(m.path, { parents = true }))
    elseif m.type == "file" then
      local data = assert(st.statedir:read_file(dir .. "/" .. m.blob))
      if not (c and c.type == "file" and c.size == #data and st.upperh:read_file(m.path) == data) then
        put(st, m.path, "file", data)
      end
    elseif m.type == "link" then
      if not (c and c.type == "link" and st.upperh:readlink(m.path) == m.target) then put(st, m.path, "link", m.target) end
    end
  end
  return true
end

-- A restore under way is written down first ("restoring" in state_dir),
-- so one a crash cut short is finished when the state is next opened: the
-- view is one checkpoint's or the other's, never a mixture.
local JOURNAL = "restoring"

local function restore(st, id)
  if not st.statedir:stat("checkpoints/" .. fmt("%d", id) .. "/manifest.json") then
    return nil, fmt("ENOENT: there is no checkpoint %d", id), "ENOENT"
  end
  assert(st.statedir:write_file(JOURNAL, fmt("%d\n", id), { overwrite = true }))
  local ok, msg, code = apply_checkpoint(st, id)
  if ok then assert(st.statedir:remove(JOURNAL)) end
  return ok, msg, code
end

--- Finish a restore a crash interrupted (called when the state is opened).
function M.resume(st)
  local text = st.statedir:read_file(JOURNAL)
  if not text then return true end
  local id = tonumber(text:match("^(%d+)"))
  if not id then return nil, "EINVAL: state_dir's restore journal is damaged", "EINVAL" end
  return restore(st, id)
end

--- sb:restore(id) -> true: the view as it was at checkpoint id.
function M.methods.restore(sb, id)
  local st = state(sb, "restore")
  if not options.is_integer(id) then error("restore: id must be a checkpoint id (an integer)", 2) end
  core.review_changed(sb) -- as discard's
  local ok, msg, code = restore(st, id)
  core.review_changed(sb)
  return ok, msg, code
end

return M
