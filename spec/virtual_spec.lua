-- VirtualSandbox specifics (SPEC §2): its limits, options, scale.
local sandbox = require "sandbox"

local function code_of(...) return select(3, ...) end

describe("sandbox.virtual", function()
  describe("options", function()
    it("builds with no options", function()
      local sb = sandbox.virtual()
      assert.equal("virtual", sb.kind)
      assert.equal("/", sb.cwd)
      assert.is_false(sb.has_exec)
      sb:dispose()
    end)

    local bad = {
      { { max_file = 3 }, "unknown option 'max_file' %(did you mean 'max_files'%?%)" },
      { { base_dir = "/tmp" }, "unknown option 'base_dir'" },
      { { [1] = true }, "option names must be strings" },
      { { max_files = "many" }, "'max_files' must be a non%-negative integer" },
      { { max_files = 1.5 }, "'max_files'" },
      { { max_total_bytes = "lots" }, "'max_total_bytes' 'lots' is not a size" },
      { { max_total_bytes = -1 }, "must not be negative" },
      { { read_only = 1 }, "'read_only' must be a boolean" },
      { { audit = "log" }, "'audit' must be a function" },
      { { cwd = "relative" }, "'cwd' must be an absolute path" },
      { { cwd = "/a/../b" }, "must not contain '..'" },
      { { rules = { deny = "x" } }, "deny must be an array of strings" },
      { { rules = { denied = {} } }, "unknown key 'denied'" },
      { { rules = { allow = { "" } } }, "allow%[1%] must not be empty" },
      { { extensions = { read = { "md" } } }, "must start with '%.'" },
      { { files = { ["a"] = 1 } }, "must be a string" },
      { "nope", "options must be a table" },
    }
    for _, c in ipairs(bad) do
      it("raises for " .. (type(c[1]) == "table" and next(c[1]) and tostring(next(c[1])) or tostring(c[1])), function()
        local ok, err = pcall(function() local s = sandbox.virtual(c[1]); return s end)
        assert.is_false(ok)
        assert.matches(c[2], err)
        assert.matches("^[^:]*virtual_spec.lua:%d+: sandbox.virtual:", err) -- blames the caller
      end)
    end

    it("parses sizes", function()
      assert.equal(512 * 1024 * 1024, sandbox.parse_size("512MB"))
      assert.equal(1536, sandbox.parse_size("1.5k"))
      assert.equal(10, sandbox.parse_size(10))
      assert.equal(3 * 2 ^ 30, sandbox.parse_size("3 GiB"))
      assert.is_nil(sandbox.parse_size("1 parsec"))
      assert.is_nil(sandbox.parse_size({}))
    end)

    it("raises when initial files exceed the limits", function()
      assert.has_error(function()
        sandbox.virtual { max_total_bytes = 3, files = { a = "abcd" } }
      end)
      assert.has_error(function()
        sandbox.virtual { files = { ["../x"] = "a" } }
      end)
    end)

    it("initial files bypass read_only and rules (the host wrote them)", function()
      local sb = sandbox.virtual { read_only = true, rules = { deny = { "x" } },
                                   files = { x = "1", ["d/"] = true } }
      assert.equal("EACCES", code_of(sb:read_file("x")))
      assert.equal("directory", sb:stat("d").type)
      sb:dispose()
    end)
  end)

  describe("max_total_bytes", function()
    it("accepts writes up to exactly the limit, refuses one byte more, writes nothing", function()
      local sb = sandbox.virtual { max_total_bytes = 100 }
      assert.is_true(sb:write_file("a", string.rep("x", 60)))
      assert.is_true(sb:write_file("b", string.rep("x", 40)))
      local v, msg, code = sb:write_file("c", "x")
      assert.is_nil(v)
      assert.equal("ENOSPC", code)
      assert.matches("byte limit %(100%)", msg)
      assert.is_false(sb:exists("c"))
      assert.equal("ENOSPC", code_of(sb:write_file("sub/dir/c", "x")))
      assert.is_false(sb:exists("sub"))
      -- replacing counts the difference; a failed replace keeps the old bytes
      assert.equal("ENOSPC", code_of(sb:write_file("a", string.rep("y", 61))))
      assert.equal(string.rep("x", 60), sb:read_file("a"))
      assert.is_true(sb:write_file("a", string.rep("y", 59)))
      assert.is_true(sb:write_file("c", "z"))
      sb:dispose()
    end)

    it("frees budget on remove and recursive remove", function()
      local sb = sandbox.virtual { max_total_bytes = 10 }
      sb:write_file("d/a", "12345")
      sb:write_file("d/b", "12345")
      assert.equal("ENOSPC", code_of(sb:write_file("c", "1")))
      sb:remove("d", { recursive = true })
      assert.is_true(sb:write_file("c", "1234567890"))
      sb:dispose()
    end)
  end)

  describe("max_files", function()
    it("counts every entry, directories included, at the exact boundary", function()
      local sb = sandbox.virtual { max_files = 3 }
      assert.is_true(sb:write_file("d/a", "1")) -- d, d/a
      assert.is_true(sb:mkdir("e"))            -- 3
      assert.equal("ENOSPC", code_of(sb:write_file("f", "1")))
      assert.equal("ENOSPC", code_of(sb:mkdir("g")))
      assert.equal("ENOSPC", code_of(sb:write_file("e/x/y", "1")))
      assert.is_false(sb:exists("e/x"))
      assert.is_true(sb:write_file("d/a", "replace is free"))
      assert.is_true(sb:rename("d/a", "e/a"))
      sb:remove("d")
      assert.is_true(sb:write_file("f", "1"))
      sb:dispose()
    end)
  end)

  describe("scale", function()
    it("holds a 10 000-file tree in 100 directories", function()
      local sb = sandbox.virtual()
      for d = 1, 100 do
        for f = 1, 100 do
          assert(sb:write_file(("d%03d/f%03d.txt"):format(d, f), ("%d/%d"):format(d, f)))
        end
      end
      assert.equal(100, #sb:readdir("."))
      assert.equal(100, #sb:readdir("d050"))
      assert.equal("50/7", sb:read_file("d050/f007.txt"))
      assert.equal(10000, #sb:glob("**/*.txt", { max_results = 20000 }))
      local hits = sb:grep("^42/", { max_results = 200 })
      assert.equal(100, #hits)
      sb:remove("d050", { recursive = true })
      assert.equal(9900, #sb:glob("*/*", { max_results = 20000 }))
      local snap = sb:snapshot()
      local n = 0
      for _ in pairs(snap) do n = n + 1 end
      assert.equal(9900, n)
      sb:dispose()
    end)

    it("lists in byte order whatever order names arrive in (kept sorted, re-sorted on demand)", function()
      local sb = sandbox.virtual()
      local names, rng = {}, 12345
      for i = 1, 300 do
        rng = rng * 16807 % 2147483647 -- exact in doubles (5.1, LuaJIT)
        names[i] = ("n%05d.%03d%s"):format(rng % 100000, i, i % 3 == 0 and "é" or "") -- unique
        assert(sb:write_file("d/" .. names[i], "x"))
      end
      local function listed()
        local out = {}
        for _, e in ipairs(sb:readdir("d")) do out[#out + 1] = e.name end
        return out
      end
      local expect = { table.unpack(names) }
      table.sort(expect)
      assert.same(expect, listed())
      -- appends in order stay sorted; a rename to an earlier name and a late small name re-sort
      assert(sb:write_file("d/zzz", "x"))
      assert(sb:rename("d/zzz", "d/A"))
      assert(sb:write_file("d/0", "x"))
      assert(sb:remove("d/" .. names[1]))
      table.remove(expect, (function() for i, n in ipairs(expect) do if n == names[1] then return i end end end)())
      table.insert(expect, 1, "A")
      table.insert(expect, 1, "0")
      assert.same(expect, listed())
      assert.same(expect, listed())
      sb:dispose()
    end)

    it("handles 100-level deep paths", function()
      local sb = sandbox.virtual()
      local parts = {}
      for i = 1, 100 do parts[i] = "l" .. i end
      local deep = table.concat(parts, "/")
      assert.is_true(sb:write_file(deep .. "/leaf.txt", "deep"))
      assert.equal("deep", sb:read_file(deep .. "/leaf.txt"))
      assert.equal("deep", sb:read_file(deep .. string.rep("/..", 100) .. "/" .. deep .. "/leaf.txt"))
      assert.equal("EESCAPE", code_of(sb:read_file(deep .. string.rep("/..", 101) .. "/x")))
      assert.same({ deep .. "/leaf.txt" }, sb:glob("**/leaf.txt"))
      assert.is_true(sb:rename("l1", "m1"))
      assert.equal("deep", sb:read_file("m1" .. deep:sub(3) .. "/leaf.txt"))
      assert.is_true(sb:remove("m1", { recursive = true }))
      assert.same({}, sb:readdir("."))
      sb:dispose()
    end)
  end)

  describe("commands", function()
    it("cannot run any: exec and exec_shell return ENOTSUP", function()
      local sb = sandbox.virtual()
      local v, msg, code = sb:exec("ls", { "-la" })
      assert.is_nil(v)
      assert.equal("ENOTSUP", code)
      assert.matches("cannot run commands", msg)
      assert.equal("ENOTSUP", code_of(sb:exec_shell("echo hi")))
      assert.same({}, sb:processes())
      assert.equal(0, sb:poll())
      assert.equal(0, sb:poll(0.01))
      assert.has_error(function() sb:exec(42) end)
      sb:dispose()
    end)
  end)
end)
