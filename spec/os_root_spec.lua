-- Go's os.Root test tables (rootTestCases and rootConsistencyTestCases in
-- Go's src/os/root_test.go), restated here as layout, operation and the
-- expected result, and replayed on every backend: the VirtualSandbox and
-- the ContainerSandbox on both resolvers. Each case matches Go or is a
-- difference the README lists (writes never follow a final link; write_file
-- and mkdir are called with parents = false, as Go's Create and Mkdir make
-- no parents). Where Go only says "an error", the code we promise is named.
local backends = require "support.backends"

-- A layout entry: "d/" a directory, "f" a file holding its own name,
-- "a => b" a symlink a with target b ($ABS: the root's absolute path).
local function build(sb, layout)
  for _, ent in ipairs(layout) do
    local name, target = ent:match("^(.-) => (.*)$")
    local parent = (name or ent):match("^(.*)/[^/]+/?$")
    if parent then assert(sb:mkdir(parent)) end
    if name then
      assert(sb:symlink((target:gsub("%$ABS", sb.cwd == "/" and "" or sb.cwd)), name))
    elseif ent:sub(-1) == "/" then
      assert(sb:mkdir(ent))
    else
      assert(sb:write_file(ent, ent))
    end
  end
end

local function fresh(be)
  local opts = { allow_escaping_links = true } -- the layouts hold links that lead out
  if be.kind == "virtual" then opts.cwd = "/ROOT" else opts.exec = false end
  return be.new(opts)
end

-- rootTestCases: {name, layout, open, target, ltarget, code}. target is what
-- resolving `open` reaches (the file made first, or that must not be read);
-- ltarget the final link itself; code what a following access gets when it
-- fails (Go: wantError).
local root_cases = {
  { "plain path", {}, "target", "target" },
  { "path in directory", { "a/b/c/" }, "a/b/c/target", "a/b/c/target" },
  { "symlink", { "link => target" }, "link", "target", "link" },
  { "symlink dotdot slash", { "link => ../" }, "link", nil, "link", "EESCAPE" },
  { "symlink ending in slash", { "dir/", "link => dir/" }, "link/target", "dir/target" },
  { "slash after symlink to file", { "link => ../ROOT/target" }, "link/", "target", nil, "EESCAPE" },
  { "slash after symlink to dir", { "link => ../ROOT/target", "target/" }, "link/", nil, nil, "EESCAPE" },
  { "symlink dotdot dotdot slash", { "dir/link => ../../" }, "dir/link", nil, "dir/link", "EESCAPE" },
  { "symlink chain", { "link => a/b/c/target", "a/b => e", "a/e => ../f", "f => g/h/i", "g/h/i => ..", "g/c/" },
    "link", "g/c/target", "link" },
  { "path with dot", { "a/b/" }, "./a/./b/./target", "a/b/target" },
  { "path with dotdot", { "a/b/" }, "a/../a/b/../../a/b/../b/target", "a/b/target" },
  { "path with dotdot slash", {}, "../", nil, nil, "EESCAPE" },
  { "path with dotdot dotdot slash", { "a/" }, "a/../../", nil, nil, "EESCAPE" },
  { "dotdot no symlink", { "a/" }, "a/../target", "target" },
  { "dotdot after symlink", { "a => b/c", "b/c/" }, "a/../target", "b/target" },
  { "dotdot before symlink", { "a => b/c", "b/c/" }, "b/../a/target", "b/c/target" },
  { "symlink ends in dot", { "a => b/.", "b/" }, "a/target", "b/target" },
  { "directory does not exist", {}, "a/file", nil, nil, "ENOENT" },
  { "empty path", {}, "", nil, nil, "EINVAL" },
  { "symlink cycle", { "a => a" }, "a", nil, "a", "ELOOP" },
  { "path escapes", {}, "../ROOT/target", nil, nil, "EESCAPE" },
  { "long path escapes", { "a/" }, "a/../../ROOT/target", nil, nil, "EESCAPE" },
  { "absolute symlink", { "link => $ABS/target" }, "link", "target", "link", "EESCAPE" },
  { "relative symlink", { "link => ../ROOT/target" }, "link", "target", "link", "EESCAPE" },
  { "symlink chain escapes", { "link => a/b/c/target", "a/b => e", "a/e => ../../ROOT", "c/" },
    "link", "c/target", "link", "EESCAPE" },
}

local function unpack_case(c)
  return { name = c[1], layout = c[2], open = c[3], target = c[4], ltarget = c[5], code = c[6] }
end

-- The link text a layout gives ltarget.
local function link_text(t, sb)
  for _, ent in ipairs(t.layout) do
    local name, target = ent:match("^(.-) => (.*)$")
    if name == t.ltarget then return (target:gsub("%$ABS", sb.cwd == "/" and "" or sb.cwd)) end
  end
end

local function fails(code, ...)
  local v, msg, got = ...
  assert.is_nil(v, "expected " .. tostring(code) .. ", got a result")
  if code then assert.equal(code, got, msg) end
  return msg
end

-- Each operation of Go's tests: prepare(sb, t) then check(sb, t).
local ops = {}

ops["open a file (read_file)"] = function(sb, t)
  if t.target and not t.code then assert(sb:write_file(t.target, "target")) end
  if t.code then return fails(t.code, sb:read_file(t.open)) end
  assert.equal("target", sb:read_file(t.open))
end

ops["open a directory (readdir)"] = function(sb, t)
  if t.target and not t.code then
    assert(sb:mkdir(t.target))
    assert(sb:write_file(t.target .. "/found", ""))
  end
  if t.code then return fails(t.code, sb:readdir(t.open)) end
  local names = {}
  for _, e in ipairs(assert(sb:readdir(t.open))) do names[#names + 1] = e.name end
  assert.same({ "found" }, names)
end

ops["stat (follow)"] = function(sb, t)
  if t.target and not t.code then assert(sb:write_file(t.target, "content")) end
  if t.code then return fails(t.code, sb:stat(t.open, { follow = true })) end
  assert.equal(7, assert(sb:stat(t.open, { follow = true })).size)
end

ops["lstat (stat)"] = function(sb, t)
  if t.ltarget then
    local st = assert(sb:stat(t.open))
    assert.equal("symlink", st.type)
    assert.equal(#link_text(t, sb), st.size) -- the length of the link's text
    return
  end
  if t.target and not t.code then assert(sb:write_file(t.target, "content")) end
  if t.code then return fails(t.code, sb:stat(t.open)) end
  assert.equal(7, assert(sb:stat(t.open)).size)
end

ops["readlink"] = function(sb, t)
  if t.ltarget then
    assert.equal(link_text(t, sb), sb:readlink(t.open))
    return
  end
  -- not a link: an error ("link/" names what the link leads to, not a link)
  fails(t.open == "link/" and "EINVAL" or t.code, sb:readlink(t.open))
end

-- Go's Create follows a final link; write_file never does (listed in the README).
ops["create (write_file)"] = function(sb, t)
  if t.ltarget then
    local want = t.code == "ELOOP" and "ELOOP" or t.code and "EESCAPE" or "ELOOP"
    local msg = fails(want, sb:write_file(t.open, "target", { parents = false }))
    if not t.code then
      assert.matches("write to '" .. t.target:gsub("%p", "%%%0") .. "' instead", msg)
      assert.is_false(sb:exists(t.target), "a link was written through")
    end
    return
  end
  if t.code then
    -- "link/" names a directory to write: EISDIR before anything is resolved
    return fails(t.open == "link/" and "EISDIR" or t.code, sb:write_file(t.open, "target", { parents = false }))
  end
  assert(sb:write_file(t.open, "target", { parents = false }))
  assert.equal("target", sb:read_file(t.target))
end

ops["mkdir"] = function(sb, t)
  if t.ltarget or (t.code and t.open:match("^link/$")) then -- the name is taken by a link
    return fails("EEXIST", sb:mkdir(t.open, { parents = false }))
  end
  if t.code then return fails(t.code, sb:mkdir(t.open, { parents = false })) end
  assert(sb:mkdir(t.open, { parents = false }))
  assert.equal("directory", assert(sb:stat(t.target)).type)
end

-- Remove acts on a final link itself.
ops["remove"] = function(sb, t)
  if t.ltarget then
    assert(sb:remove(t.open))
    fails("ENOENT", sb:stat(t.ltarget))
    return
  end
  if t.target and not t.code then assert(sb:write_file(t.target, "")) end
  if t.code then
    -- "link/" must be a directory, and a link is not one
    return fails(t.open:match("^link/$") and "ENOTDIR" or t.code, sb:remove(t.open))
  end
  assert(sb:remove(t.open))
  fails("ENOENT", sb:stat(t.target))
end

ops["rename from"] = function(sb, t)
  if t.ltarget then
    local text = sb:readlink(t.ltarget)
    assert(sb:rename(t.open, "destination"))
    assert.equal(text, sb:readlink("destination"))
    fails("ENOENT", sb:stat(t.ltarget))
    return
  end
  if t.target and not t.code then assert(sb:write_file(t.target, "target")) end
  if t.code then return fails(t.open:match("^link/$") and "ENOTDIR" or t.code, sb:rename(t.open, "destination")) end
  assert(sb:rename(t.open, "destination"))
  assert.equal("target", sb:read_file("destination"))
  fails("ENOENT", sb:stat(t.target))
end

ops["rename to"] = function(sb, t)
  assert(sb:write_file("source", "target"))
  if t.ltarget then -- the link is replaced, not followed
    assert(sb:rename("source", t.open, { overwrite = true }))
    assert.equal("file", sb:stat(t.ltarget).type)
    assert.equal("target", sb:read_file(t.ltarget))
    return
  end
  if t.code then
    return fails(t.open:match("^link/$") and "ENOTDIR" or t.code, sb:rename("source", t.open, { overwrite = true }))
  end
  assert(sb:rename("source", t.open, { overwrite = true }))
  assert.equal("target", sb:read_file(t.target))
end

ops["symlink"] = function(sb, t)
  if t.ltarget or (t.code and t.open:match("^link/$")) then
    return fails("EEXIST", sb:symlink("linktarget", t.open))
  end
  if t.code then return fails(t.code, sb:symlink("linktarget", t.open)) end
  assert(sb:symlink("linktarget", t.open))
  assert.equal("linktarget", sb:readlink(t.target))
end

local op_names = {}
for k in pairs(ops) do op_names[#op_names + 1] = k end
table.sort(op_names)

for _, be in ipairs(backends.list) do
  describe("Go's os.Root cases, " .. be.name .. ":", function()
    for _, raw in ipairs(root_cases) do
      local t = unpack_case(raw)
      for _, op in ipairs(op_names) do
        it(t.name .. ": " .. op, function()
          local sb = fresh(be)
          build(sb, t.layout)
          ops[op](sb, t)
          sb:dispose()
        end)
      end
    end
  end)
end

-- rootConsistencyTestCases: Go checks os.Root against plain os calls on
-- Linux; here each case's result is stated (Linux's answer, in our codes).
-- {name, layout, path, {op = expected}}; expected: a value, or an error code.
local DIR = { "target/file" }
local consistency = {
  { "file", { "target" }, "target",
    { read = "target", stat = "file", lstat = "file", readlink = "EINVAL", remove = true } },
  { "dir slash dot", DIR, "target/.",
    { readdir = { "file" }, stat = "directory", lstat = "directory", remove = "EINVAL", rename = "EINVAL",
      write = "EISDIR", mkdir = "EEXIST", symlink = "EEXIST", readlink = "EINVAL" } },
  { "dot", { "file" }, ".", { readdir = { "file" }, stat = "directory", remove = "EINVAL", rename = "EINVAL" } },
  { "file slash dot", { "target" }, "target/.",
    { read = "ENOTDIR", stat = "ENOTDIR", remove = "ENOTDIR", rename = "ENOTDIR", write = "EISDIR" } },
  { "dir slash", DIR, "target/",
    { readdir = { "file" }, stat = "directory", write = "EISDIR", mkdir = "EEXIST", symlink = "EEXIST" } },
  { "dot slash", { "file" }, "./", { readdir = { "file" }, stat = "directory", remove = "EINVAL" } },
  { "file slash", { "target" }, "target/",
    { read = "ENOTDIR", stat = "ENOTDIR", lstat = "ENOTDIR", write = "EISDIR", remove = "ENOTDIR" } },
  { "file in path", { "file" }, "file/target",
    { read = "ENOTDIR", stat = "ENOTDIR", write = "ENOTDIR", mkdir = "ENOTDIR", symlink = "ENOTDIR" } },
  { "directory in path missing", {}, "dir/target", { read = "ENOENT", stat = "ENOENT", remove = "ENOENT" } },
  { "target does not exist", {}, "target",
    { read = "ENOENT", stat = "ENOENT", readlink = "ENOENT", remove = "ENOENT", write = true, mkdir = true } },
  { "symlink slash", { "target/file", "link => target" }, "link/",
    { readdir = { "file" }, stat = "directory", lstat = "directory", readlink = "EINVAL", remove = "ENOTDIR",
      write = "EISDIR", mkdir = "EEXIST" } },
  { "symlink slash dot", { "target/file", "link => target" }, "link/.",
    { readdir = { "file" }, stat = "directory", remove = "EINVAL", rename = "EINVAL" } },
  { "unresolved symlink", { "link => target" }, "link",
    { read = "ENOENT", stat = "ENOENT", lstat = "symlink", readlink = "target", remove = true, write = "ELOOP",
      mkdir = "EEXIST", symlink = "EEXIST" } },
  { "resolved symlink", { "link => target", "target" }, "link",
    { read = "target", stat = "file", lstat = "symlink", readlink = "target", remove = true, write = "ELOOP" } },
  { "dotdot in path after symlink", { "a => b/c", "b/c/", "b/target" }, "a/../target",
    { read = "b/target", stat = "file" } },
  { "symlink to dir ends in slash", { "dir/", "link => dir/" }, "link",
    { readdir = {}, stat = "directory", lstat = "symlink", readlink = "dir/" } },
  { "symlink to file ends in slash", { "file", "link => file/" }, "link",
    { read = "ENOTDIR", stat = "ENOTDIR", lstat = "symlink", readlink = "file/" } },
  { "long file name", {}, ("a"):rep(500), { read = "ENAMETOOLONG", stat = "ENAMETOOLONG", write = "ENAMETOOLONG" } },
  { "question mark", {}, "?", { read = "ENOENT", write = true } },
  { "nul byte", {}, "\0", { read = "EINVAL", stat = "EINVAL", write = "EINVAL", symlink = "EINVAL" } },
}

local cops = {
  read = function(sb, p) return sb:read_file(p) end,
  readdir = function(sb, p)
    local l, m, c = sb:readdir(p)
    if not l then return l, m, c end
    local names = {}
    for _, e in ipairs(l) do names[#names + 1] = e.name end
    return names
  end,
  stat = function(sb, p)
    local st, m, c = sb:stat(p, { follow = true })
    return st and st.type, m, c
  end,
  lstat = function(sb, p)
    local st, m, c = sb:stat(p)
    return st and st.type, m, c
  end,
  readlink = function(sb, p) return sb:readlink(p) end,
  remove = function(sb, p) return sb:remove(p) end,
  rename = function(sb, p) return sb:rename(p, "other") end,
  write = function(sb, p) return sb:write_file(p, "file contents", { parents = false }) end,
  mkdir = function(sb, p) return sb:mkdir(p, { parents = false }) end,
  symlink = function(sb, p) return sb:symlink("linktarget", p) end,
}

for _, be in ipairs(backends.list) do
  describe("Go's os.Root consistency cases, " .. be.name .. ":", function()
    for _, c in ipairs(consistency) do
      local names = {}
      for k in pairs(c[4]) do names[#names + 1] = k end
      table.sort(names)
      for _, op in ipairs(names) do
        local want = c[4][op]
        it(("%s: %s %q"):format(c[1], op, c[3]:sub(1, 40)), function()
          local sb = fresh(be)
          build(sb, c[2])
          local got, msg, code = cops[op](sb, c[3])
          if type(want) == "string" and want:match("^E[A-Z]+$") then
            assert.is_nil(got, ("expected %s, got %s"):format(want, tostring(got)))
            assert.equal(want, code, msg)
          elseif type(want) == "table" then
            assert.same(want, got, msg)
          else
            assert.equal(want, got, msg)
          end
          sb:dispose()
        end)
      end
    end
  end)
end
