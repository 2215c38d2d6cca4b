-- The layers of an OverlaySandbox as sandbox.overlay.review reads and
-- writes them: the upper layer and base_dir read as they lie on disk (no
-- link followed), and every change made through the merged view, as the
-- agent's own operations make it (editing a layer under a live overlayfs
-- is undefined).
local core = require "sandbox.core"

local M = {}

local ipairs, tostring, error, assert = ipairs, tostring, error, assert

-- The entries below dir, as a list (parents first) and a map by path.
function M.scan(dir)
  local list, err = core.review_scan(dir)
  if not list then error("overlay review: cannot read " .. dir .. ": " .. tostring(err), 0) end
  local map = {}
  for _, e in ipairs(list) do map[e.path] = e end
  return list, map
end

-- A file's bytes or a link's text, through the helper h over that layer.
function M.read(h, path, e)
  if e.type == "link" then return assert(h:readlink(path)) end
  return assert(h:read_file(path))
end

-- Write a file or a link at path through the merged view, over whatever is there.
function M.put(st, path, kind, data)
  local m = st.merged
  local cur = m:stat(path)
  if cur and (cur.type ~= (kind == "link" and "symlink" or "file")) then assert(m:remove(path, { recursive = true })) end
  if kind == "link" then
    if cur then m:remove(path) end
    assert(m:symlink(data, path))
  else
    assert(m:write_file(path, data))
  end
end

-- Remove path (a whole tree) from the merged view, if there.
function M.drop(st, path)
  if st.merged:stat(path) then assert(st.merged:remove(path, { recursive = true })) end
end

-- Make path in the merged view what base_dir has there (nothing, a file, a link, a tree).
function M.to_lower(st, path)
  local lo = core.review_entry(st.base, path)
  if not lo then return M.drop(st, path) end
  if lo.type == "dir" then
    local cur = st.merged:stat(path)
    if cur and cur.type ~= "directory" then M.drop(st, path) end
    assert(st.merged:mkdir(path, { parents = true }))
    for _, x in ipairs((M.scan(st.base .. "/" .. path))) do
      local p = path .. "/" .. x.path
      if x.type == "dir" then assert(st.merged:mkdir(p, { parents = true }))
      elseif x.type == "file" or x.type == "link" then M.put(st, p, x.type, M.read(st.lower, p, x)) end
    end
    return
  end
  if lo.type == "file" or lo.type == "link" then return M.put(st, path, lo.type, M.read(st.lower, path, lo)) end
end

return M
