-- The Sandbox file interface (SPEC §3, §4), one spec for every backend.
local backends = require "support.backends"

-- grep hits as "path:line"
local function lines_of(hits)
  local out = {}
  for i, h in ipairs(assert(hits)) do out[i] = h.path .. ":" .. h.line end
  return out
end

local function sorted_names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.name end
  return out
end

for _, be in ipairs(backends.list) do
  describe(be.name .. " sandbox:", function()
    local sb
    local function new(opts, files) sb = be.new(opts, files); return sb end
    after_each(function() if sb then sb:dispose() end end)

    describe("read_file / write_file", function()
      it("round-trips text and creates parent directories by default", function()
        new()
        assert.is_true(sb:write_file("src/lib/a.lua", "return 1\n"))
        assert.equal("return 1\n", sb:read_file("src/lib/a.lua"))
        assert.equal("directory", sb:stat("src/lib").type)
      end)

      it("round-trips binary contents with NUL bytes", function()
        new()
        local blob = {}
        for i = 0, 255 do blob[#blob + 1] = string.char(i) end
        blob = table.concat(blob) .. "\0\0end"
        sb:write_file("bin.dat", blob)
        assert.equal(blob, sb:read_file("bin.dat"))
        assert.equal(#blob, sb:stat("bin.dat").size)
      end)

      it("writes empty files", function()
        new()
        sb:write_file("empty", "")
        assert.equal("", sb:read_file("empty"))
        assert.equal(0, sb:stat("empty").size)
      end)

      it("replaces an existing file by default", function()
        new(nil, { ["a.txt"] = "old" })
        assert.is_true(sb:write_file("a.txt", "new"))
        assert.equal("new", sb:read_file("a.txt"))
      end)

      it("refuses to replace with overwrite = false, keeping the old content", function()
        new(nil, { ["a.txt"] = "old" })
        local ok, msg, code = sb:write_file("a.txt", "new", { overwrite = false })
        assert.is_nil(ok)
        assert.equal("EEXIST", code)
        assert.matches("^EEXIST: .*: a.txt$", msg)
        assert.equal("old", sb:read_file("a.txt"))
      end)

      it("does not create parents with parents = false", function()
        new()
        local ok, _, code = sb:write_file("no/such/file", "x", { parents = false })
        assert.is_nil(ok)
        assert.equal("ENOENT", code)
        assert.is_false(sb:exists("no"))
      end)

      it("refuses to write over a directory (EISDIR) and to read one", function()
        new(nil, { ["d/"] = true })
        assert.equal("EISDIR", select(3, sb:write_file("d", "x")))
        assert.equal("EISDIR", select(3, sb:read_file("d")))
        assert.equal("directory", sb:stat("d").type)
      end)

      it("refuses a path through a file (ENOTDIR) without touching the file", function()
        new(nil, { ["f"] = "data" })
        assert.equal("ENOTDIR", select(3, sb:write_file("f/x", "y")))
        assert.equal("ENOTDIR", select(3, sb:read_file("f/x")))
        assert.equal("ENOTDIR", select(3, sb:read_file("f/")))
        assert.equal("data", sb:read_file("f"))
      end)

      it("reports a missing file as ENOENT with the normalised path", function()
        new()
        local v, msg, code = sb:read_file("./src//x.lua")
        assert.is_nil(v)
        assert.equal("ENOENT", code)
        assert.equal("ENOENT: no such file or directory: src/x.lua", msg)
      end)

      it("refuses to write the root or a path ending in '..'", function()
        new(nil, { ["a/"] = true })
        assert.equal("EISDIR", select(3, sb:write_file(".", "x")))
        assert.equal("EISDIR", select(3, sb:write_file(sb.cwd, "x")))
        assert.equal("EINVAL", select(3, sb:write_file("a/..", "x")))
      end)

      it("treats a trailing slash as 'must be a directory'", function()
        new(nil, { ["f.txt"] = "x" })
        assert.equal("ENOTDIR", select(3, sb:stat("f.txt/")))
        assert.equal("EISDIR", select(3, sb:write_file("new/", "x")))
        assert.is_false(sb:exists("new"))
      end)

      it("raises on misuse: non-string path or content, unknown or mistyped option", function()
        new()
        assert.has_error(function() sb:read_file(42) end)
        assert.has_error(function() sb:read_file() end)
        assert.has_error(function() sb:write_file("a", 42) end)
        assert.has_error(function() sb:write_file("a", "x", { overwrit = true }) end,
          "write_file: unknown option 'overwrit'")
        assert.has_error(function() sb:write_file("a", "x", { parents = "yes" }) end)
        assert.is_false(sb:exists("a"))
      end)
    end)

    describe("stat / exists", function()
      it("describes files and directories", function()
        new(nil, { ["a/b.txt"] = "12345" })
        local st = sb:stat("a/b.txt")
        assert.same({ "file", 5 }, { st.type, st.size })
        assert.is_number(st.mtime)
        assert.is_true(st.mtime > 1.6e9)
        assert.is_number(st.mode)
        local d = sb:stat("a")
        assert.same({ "directory", 0 }, { d.type, d.size })
        assert.equal("directory", sb:stat(".").type)
      end)

      it("exists is a boolean for missing paths and an error for escapes", function()
        new(nil, { ["a.txt"] = "x" })
        assert.is_true(sb:exists("a.txt"))
        assert.is_true(sb:exists("."))
        assert.is_false(sb:exists("nope"))
        assert.is_false(sb:exists("a.txt/child"))
        local v, _, code = sb:exists("../etc/passwd")
        assert.is_nil(v)
        assert.equal("EESCAPE", code)
      end)

      it("updates mtime on write", function()
        new(nil, { ["a.txt"] = "x" })
        local t0 = sb:stat("a.txt").mtime
        local deadline = os.time() + 2
        repeat sb:write_file("a.txt", "y") until sb:stat("a.txt").mtime > t0 or os.time() > deadline
        assert.is_true(sb:stat("a.txt").mtime > t0)
      end)
    end)

    describe("readdir", function()
      it("lists entries sorted by name with type, is_directory and size", function()
        new(nil, { ["b.txt"] = "bb", ["a.txt"] = "a", ["c/"] = true, ["c/x"] = "1", ["B"] = "" })
        local list = sb:readdir(".")
        assert.same({ "B", "a.txt", "b.txt", "c" }, sorted_names(list))
        assert.same({ name = "a.txt", type = "file", is_directory = false, size = 1 }, list[2])
        assert.same({ name = "c", type = "directory", is_directory = true, size = 0 }, list[4])
      end)

      it("lists an empty directory as an empty array", function()
        new(nil, { ["e/"] = true })
        assert.same({}, sb:readdir("e"))
      end)

      it("fails on files and missing paths", function()
        new(nil, { ["f"] = "x" })
        assert.equal("ENOTDIR", select(3, sb:readdir("f")))
        assert.equal("ENOENT", select(3, sb:readdir("missing")))
      end)
    end)

    describe("mkdir", function()
      it("creates parents by default and is idempotent with parents", function()
        new()
        assert.is_true(sb:mkdir("a/b/c"))
        assert.is_true(sb:mkdir("a/b/c"))
        assert.equal("directory", sb:stat("a/b/c").type)
        assert.is_true(sb:mkdir("."))
      end)

      it("fails without parents when the parent is missing, or the directory exists", function()
        new(nil, { ["d/"] = true })
        assert.equal("ENOENT", select(3, sb:mkdir("x/y", { parents = false })))
        assert.equal("EEXIST", select(3, sb:mkdir("d", { parents = false })))
        assert.equal("EEXIST", select(3, sb:mkdir(".", { parents = false })))
      end)

      it("refuses to turn a file into a directory", function()
        new(nil, { ["f"] = "data" })
        assert.equal("EEXIST", select(3, sb:mkdir("f")))
        assert.equal("ENOTDIR", select(3, sb:mkdir("f/sub")))
        assert.equal("data", sb:read_file("f"))
      end)

      it("does not create a directory after a missing component followed by '..'", function()
        new()
        assert.equal("ENOENT", select(3, sb:mkdir("new/../x")))
        assert.is_false(sb:exists("new"))
        assert.is_false(sb:exists("x"))
      end)
    end)

    describe("remove", function()
      it("removes files and empty directories", function()
        new(nil, { ["f"] = "x", ["e/"] = true })
        assert.is_true(sb:remove("f"))
        assert.is_true(sb:remove("e"))
        assert.same({}, sb:readdir("."))
      end)

      it("refuses a non-empty directory without recursive, and keeps it whole", function()
        new(nil, { ["d/a"] = "1", ["d/s/b"] = "2" })
        local ok, msg, code = sb:remove("d")
        assert.is_nil(ok)
        assert.equal("ENOTEMPTY", code)
        assert.matches("recursive", msg)
        assert.equal("1", sb:read_file("d/a"))
        assert.equal("2", sb:read_file("d/s/b"))
      end)

      it("removes a tree with recursive = true", function()
        new(nil, { ["d/a"] = "1", ["d/s/b"] = "2", ["keep"] = "k" })
        assert.is_true(sb:remove("d", { recursive = true }))
        assert.is_false(sb:exists("d"))
        assert.equal("k", sb:read_file("keep"))
      end)

      it("never removes the root", function()
        new(nil, { ["a/"] = true })
        for _, p in ipairs { ".", sb.cwd, sb.cwd .. "/", "./", "a/..", "" } do
          local ok, _, code = sb:remove(p, { recursive = true })
          assert.is_nil(ok)
          assert.equal("EINVAL", code, p)
        end
        assert.is_true(sb:exists("a"))
      end)

      it("reports ENOENT for missing paths and ENOTDIR for file/", function()
        new(nil, { ["f"] = "x" })
        assert.equal("ENOENT", select(3, sb:remove("missing")))
        assert.equal("ENOTDIR", select(3, sb:remove("f/")))
        assert.is_true(sb:exists("f"))
      end)
    end)

    describe("rename", function()
      it("moves files and directories, across directories", function()
        new(nil, { ["a/f"] = "1", ["a/s/g"] = "2", ["b/"] = true })
        assert.is_true(sb:rename("a/f", "b/f2"))
        assert.is_true(sb:rename("a/s", "b/s"))
        assert.equal("1", sb:read_file("b/f2"))
        assert.equal("2", sb:read_file("b/s/g"))
        assert.same({}, sb:readdir("a"))
      end)

      it("refuses to replace an existing target unless overwrite = true", function()
        new(nil, { ["x"] = "X", ["y"] = "Y" })
        assert.equal("EEXIST", select(3, sb:rename("x", "y")))
        assert.equal("Y", sb:read_file("y"))
        assert.is_true(sb:rename("x", "y", { overwrite = true }))
        assert.equal("X", sb:read_file("y"))
        assert.is_false(sb:exists("x"))
      end)

      it("checks types when replacing", function()
        new(nil, { ["f"] = "1", ["d/"] = true, ["full/x"] = "1", ["d2/"] = true })
        assert.equal("EISDIR", select(3, sb:rename("f", "d", { overwrite = true })))
        assert.equal("ENOTDIR", select(3, sb:rename("d", "f", { overwrite = true })))
        assert.equal("ENOTEMPTY", select(3, sb:rename("d", "full", { overwrite = true })))
        assert.is_true(sb:rename("d", "d2", { overwrite = true }))
        assert.is_false(sb:exists("d"))
      end)

      it("refuses to move a directory into its own descendant", function()
        new(nil, { ["a/b/c/f"] = "1" })
        assert.equal("EINVAL", select(3, sb:rename("a", "a/b/c/a")))
        assert.equal("EINVAL", select(3, sb:rename("a", "a/x")))
        assert.equal("1", sb:read_file("a/b/c/f"))
      end)

      it("is a no-op for the same path", function()
        new(nil, { ["f"] = "1" })
        assert.is_true(sb:rename("f", "./f"))
        assert.equal("1", sb:read_file("f"))
      end)

      it("needs an existing source and target parent", function()
        new(nil, { ["f"] = "1" })
        assert.equal("ENOENT", select(3, sb:rename("missing", "x")))
        assert.equal("ENOENT", select(3, sb:rename("f", "no/dir/f")))
        assert.equal("1", sb:read_file("f"))
      end)

      -- found by differential testing: the order of checks follows the kernel's
      it("resolves both parents before the source (ENOTDIR beats ENOENT)", function()
        new(nil, { ["f/a"] = "file" })
        assert.equal("ENOTDIR", select(3, sb:rename("missing", "f/a/x", { overwrite = true })))
      end)

      it("refuses to replace an ancestor of the source (ENOTEMPTY before type checks)", function()
        new(nil, { ["d/c"] = "file" })
        assert.equal("ENOTEMPTY", select(3, sb:rename("d/c", "d", { overwrite = true })))
        assert.equal("EEXIST", select(3, sb:rename("d/c", "d")))
        assert.equal("file", sb:read_file("d/c"))
      end)

      it("never renames or replaces the root", function()
        new(nil, { ["d/"] = true })
        assert.equal("EINVAL", select(3, sb:rename(".", "x")))
        assert.equal("EINVAL", select(3, sb:rename("d", ".", { overwrite = true })))
        assert.equal("EINVAL", select(3, sb:rename("d/..", "x")))
        assert.is_true(sb:exists("d"))
      end)
    end)

    describe("glob", function()
      local files = {
        ["README.md"] = "r", ["src/a.lua"] = "a", ["src/b.lua"] = "b", ["src/sub/c.lua"] = "c",
        ["src/sub/d.txt"] = "d", ["doc/x.md"] = "x", [".hidden/h.lua"] = "h",
      }

      local cases = {
        { "*.md", { "README.md" } },
        { "src/*.lua", { "src/a.lua", "src/b.lua" } },
        { "**/*.lua", { "src/a.lua", "src/b.lua", "src/sub/c.lua" } }, -- hidden entries left out, as rg
        { ".hidden/*.lua", { ".hidden/h.lua" } }, -- unless the pattern names one
        { "**/*.{lua,md}", { "README.md", "doc/x.md", "src/a.lua", "src/b.lua", "src/sub/c.lua" } },
        { "src/{sub/*.txt,a.lua}", { "src/a.lua", "src/sub/d.txt" } },
        { "src/**", { "src", "src/a.lua", "src/b.lua", "src/sub", "src/sub/c.lua", "src/sub/d.txt" } },
        { "src/?.lua", { "src/a.lua", "src/b.lua" } },
        { "src/[ab].lua", { "src/a.lua", "src/b.lua" } },
        { "src/[!a].lua", { "src/b.lua" } },
        { "**/*.{x}", {} },
        { "nothing/*", {} },
        { "./src/./sub/*", { "src/sub/c.lua", "src/sub/d.txt" } },
        { "*", { "README.md", "doc", "src" } },
      }
      for _, c in ipairs(cases) do
        it("matches " .. c[1], function()
          new(nil, files)
          assert.same(c[2], sb:glob(c[1]))
        end)
      end

      it("caps results with max_results and marks truncation", function()
        new(nil, files)
        local r = sb:glob("**", { max_results = 3 })
        assert.equal(3, #r)
        assert.is_true(r.truncated)
        assert.is_nil(sb:glob("*.md").truncated)
      end)

      it("finds hidden entries with hidden = true or ignored = true", function()
        new(nil, files)
        assert.same({ ".hidden/h.lua", "src/a.lua", "src/b.lua", "src/sub/c.lua" }, sb:glob("**/*.lua", { hidden = true }))
        assert.same({ ".hidden", "README.md", "doc", "src" }, sb:glob("*", { ignored = true }))
      end)

      it("refuses '..' in patterns and absolute patterns outside the root", function()
        new(nil, files)
        assert.equal("EINVAL", select(3, sb:glob("../*")))
        assert.equal("EINVAL", select(3, sb:glob("src/../../x")))
        assert.equal("EINVAL", select(3, sb:glob("")))
        assert.has_error(function() sb:glob("*", { max_results = 0 }) end)
      end)
    end)

    describe("grep", function()
      local files = {
        ["a.lua"] = "local x = 1\nprint(x)\nreturn x\n",
        ["src/b.lua"] = "-- TODO fix\nlocal y = 2\r\nprint(y)",
        ["src/c.txt"] = "print this\n",
        ["bin"] = "print\0binary",
      }

      it("finds ERE matches with path, line and text, sorted", function()
        new(nil, files)
        local r = sb:grep("print\\([a-z]\\)")
        assert.same({
          { path = "a.lua", line = 2, text = "print(x)" },
          { path = "src/b.lua", line = 3, text = "print(y)" },
        }, r)
      end)

      it("filters files with glob (base name when it has no '/') and path", function()
        new(nil, files)
        assert.equal(3, #sb:grep("print", { glob = "*.lua" }) + 1)
        local r = sb:grep("print", { path = "src", glob = "*.txt" })
        assert.same({ { path = "src/c.txt", line = 1, text = "print this" } }, r)
        assert.equal(1, #sb:grep("local", { glob = "src/*.lua" }))
      end)

      it("supports literal and ignore_case, and skips binary files", function()
        new(nil, files)
        assert.equal(0, #sb:grep("PRINT"))
        assert.equal(2, #sb:grep("PRINT(", { literal = true, ignore_case = true }))
        assert.equal(1, #sb:grep("todo", { ignore_case = true }))
        assert.equal(0, #sb:grep("binary"))
      end)

      it("strips CR from CRLF lines", function()
        new(nil, files)
        assert.same({ { path = "src/b.lua", line = 2, text = "local y = 2" } }, sb:grep("y = 2$"))
      end)

      it("reports invalid patterns as EINVAL with PCRE2's message and offset", function()
        new(nil, files)
        local v, msg, code = sb:grep("(unclosed")
        assert.is_nil(v)
        assert.equal("EINVAL", code)
        assert.matches("invalid regular expression '%(unclosed': missing closing parenthesis at offset 9", msg)
        assert.equal("EINVAL", select(3, sb:grep("a{2,1}")))
        assert.equal("EINVAL", select(3, sb:grep("x\\")))
      end)

      it("speaks PCRE2: \\d, \\b, (?i), lazy repeats, lookaround, back-references", function()
        new(nil, files)
        assert.same({ "a.lua:1", "src/b.lua:2" }, lines_of(sb:grep("\\d")))
        assert.same({ "src/b.lua:1" }, lines_of(sb:grep("(?i)\\btodo\\b")))
        assert.same({ "a.lua:2" }, lines_of(sb:grep("print(?=\\(x)")))
        assert.same({ "a.lua:3", "src/b.lua:1" }, lines_of(sb:grep("(?<!print\\()x$")))
        assert.same({ "a.lua:1" }, lines_of(sb:grep("^l.*?x")))
        assert.same({}, lines_of(sb:grep("(\\w)\\1")))
        assert.same({ "src/b.lua:1" }, lines_of(sb:grep("(-)\\1")))
      end)

      it("caps results with max_results", function()
        new(nil, files)
        local r = sb:grep(".", { max_results = 2 })
        assert.equal(2, #r)
        assert.is_true(r.truncated)
      end)

      it("searches one file when path names a file, and rejects escapes", function()
        new(nil, files)
        assert.equal(1, #sb:grep("return", { path = "a.lua" }))
        assert.equal("EESCAPE", select(3, sb:grep("x", { path = "../.." })))
        assert.equal("ENOENT", select(3, sb:grep("x", { path = "missing" })))
      end)
    end)

    describe("snapshot", function()
      it("returns every file, and round-trips into a new sandbox", function()
        local files = { ["a"] = "1", ["d/b"] = "two", ["d/e/c"] = "\0bin" }
        new(nil, files)
        local snap = sb:snapshot()
        assert.same(files, snap)
        local copy = be.new(nil, snap)
        assert.same(snap, copy:snapshot())
        copy:dispose()
      end)

      it("includes directories as 'path/' = true when asked", function()
        new(nil, { ["e/"] = true, ["d/f"] = "1" })
        assert.same({ ["e/"] = true, ["d/"] = true, ["d/f"] = "1" }, sb:snapshot { directories = true })
      end)

      it("refuses a snapshot larger than max_bytes", function()
        new(nil, { ["a"] = string.rep("x", 100) })
        assert.equal("ENOTSUP", select(3, sb:snapshot { max_bytes = 99 }))
        assert.equal(100, #sb:snapshot({ max_bytes = 100 }).a)
      end)
    end)

    describe("symlinks (SPEC §4)", function()
      -- a repository's kind of links: CLAUDE.md -> AGENTS.md, include -> ../src/include,
      -- current -> v2, node_modules/.bin/* -> ../pkg/bin.js
      local function repo()
        new(nil, { ["AGENTS.md"] = "agents\n", ["src/include/api.h"] = "int f(void);\n", ["v2/run"] = "2",
                   ["node_modules/pkg/bin.js"] = "js" })
        assert(sb:symlink("AGENTS.md", "CLAUDE.md"))
        assert(sb:mkdir("lib"))
        assert(sb:symlink("../src/include", "lib/include"))
        assert(sb:symlink("v2", "current"))
        assert(sb:mkdir("node_modules/.bin"))
        assert(sb:symlink("../pkg/bin.js", "node_modules/.bin/tool"))
      end

      it("reads follow links inside the root, the final one included", function()
        repo()
        assert.equal("agents\n", sb:read_file("CLAUDE.md"))
        assert.equal("int f(void);\n", sb:read_file("lib/include/api.h"))
        assert.same({ "api.h" }, sorted_names(sb:readdir("lib/include")))
        assert.same({ "api.h" }, sorted_names(sb:readdir("lib/include/")))
        assert.equal("2", sb:read_file("current/run"))
        assert.equal("js", sb:read_file("node_modules/.bin/tool"))
        assert.is_true(sb:exists("CLAUDE.md"))
        assert.equal("directory", sb:stat("lib/include", { follow = true }).type)
        assert.equal("src/include/api.h", sb:realpath("lib/include/api.h"))
        local hits = sb:grep("f", { path = "lib/include" })
        assert.equal(1, #hits)
        assert.equal("lib/include/api.h", hits[1].path)
      end)

      it("stat describes a link itself unless told to follow", function()
        repo()
        local st = sb:stat("CLAUDE.md")
        assert.equal("symlink", st.type)
        assert.equal(#"AGENTS.md", st.size)
        assert.equal("file", sb:stat("CLAUDE.md", { follow = true }).type)
        assert.equal("AGENTS.md", sb:readlink("CLAUDE.md"))
        assert.equal("EINVAL", select(3, sb:readlink("AGENTS.md")))
      end)

      it("walks report links and never descend through them", function()
        repo()
        local ents = {}
        for _, e in ipairs(sb:readdir("lib")) do ents[e.name] = e.type end
        assert.same({ include = "symlink" }, ents)
        assert.same({ "src/include/api.h" }, sb:glob("**/*.h"))
        assert.same({ "CLAUDE.md" }, sb:glob("C*"))
        local snap = sb:snapshot()
        assert.is_nil(snap["lib/include/api.h"])
        assert.is_nil(snap["CLAUDE.md"])
        assert.equal("agents\n", snap["AGENTS.md"])
      end)

      it("writes never follow a final link and say what to write instead", function()
        repo()
        local ok, msg, code = sb:write_file("CLAUDE.md", "new")
        assert.is_nil(ok)
        assert.equal("ELOOP", code)
        assert.matches("write to 'AGENTS.md' instead", msg)
        assert.equal("agents\n", sb:read_file("AGENTS.md"))
        -- a dangling link is not written through either; it names what would be made
        assert(sb:symlink("docs/new.md", "NEW.md"))
        ok, msg, code = sb:write_file("NEW.md", "x")
        assert.is_nil(ok)
        assert.equal("ELOOP", code)
        assert.matches("write to 'docs/new.md' instead", msg)
        assert.is_false(sb:exists("docs/new.md"))
        -- through an intermediate link is fine: the link is a directory on the way
        assert(sb:write_file("lib/include/b.h", "b"))
        assert.equal("b", sb:read_file("src/include/b.h"))
        assert.equal("EEXIST", select(3, sb:mkdir("CLAUDE.md")))
        assert.equal("EEXIST", select(3, sb:symlink("x", "CLAUDE.md")))
      end)

      it("remove and rename act on the link itself", function()
        repo()
        assert(sb:rename("CLAUDE.md", "GEMINI.md"))
        assert.equal("AGENTS.md", sb:readlink("GEMINI.md"))
        assert(sb:remove("GEMINI.md"))
        assert.equal("agents\n", sb:read_file("AGENTS.md"))
        assert(sb:remove("lib/include"))
        assert.equal("int f(void);\n", sb:read_file("src/include/api.h"))
        assert.equal("ENOTDIR", select(3, sb:remove("current/"))) -- "current/" is v2 itself: not a link to remove
        assert.is_true(sb:exists("v2/run"))
      end)

      local outs = {
        { "an absolute target", "/etc/passwd" },
        { "an absolute target naming a place inside", "/AGENTS.md" },
        { "'..' above the root", "../outside" },
        { "a chain of links", "hop" },
        { "a link to the root's parent through a directory", "sub/../../x" },
      }
      for _, c in ipairs(outs) do
        it("anything leading out is EESCAPE, wherever the link is: " .. c[1], function()
          new({ allow_escaping_links = true }, { ["AGENTS.md"] = "a", ["sub/f"] = "f" })
          assert(sb:symlink("../..", "sub/up2"))
          assert(sb:symlink("sub/up2/out", "hop"))
          assert(sb:symlink(c[2], "l"))
          assert(sb:mkdir("d"))
          assert(sb:symlink("../l", "d/l"))
          for _, call in ipairs {
            function() return sb:read_file("l") end,
            function() return sb:read_file("d/l") end,
            function() return sb:readdir("l") end,
            function() return sb:read_file("l/x") end,
            function() return sb:stat("l", { follow = true }) end,
            function() return sb:exists("l") end,
            function() return sb:realpath("l") end,
            function() return sb:write_file("l", "x") end,
            function() return sb:write_file("l/x", "x") end,
            function() return sb:grep("x", { path = "l" }) end,
          } do
            local v, msg, code = call()
            assert.is_nil(v, msg)
            assert.equal("EESCAPE", code, msg)
          end
          assert.equal("symlink", sb:stat("l").type) -- the link itself is there to see
          assert(sb:remove("l"))
        end)
      end

      it("refuses to make links leading out unless allowed", function()
        new()
        assert.equal("EESCAPE", select(3, sb:symlink("../x", "l")))
        assert.equal("EESCAPE", select(3, sb:symlink("/etc", "l")))
        assert(sb:mkdir("a/b"))
        assert(sb:symlink("../../x", "a/b/l")) -- from a/b, ../../x is x: inside
        assert.equal("EESCAPE", select(3, sb:symlink("../../../x", "a/b/l2")))
        assert.equal("EINVAL", select(3, sb:symlink("", "l3")))
        assert.equal("ENOENT", select(3, sb:symlink("x", "missing/l"))) -- parents are not made
      end)

      it("a loop is ELOOP; a chain of 40 links is followed, 41 are a loop", function()
        new(nil, { ["t/f"] = "deep" })
        assert(sb:symlink("a", "b"))
        assert(sb:symlink("b", "a"))
        assert.equal("ELOOP", select(3, sb:read_file("a")))
        assert.equal("ELOOP", select(3, sb:read_file("a/x")))
        assert(sb:symlink("self", "self"))
        assert.equal("ELOOP", select(3, sb:stat("self", { follow = true })))
        local prev = "t"
        for i = 0, 40 do
          assert(sb:symlink(prev, "c" .. i))
          prev = "c" .. i
        end
        assert.equal("deep", sb:read_file("c39/f"))
        assert.equal("ELOOP", select(3, sb:read_file("c40/f")))
      end)

      it("dangling links: not there for reads, there for names", function()
        new()
        assert(sb:symlink("nowhere", "d"))
        assert.is_false(sb:exists("d"))
        assert.equal("ENOENT", select(3, sb:read_file("d")))
        assert.equal("symlink", sb:stat("d").type)
        assert.equal("ENOENT", select(3, sb:mkdir("d/x")))
        assert.equal("ENOENT", select(3, sb:write_file("d/x", "1"))) -- nothing made through it
        assert.is_false(sb:exists("nowhere"))
      end)

      it("'..' after a link climbs from where the link led", function()
        new(nil, { ["b/c/x"] = "c", ["b/x"] = "b", ["x"] = "root" })
        assert(sb:symlink("b/c", "a"))
        assert.equal("b", sb:read_file("a/../x"))
        assert.equal("c", sb:read_file("a/x"))
        assert(sb:symlink(".", "here"))
        assert.equal("root", sb:read_file("here/here/x"))
        assert.equal("", sb:realpath("here"))
        assert(sb:symlink("b/.", "bdot"))
        assert.equal("b", sb:read_file("bdot/x"))
      end)

      it("trailing slashes follow a final link, as on Linux", function()
        new(nil, { ["dir/f"] = "f", ["file"] = "x" })
        assert(sb:symlink("dir", "ld"))
        assert(sb:symlink("file", "lf"))
        assert(sb:symlink("file/", "lfs"))
        assert.equal("directory", sb:stat("ld/").type)
        assert.equal("ENOTDIR", select(3, sb:stat("lf/")))
        assert.equal("ENOTDIR", select(3, sb:read_file("lfs")))
        assert.equal("EISDIR", select(3, sb:write_file("ld/", "x")))
      end)

      it("'dir/.' is refused by remove and rename, as Linux refuses it", function()
        new(nil, { ["d/f"] = "1", ["e/"] = true, ["file"] = "x" })
        assert.equal("EINVAL", select(3, sb:remove("e/.")))
        assert.equal("EINVAL", select(3, sb:remove("d/.", { recursive = true })))
        assert.equal("EINVAL", select(3, sb:rename("d/.", "other")))
        assert.equal("EINVAL", select(3, sb:rename("file", "e/.")))
        assert.equal("ENOTDIR", select(3, sb:remove("file/.")))
        assert.is_true(sb:exists("d/f") and sb:exists("e") and not sb:exists("other"))
      end)

      it("rules judge where a link really leads", function()
        new({ rules = { deny = { "secret" } } }, { ["secret/key"] = "K", ["pub/a"] = "a" })
        assert(sb:symlink("secret", "innocent"))
        assert(sb:symlink("secret/key", "notes"))
        assert.equal("EACCES", select(3, sb:read_file("innocent/key")))
        assert.equal("EACCES", select(3, sb:read_file("notes")))
        assert.equal("EACCES", select(3, sb:readdir("innocent")))
        assert.equal("EACCES", select(3, sb:write_file("innocent/new", "x")))
        assert.same({}, sb:grep("K"))
      end)
    end)

    describe("lifecycle", function()
      it("exposes kind, cwd and has_exec", function()
        new()
        assert.equal(be.kind or be.name, sb.kind)
        assert.is_string(sb.cwd)
        assert.equal("/", sb.cwd:sub(1, 1))
        assert.is_boolean(sb.has_exec)
      end)

      it("raises on use after dispose; dispose and close are idempotent", function()
        new(nil, { ["a"] = "1" })
        sb:dispose()
        sb:close()
        sb:dispose()
        assert.has_error(function() sb:read_file("a") end, "attempt to use a disposed sandbox")
        assert.has_error(function() sb:glob("*") end)
        assert.matches("disposed", tostring(sb))
        sb = nil
      end)

      it("closes with <close>", function()
        local ref
        require("support.scoped")(be.new(nil, { ["a"] = "1" }), function(s)
          ref = s
          assert.equal("1", s:read_file("a"))
        end)
        assert.has_error(function() ref:read_file("a") end)
      end)

      it("is collected by the garbage collector", function()
        local weak = setmetatable({}, { __mode = "v" })
        weak[1] = be.new(nil, { ["a"] = "1" })
        collectgarbage()
        collectgarbage()
        assert.is_nil(weak[1])
      end)

      it("hides its metatable from scripts", function()
        new()
        assert.is_string(getmetatable(sb))
      end)
    end)
  end)
end
