-- Shared options (SPEC §2): size caps, overwrite, read_only, rules,
-- extensions, audit. The same policy code serves every backend.
local backends = require "support.backends"

local function code_of(...) return select(3, ...) end

for _, be in ipairs(backends.list) do
  describe(be.name .. " policy:", function()
    local sb
    local function new(opts, files) sb = be.new(opts, files); return sb end
    after_each(function() if sb then sb:dispose() end end)

    describe("max_read_bytes", function()
      it("reads a file of exactly the limit and refuses one byte more", function()
        new({ max_read_bytes = 10 }, { ["ten"] = string.rep("x", 10), ["eleven"] = string.rep("x", 11) })
        assert.equal(10, #sb:read_file("ten"))
        local v, msg, code = sb:read_file("eleven")
        assert.is_nil(v)
        assert.equal("EFBIG", code)
        assert.matches("11 bytes, max_read_bytes is 10", msg)
      end)

      it("accepts sizes as strings", function()
        new({ max_read_bytes = "1KB" }, { ["k"] = string.rep("x", 1024), ["k1"] = string.rep("x", 1025) })
        assert.equal(1024, #sb:read_file("k"))
        assert.equal("EFBIG", code_of(sb:read_file("k1")))
      end)
    end)

    describe("max_write_bytes", function()
      it("writes exactly the limit and refuses one byte more, writing nothing", function()
        new({ max_write_bytes = 8 }, { ["old"] = "keep" })
        assert.is_true(sb:write_file("eight", string.rep("y", 8)))
        assert.equal("EFBIG", code_of(sb:write_file("nine", string.rep("y", 9))))
        assert.is_false(sb:exists("nine"))
        assert.equal("EFBIG", code_of(sb:write_file("old", string.rep("y", 9))))
        assert.equal("keep", sb:read_file("old"))
        assert.equal("EFBIG", code_of(sb:write_file("deep/dir/nine", string.rep("y", 9))))
        assert.is_false(sb:exists("deep"))
      end)
    end)

    describe("allow_overwrite = false", function()
      it("refuses to replace files by write or rename, even when asked", function()
        new({ allow_overwrite = false }, { ["a"] = "A", ["b"] = "B" })
        assert.equal("EEXIST", code_of(sb:write_file("a", "new")))
        assert.equal("EEXIST", code_of(sb:write_file("a", "new", { overwrite = true })))
        assert.equal("EEXIST", code_of(sb:rename("a", "b", { overwrite = true })))
        assert.same({ "A", "B" }, { sb:read_file("a"), sb:read_file("b") })
        assert.is_true(sb:write_file("c", "C"))
      end)
    end)

    describe("read_only = true", function()
      it("refuses every mutating operation with EACCES and changes nothing", function()
        new({ read_only = true }, { ["a/f"] = "F" })
        local before = sb:snapshot { directories = true }
        for name, op in pairs {
          write = function() return sb:write_file("new", "x") end,
          overwrite = function() return sb:write_file("a/f", "x") end,
          mkdir = function() return sb:mkdir("d") end,
          remove = function() return sb:remove("a/f") end,
          remove_tree = function() return sb:remove("a", { recursive = true }) end,
          rename = function() return sb:rename("a/f", "g") end,
        } do
          local v, msg, code = op()
          assert.is_nil(v, name)
          assert.equal("EACCES", code, name)
          assert.matches("read%-only", msg)
        end
        assert.same(before, sb:snapshot { directories = true })
        assert.equal("F", sb:read_file("a/f"))
        assert.equal(1, #sb:glob("**/f"))
      end)
    end)

    describe("rules", function()
      local files = {
        ["src/a.lua"] = "A", ["src/secret/key.pem"] = "K", ["docs/x.md"] = "X",
        [".env"] = "TOKEN=1", ["README.md"] = "R",
      }

      it("deny refuses reads and writes under the denied path, with the rule in the message", function()
        new({ rules = { deny = { "src/secret", ".env" } } }, files)
        local v, msg, code = sb:read_file("src/secret/key.pem")
        assert.is_nil(v)
        assert.equal("EACCES", code)
        assert.matches("src/secret", msg)
        assert.equal("EACCES", code_of(sb:read_file(".env")))
        assert.equal("EACCES", code_of(sb:write_file("src/secret/new", "x")))
        assert.equal("EACCES", code_of(sb:remove("src/secret", { recursive = true })))
        assert.equal("EACCES", code_of(sb:rename("src/a.lua", ".env", { overwrite = true })))
        assert.equal("EACCES", code_of(sb:read_file("src/../src/secret/key.pem")))
        assert.equal("A", sb:read_file("src/a.lua"))
      end)

      it("deny hides entries from readdir, glob, grep and exists", function()
        new({ rules = { deny = { "**/*.pem", ".env" } } }, files)
        local names = {}
        for _, e in ipairs(sb:readdir("src/secret")) do names[#names + 1] = e.name end
        assert.same({}, names)
        assert.same({}, sb:glob("**/*.pem"))
        assert.is_false(sb:exists(".env"))
        assert.same({}, sb:grep("TOKEN"))
        for _, p in ipairs(sb:glob("**")) do assert.is_nil(p:match("%.pem$")) end
      end)

      it("allow permits only the matched paths; their parent directories stay navigable", function()
        new({ rules = { allow = { "src/*.lua", "README.md" } } }, files)
        assert.equal("A", sb:read_file("src/a.lua"))
        assert.equal("R", sb:read_file("README.md"))
        assert.equal("EACCES", code_of(sb:read_file("docs/x.md")))
        assert.equal("EACCES", code_of(sb:write_file("docs/new.md", "x")))
        assert.is_true(sb:write_file("src/b.lua", "B"))
        local top = {}
        for _, e in ipairs(sb:readdir(".")) do top[#top + 1] = e.name end
        assert.same({ "README.md", "src" }, top)
        assert.same({ "README.md", "src", "src/a.lua", "src/b.lua" }, sb:glob("**"))
        assert.equal("EACCES", code_of(sb:readdir("docs")))
        assert.equal("EACCES", code_of(sb:stat("docs/x.md")))
        assert.is_false(sb:exists("docs/x.md"))
      end)

      it("deny wins over allow", function()
        new({ rules = { allow = { "src" }, deny = { "src/secret" } } }, files)
        assert.equal("A", sb:read_file("src/a.lua"))
        assert.equal("EACCES", code_of(sb:read_file("src/secret/key.pem")))
      end)

      it("are checked after the boundary: an escape is still EESCAPE", function()
        new({ rules = { allow = { "**" } } }, files)
        assert.equal("EESCAPE", code_of(sb:read_file("../x")))
      end)
    end)

    describe("extensions", function()
      it("allow reads and writes only of listed suffixes, case-insensitively", function()
        new({ extensions = { read = { ".md", ".LUA" }, write = { ".md", "" } } },
          { ["a.md"] = "A", ["b.lua"] = "B", ["c.txt"] = "C", ["Makefile"] = "M", ["d.MD"] = "D" })
        assert.equal("A", sb:read_file("a.md"))
        assert.equal("B", sb:read_file("b.lua"))
        assert.equal("D", sb:read_file("d.MD"))
        local v, msg, code = sb:read_file("c.txt")
        assert.is_nil(v)
        assert.equal("EACCES", code)
        assert.matches("extension", msg)
        assert.equal("EACCES", code_of(sb:read_file("Makefile")))
        assert.is_true(sb:write_file("new.md", "x"))
        assert.is_true(sb:write_file("LICENSE", "x"))
        assert.equal("EACCES", code_of(sb:write_file("x.lua", "x")))
        assert.equal("EACCES", code_of(sb:remove("c.txt")))
        assert.equal("EACCES", code_of(sb:rename("a.md", "a.txt")))
        assert.is_true(sb:mkdir("dir.lua"))
        assert.is_false(sb:exists("x.lua"))
      end)

      it("limit grep to readable files but not listings", function()
        new({ extensions = { read = { ".md" } } }, { ["a.md"] = "hit", ["b.txt"] = "hit" })
        assert.same({ { path = "a.md", line = 1, text = "hit" } }, sb:grep("hit"))
        assert.equal(2, #sb:glob("*"))
      end)
    end)

    describe("audit", function()
      it("receives one entry per operation, with code on failure and never contents", function()
        local log = {}
        new({ audit = function(e) if e.kind == "file" then log[#log + 1] = e end end })
        sb:write_file("a.txt", "SECRET-CONTENT")
        sb:read_file("a.txt")
        sb:read_file("../x")
        sb:stat("a.txt")
        sb:remove("a.txt")
        local ops = {}
        for i, e in ipairs(log) do
          ops[i] = e.op
          assert.is_number(e.time)
          assert.is_boolean(e.ok)
          for _, v in pairs(e) do
            if type(v) == "string" then assert.is_nil(v:find("SECRET", 1, true)) end
          end
        end
        assert.same({ "write_file", "read_file", "read_file", "stat", "remove" }, ops)
        assert.same({ 14, "a.txt", true }, { log[1].size, log[1].path, log[1].ok })
        assert.same({ false, "EESCAPE", "../x" }, { log[3].ok, log[3].code, log[3].path })
      end)

      it("sees denials too", function()
        local log = {}
        new({ read_only = true, audit = function(e) if e.kind == "file" then log[#log + 1] = e end end })
        sb:write_file("x", "y")
        assert.same({ "write_file", false, "EACCES" }, { log[1].op, log[1].ok, log[1].code })
      end)
    end)
  end)
end
