-- The path front door (SPEC §4), table-driven, on every backend.
local backends = require "support.backends"

for _, be in ipairs(backends.list) do
  describe(be.name .. " path front door:", function()
    local sb
    before_each(function()
      sb = be.new(nil, { ["a/b/c.txt"] = "C", ["top.txt"] = "T" })
    end)
    after_each(function() sb:dispose() end)

    -- {path, expected code or content}
    local reads = {
      { "", "EINVAL" },
      { "a\0b", "EINVAL" },
      { "top.txt\0/../../etc/passwd", "EINVAL" },
      { string.rep("x/", 2047) .. "xy", "EINVAL" }, -- 4096 bytes
      { string.rep("n", 256), "ENAMETOOLONG" },
      { "a/" .. string.rep("n", 256) .. "/x", "ENAMETOOLONG" },
      { string.rep("n", 255), "ENOENT" },
      { "..", "EESCAPE" },
      { "../", "EESCAPE" },
      { "../x", "EESCAPE" },
      { "a/../../x", "EESCAPE" },
      { "a/b/../../../top.txt", "EESCAPE" },
      { "./../top.txt", "EESCAPE" },
      { "a/../top.txt", "T" },
      { "a/b/../../top.txt", "T" },
      { "./a//b/./c.txt", "C" },
      { "a/b/c.txt/", "ENOTDIR" },
      { "a/b/c.txt/.", "ENOTDIR" },
      { "a/b/c.txt/..", "ENOTDIR" },
      { "missing/../top.txt", "ENOENT" },
      { "top.txt/../top.txt", "ENOTDIR" },
      { "a//b//c.txt", "C" },
      { ".", "EISDIR" },
      { "a/..", "EISDIR" },
    }
    for _, c in ipairs(reads) do
      local path, want = c[1], c[2]
      it(("read_file(%q) -> %s"):format(#path > 40 and path:sub(1, 37) .. "..." or path, want), function()
        local v, msg, code = sb:read_file(path)
        if want:match("^E[A-Z]+$") then
          assert.is_nil(v)
          assert.equal(want, code)
          assert.equal(want .. ":", msg:sub(1, #want + 1))
        else
          assert.equal(want, v)
        end
      end)
    end

    it("accepts a 4095-byte path (and reports the miss)", function()
      local p = string.rep("x/", 2047) .. "y"
      assert.equal(4095, #p)
      assert.equal("ENOENT", select(3, sb:read_file(p)))
    end)

    it("accepts absolute paths under cwd and strips the prefix", function()
      local root = sb.cwd == "/" and "" or sb.cwd
      assert.equal("C", sb:read_file(root .. "/a/b/c.txt"))
      assert.equal("T", sb:read_file(root .. "//top.txt"))
      assert.equal("directory", sb:stat(root .. "/").type)
    end)

    it("refuses absolute paths outside cwd with EESCAPE", function()
      if sb.cwd == "/" then return end -- every absolute path is under "/"
      for _, p in ipairs { "/etc/passwd", sb.cwd .. "x/top.txt", sb.cwd .. "/../top.txt",
                           "/", sb.cwd:match("^(.*)/[^/]*$") .. "/" } do
        assert.equal("EESCAPE", select(3, sb:read_file(p)), p)
      end
    end)

    it("normalises the path it reports, never showing a host path", function()
      local _, msg = sb:read_file("a/./b//missing")
      assert.equal("ENOENT: no such file or directory: a/b/missing", msg)
      _, msg = sb:stat("../../x")
      assert.matches("^EESCAPE: ", msg)
      if sb.cwd ~= "/" then assert.is_nil(msg:find(sb.cwd, 1, true)) end
    end)

    it("applies the same rules to every operation", function()
      for _, op in ipairs {
        function() return sb:write_file("../x", "y") end,
        function() return sb:mkdir("../x") end,
        function() return sb:remove("../x") end,
        function() return sb:rename("top.txt", "../x") end,
        function() return sb:rename("../x", "top.txt") end,
        function() return sb:readdir("..") end,
        function() return sb:stat("a/../..") end,
        function() return sb:grep("x", { path = "../" }) end,
      } do
        local v, _, code = op()
        assert.is_nil(v)
        assert.equal("EESCAPE", code)
      end
      assert.equal("T", sb:read_file("top.txt"))
    end)
  end)
end

describe("virtual sandbox with a cwd", function()
  local sandbox = require "sandbox"
  local sb
  before_each(function()
    sb = sandbox.virtual { cwd = "/workspace/", files = { ["src/a.lua"] = "A" } }
  end)
  after_each(function() sb:dispose() end)

  it("normalises cwd", function() assert.equal("/workspace", sb.cwd) end)

  local cases = {
    { "/workspace/src/a.lua", "A" },
    { "/workspace//./src/a.lua", "A" },
    { "src/a.lua", "A" },
    { "/workspace", "EISDIR" },
    { "/etc/passwd", "EESCAPE" },
    { "/workspacex/src/a.lua", "EESCAPE" },
    { "/workspace/../workspace/src/a.lua", "EESCAPE" },
    { "/", "EESCAPE" },
    { "/src/a.lua", "EESCAPE" },
  }
  for _, c in ipairs(cases) do
    it(("read_file(%q) -> %s"):format(c[1], c[2]), function()
      local v, _, code = sb:read_file(c[1])
      if c[2]:match("^E") then assert.equal(c[2], code) else assert.equal(c[2], v) end
    end)
  end

  it("accepts absolute keys in files", function()
    local s = sandbox.virtual { cwd = "/w", files = { ["/w/x.txt"] = "X" } }
    assert.equal("X", s:read_file("x.txt"))
    assert.has_error(function() sandbox.virtual { cwd = "/w", files = { ["/etc/x"] = "X" } } end)
    s:dispose()
  end)
end)
