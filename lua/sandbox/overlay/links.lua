-- The links a commit of an OverlaySandbox's changes would leave leading out
-- of base_dir (sandbox.overlay.review refuses such a commit), judged as the
-- kernel will resolve them once the changes are in base_dir.
local core = require "sandbox.core"
local layers = require "sandbox.overlay.layers"

local M = {}

local ipairs = ipairs
local read_from = layers.read
local sort, concat = table.sort, table.concat

-- What a path of base_dir will be once the selected changes are committed
-- (none selected: what it is now): "link", text | "dir" | "file" | nil.
-- Paths are real (no link on the way): the resolver below walks them so.
local function tree_after(st, sel)
  local chosen, dirs = {}, {}
  for _, c in ipairs(sel) do
    chosen[c.path] = c
    if c.from then chosen[c.from] = { kind = "deleted" } end
    local p = c.path:match("^(.*)/[^/]+$")
    while p do
      dirs[p] = true
      p = p:match("^(.*)/[^/]+$")
    end
  end
  return function(path)
    local c = chosen[path]
    if c then
      if c.kind == "deleted" or not c.upper then return nil end
      if c.upper.type == "link" then return "link", read_from(st.upperh, path, c.upper) end
      return c.upper.type == "dir" and "dir" or "file"
    end
    local e = core.review_entry(st.base, path)
    if e then
      if e.type == "link" then return "link", read_from(st.lower, path, e) end
      return e.type == "dir" and "dir" or "file"
    end
    return dirs[path] and "dir" or nil
  end
end

-- Does the link at path, with this text, lead out of the base in the tree
-- `at` describes, as the kernel resolves it: ".." from the real directory,
-- every link on the way followed (40 hops; a loop leads nowhere), an
-- absolute text out? A missing or non-directory component ends it inside.
local function leads_out(at, path, target)
  local dir, todo = {}, {}
  for comp in path:gmatch("[^/]+") do dir[#dir + 1] = comp end
  dir[#dir] = nil -- the link's own name
  local function push(text) -- text's components go first
    if text:sub(1, 1) == "/" then return false end
    local comps = {}
    for comp in text:gmatch("[^/]+") do comps[#comps + 1] = comp end
    for i = #comps, 1, -1 do todo[#todo + 1] = comps[i] end
    return true
  end
  if not push(target) then return true end
  local hops = 0
  while #todo > 0 do
    local comp = table.remove(todo)
    if comp == ".." then
      if #dir == 0 then return true end
      dir[#dir] = nil
    elseif comp ~= "." then
      local p = #dir > 0 and concat(dir, "/") .. "/" .. comp or comp
      local kind, text = at(p)
      if kind == "link" then
        hops = hops + 1
        if hops > 40 then return false end
        if not push(text) then return true end
      elseif kind == "dir" then
        dir[#dir + 1] = comp
      else
        return false
      end
    end
  end
  return false
end

-- A ".." after a name: where it leads depends on what the name will be
-- (the same rule as sb:symlink's).
local function uncertain(target)
  local named = false
  for comp in target:gmatch("[^/]+") do
    if comp == ".." and named then return true end
    if comp ~= "." and comp ~= ".." then named = true end
  end
  return false
end

-- The links a commit of sel would leave leading out of base_dir: every link
-- it writes, and every link already there that leads inside now and would
-- lead out after it (a committed y -> . turning x -> y/y/../../etc out).
function M.outward(st, sel)
  local after, before = tree_after(st, sel), tree_after(st, {})
  local out, seen = {}, {}
  for _, c in ipairs(sel) do
    if c.upper and c.upper.type == "link" then
      seen[c.path] = true
      local text = read_from(st.upperh, c.path, c.upper)
      if uncertain(text) or leads_out(after, c.path, text) then out[#out + 1] = c.path end
    end
  end
  local links = core.review_scan(st.base, "link") or {}
  for _, e in ipairs(links) do
    local kind, text = after(e.path)
    if not seen[e.path] and kind == "link" and leads_out(after, e.path, text)
      and not leads_out(before, e.path, text) then
      out[#out + 1] = e.path
    end
  end
  sort(out)
  return out
end

return M
