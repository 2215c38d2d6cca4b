-- Baseline for the VirtualSandbox workload (SPEC §10): the same tree in pure
-- Lua (nested tables of children per directory), with the same calls and
-- result shapes as the C baseline and the sandbox.
local M = {}
local Tree = {}
Tree.__index = Tree

local function split(p)
  local parts = {}
  for c in p:gmatch("[^/]+") do
    if c == ".." then error("escape") end
    if c ~= "." then parts[#parts + 1] = c end
  end
  return parts
end

local function walk(t, parts, upto)
  local cur = t.root
  for i = 1, upto do
    cur = cur.children and cur.children[parts[i]]
    if not cur then return nil end
  end
  return cur
end

function M.new() return setmetatable({ root = { children = {}, mtime = os.time() } }, Tree) end

function Tree:mkdir(p)
  local cur = self.root
  for _, c in ipairs(split(p)) do
    local nxt = cur.children[c]
    if not nxt then
      nxt = { name = c, children = {}, mtime = os.time() }
      cur.children[c] = nxt
    elseif not nxt.children then
      error("not a directory")
    end
    cur = nxt
  end
  return true
end

function Tree:write_file(p, data)
  local parts = split(p)
  local dir = walk(self, parts, #parts - 1)
  if not (dir and dir.children) then error("no such directory") end
  local name = parts[#parts]
  local f = dir.children[name]
  if f and f.children then error("is a directory") end
  if not f then
    f = { name = name }
    dir.children[name] = f
  end
  f.data, f.mtime = data, os.time()
  return true
end

function Tree:read_file(p)
  local parts = split(p)
  local f = walk(self, parts, #parts)
  if not f or f.children then error("no such file") end
  return f.data
end

function Tree:stat(p)
  local parts = split(p)
  local f = walk(self, parts, #parts)
  if not f then error("no such file") end
  local dir = f.children ~= nil
  return { type = dir and "directory" or "file", size = dir and 0 or #f.data, mtime = f.mtime,
           mode = dir and 493 or 420 }
end

local function by_name(a, b) return a.name < b.name end

function Tree:readdir(p)
  local parts = split(p)
  local d = walk(self, parts, #parts)
  if not (d and d.children) then error("not a directory") end
  local out = {}
  for name, c in pairs(d.children) do
    local dir = c.children ~= nil
    out[#out + 1] = { name = name, type = dir and "directory" or "file", size = dir and 0 or #c.data,
                      is_directory = dir }
  end
  table.sort(out, by_name)
  return out
end

function Tree:remove(p)
  local parts = split(p)
  local dir = walk(self, parts, #parts - 1)
  local name = parts[#parts]
  local f = dir and dir.children and dir.children[name]
  if not f then error("no such file") end
  if f.children and next(f.children) then error("directory not empty") end
  dir.children[name] = nil
  return true
end

function Tree:dispose() self.root = nil end

return M
