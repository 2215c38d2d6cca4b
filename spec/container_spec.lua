-- ContainerSandbox specifics: capabilities (mode, read_roots,
-- max_disk_usage), rules that see through symlinks, atomic replacement,
-- fd hygiene. Run on both resolvers.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local hostcan = require "support.host"

local function code_of(...) return select(3, ...) end

-- The process's open descriptors, as "fd -> target" lines (so a failure
-- shows which one appeared).
local function open_fds() return table.concat(sh.open_fds(), "\n") end

for _, be in ipairs(backends.containers()) do
  describe(be.name .. " capabilities:", function()
    local function dir_with(files)
      local d = backends.tmpdir("cap")
      backends.populate(d, files)
      return d
    end
    local function open(opts)
      opts.resolver = be.resolver
      return assert(sandbox.container(opts))
    end

    it("mode = 'r' refuses every write and changes nothing", function()
      local d = dir_with { ["a.txt"] = "A" }
      local sb = open { base_dir = d, mode = "r" }
      assert.equal("A", sb:read_file("a.txt"))
      for _, f in ipairs {
        function() return sb:write_file("a.txt", "x") end,
        function() return sb:write_file("new", "x") end,
        function() return sb:mkdir("d") end,
        function() return sb:remove("a.txt") end,
        function() return sb:rename("a.txt", "b.txt") end,
      } do
        local v, msg, code = f()
        assert.is_nil(v)
        assert.equal("EACCES", code)
        assert.matches('mode "r"', msg)
      end
      assert.same({ "a.txt" }, sb:glob("*"))
      sb:dispose()
    end)

    it("mode = 'w' refuses reading base_dir contents but allows writing and listing", function()
      local d = dir_with { ["a.txt"] = "A" }
      local sb = open { base_dir = d, mode = "w" }
      local v, msg, code = sb:read_file("a.txt")
      assert.is_nil(v)
      assert.equal("EACCES", code)
      assert.matches('mode "w"', msg)
      assert.same({}, sb:grep("A"))
      assert.is_true(sb:write_file("b.txt", "B"))
      assert.is_true(sb:exists("b.txt"))
      assert.equal(1, sb:stat("b.txt").size)
      assert.equal(2, #sb:readdir("."))
      assert.equal("EACCES", code_of(sb:snapshot()))
      sb:dispose()
    end)

    it("read_roots are read in order after base_dir and never written", function()
      local base = dir_with { ["own.txt"] = "base", ["both.txt"] = "from base" }
      local r1 = dir_with { ["both.txt"] = "from r1", ["lib/one.lua"] = "1", ["r1.txt"] = "r1" }
      local r2 = dir_with { ["r1.txt"] = "from r2", ["lib/two.lua"] = "2", ["only2.txt"] = "2" }
      local sb = open { base_dir = base, read_roots = { r1, r2 } }
      assert.equal("from base", sb:read_file("both.txt"))
      assert.equal("r1", sb:read_file("r1.txt"))
      assert.equal("2", sb:read_file("only2.txt"))
      assert.equal("1", sb:read_file("lib/one.lua"))
      assert.equal("2", sb:read_file("lib/two.lua"))
      local names = {}
      for _, e in ipairs(sb:readdir(".")) do names[#names + 1] = e.name end
      assert.same({ "both.txt", "lib", "only2.txt", "own.txt", "r1.txt" }, names)
      assert.same({ "lib/one.lua", "lib/two.lua" }, sb:glob("lib/*.lua"))
      assert.same({ { path = "r1.txt", line = 1, text = "r1" } }, sb:grep("^r1"))
      -- writes go to base_dir only; the read roots stay as they were
      assert.is_true(sb:write_file("r1.txt", "shadow"))
      assert.equal("shadow", sb:read_file("r1.txt"))
      assert.equal("ENOENT", code_of(sb:remove("only2.txt")))
      local _, out = sh.run(("cat %s/r1.txt %s/only2.txt"):format(r1, r2))
      assert.equal("r1" .. "2", out)
      local snap = sb:snapshot()
      assert.same({ "base", "from base", "1", "2", "2", "shadow" },
        { snap["own.txt"], snap["both.txt"], snap["lib/one.lua"], snap["lib/two.lua"],
          snap["only2.txt"], snap["r1.txt"] })
      sb:dispose()
    end)

    it("read_roots confine their own paths too", function()
      local base = dir_with {}
      local r1 = dir_with { ["x"] = "1" }
      sh.run(("ln -s /etc %s/etc && ln -s .. %s/up"):format(r1, r1))
      local sb = open { base_dir = base, read_roots = { r1 } }
      assert.equal("EESCAPE", code_of(sb:read_file("etc/passwd")))
      assert.equal("EESCAPE", code_of(sb:read_file("up/x")))
      assert.equal("1", sb:read_file("x"))
      sb:dispose()
    end)

    it("max_disk_usage is enforced before any byte is written", function()
      local d = dir_with { ["old.txt"] = ("o"):rep(40) }
      local sb = open { base_dir = d, max_disk_usage = 100 }
      assert.is_true(sb:write_file("a", ("x"):rep(60)))
      local v, msg, code = sb:write_file("b", "x")
      assert.is_nil(v)
      assert.equal("ENOSPC", code)
      assert.matches("max_disk_usage", msg)
      assert.is_false(sb:exists("b"))
      -- a replacement counts the difference, and a refused one keeps the old content
      assert.equal("ENOSPC", code_of(sb:write_file("old.txt", ("n"):rep(41))))
      assert.equal(("o"):rep(40), sb:read_file("old.txt"))
      assert.is_true(sb:write_file("old.txt", ("n"):rep(39)))
      assert.is_true(sb:remove("a"))
      assert.is_true(sb:write_file("b", ("x"):rep(61)))
      sb:dispose()
    end)

    it("rules apply to where a path really leads, through symlinks made by others", function()
      local d = dir_with { ["secret/key.pem"] = "KEY", ["pub/readme.md"] = "hi" }
      sh.run(("ln -s secret %s/innocent && ln -s secret/key.pem %s/notes.md"):format(d, d))
      local sb = open { base_dir = d, rules = { deny = { "secret" } }, extensions = { read = { ".md" } } }
      assert.equal("EACCES", code_of(sb:read_file("secret/key.pem")))
      assert.equal("EACCES", code_of(sb:read_file("innocent/key.pem")))
      assert.equal("EACCES", code_of(sb:write_file("innocent/new.pem", "x")))
      assert.equal("EACCES", code_of(sb:readdir("innocent/../secret")))
      assert.equal("EACCES", code_of(sb:readdir("innocent"))) -- followed: its real path is denied
      assert.same({}, sb:grep("KEY", { path = "innocent/key.pem" })) -- invisible, not leaked
      assert.equal("EACCES", code_of(sb:grep("KEY", { path = "innocent" }))) -- as { path = "secret" }
      assert.equal("EACCES", code_of(sb:grep("KEY", { path = "secret" })))
      assert.same({}, sb:glob("innocent/*"))
      assert.equal("EACCES", code_of(sb:read_file("notes.md"))) -- a .md name for a denied .pem
      assert.equal("hi", sb:read_file("pub/readme.md"))
      local _, out = sh.run(("ls %s/secret"):format(d))
      assert.equal("key.pem\n", out)
      sb:dispose()
    end)

    it("replaces files atomically: a concurrent reader never sees a torn file", function()
      local d = dir_with {}
      local sb = open { base_dir = d }
      local a, b = ("A"):rep(200000), ("B"):rep(200000)
      assert(sb:write_file("f", a))
      local reader = sh.popen(("for i in $(seq 1 300); do tr -d 'AB' < %s/f | wc -c; done | sort -u"):format(d))
      for i = 1, 200 do assert(sb:write_file("f", i % 2 == 0 and a or b)) end
      local torn = reader:read("*a")
      reader:close()
      assert.equal("0\n", torn, "a reader saw a mixed file")
      sb:dispose()
    end)

    -- write_file takes a new name without a stat first and examines the target only when
    -- something is there; with a disk quota it examines first. Both give the same answers.
    for _, quota in ipairs { false, true } do
      it(("writes onto whatever stands at the target correctly (%s)"):format(quota and "with a disk quota" or "no quota"), function()
        local d = dir_with { ["file.txt"] = "old", ["dir/x"] = "x" }
        sh.run(("ln -s file.txt %s/link && ln -s nowhere %s/dangling && mkfifo %s/fifo"):format(d, d, d))
        local sb = open { base_dir = d, max_disk_usage = quota and "1MB" or nil }
        local cases = {
          { "new.txt", nil, true },
          { "file.txt", nil, true },
          { "file.txt", { overwrite = false }, "EEXIST" },
          { "brand-new", { overwrite = false }, true },
          { "dir", nil, "EISDIR" },
          { "link", nil, "ELOOP" },
          { "dangling", nil, "ELOOP" },
        }
        for _, c in ipairs(cases) do
          local ok, _, code = sb:write_file(c[1], "new", c[2])
          assert.equal(c[3], ok or code, c[1])
        end
        assert.is_not_nil(code_of(sb:write_file("fifo", "new")))
        assert.equal("new", sb:read_file("file.txt"))
        assert.equal("file.txt", sh.lines("readlink " .. d .. "/link")[1]) -- the link untouched
        local _, out = sh.run("ls -A " .. d)
        assert.equal("brand-new\ndangling\ndir\nfifo\nfile.txt\nlink\nnew.txt\n", out) -- no temporary left
        sb:dispose()
      end)
    end

    it("removes files, links and directories without following links (fast path and long way)", function()
      local d = dir_with { ["f"] = "1", ["dir/x"] = "x", ["empty/.keep"] = "" }
      sh.run(("rm %s/empty/.keep && ln -s dir %s/link"):format(d, d))
      local sb = open { base_dir = d }
      assert.is_true(sb:remove("f"))
      assert.is_true(sb:remove("link"))
      assert.equal("x", sb:read_file("dir/x")) -- the link went, not its target
      assert.equal("ENOTEMPTY", code_of(sb:remove("dir")))
      assert.is_true(sb:remove("empty"))
      assert.equal("ENOENT", code_of(sb:remove("f")))
      assert.equal("ENOTDIR", code_of(sb:remove("dir/x/")))
      assert.is_true(sb:remove("dir", { recursive = true }))
      local _, out = sh.run("ls -A " .. d)
      assert.equal("", out)
      sb:dispose()
    end)

    it("keeps the file mode on replace and leaves no temporary file behind", function()
      local d = dir_with { ["run.sh"] = "#!/bin/sh\n" }
      sh.run("chmod 755 " .. d .. "/run.sh")
      local sb = open { base_dir = d }
      assert(sb:write_file("run.sh", "#!/bin/sh\necho hi\n"))
      assert.equal(tonumber("755", 8), sb:stat("run.sh").mode)
      assert(sb:write_file("new", "x"))
      local mode = sb:stat("new").mode
      for _, bit in ipairs { 256, 128, 32, 4 } do -- rw-r--r-- at least (no & before 5.3)
        assert.equal(1, math.floor(mode / bit) % 2, "mode bit " .. bit)
      end
      local _, out = sh.run("ls -A " .. d)
      assert.equal("new\nrun.sh\n", out)
      sb:dispose()
    end)

    it("a failed write leaves the old content (the file system is full)", function()
      if not hostcan.can("a write to a full file system (a small tmpfs)", hostcan.root()) then return end
      local d = backends.tmpdir("full")
      local script = ([[
        mount -t tmpfs -o size=64k sbfull %s && printf old > %s/f && SANDBOX_RESOLVER=%s %s -e '
          package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
          package.cpath = "%s/?.so;" .. package.cpath
          local sb = assert(require("sandbox").container { base_dir = "%s" })
          print(select(3, sb:write_file("f", ("x"):rep(200000))))
          print(sb:read_file("f"))
          local n = 0 for _ in pairs(sb:readdir(".")) do n = n + 1 end print(n)'
      ]]):format(d, d, be.resolver, sh.lua(), sh.build, d)
      local ok, out = sh.run("unshare -m sh -c " .. sh.quote(script))
      assert.is_true(ok, out)
      assert.equal("ENOSPC\nold\n1\n", out)
    end)

    it("leaks no fd over 10 000 mixed operations, failures included", function()
      local d = dir_with { ["a/b/c.txt"] = "c" }
      sh.run(("ln -s ../.. %s/a/out && mkfifo %s/fifo"):format(d, d))
      local empty = open_fds()
      local sb = open { base_dir = d, read_roots = { d } }
      local before = open_fds()
      for i = 1, 1000 do
        sb:write_file("w/" .. (i % 10), "x")
        sb:read_file("a/b/c.txt")
        sb:read_file("a/out/etc")
        sb:read_file("fifo")
        sb:stat("missing/x")
        sb:readdir("a")
        sb:mkdir("m/" .. (i % 7))
        sb:rename("w/" .. (i % 10), "w/r" .. (i % 10), { overwrite = true })
        sb:remove("m", { recursive = true })
        sb:glob("**/*.txt")
      end
      sb:grep("x")
      sb:snapshot()
      assert.equal(before, open_fds())
      sb:dispose()
      assert.equal(empty, open_fds())
    end)

    it("audits every operation", function()
      local d = dir_with {}
      local log = {}
      local sb = open { base_dir = d, audit = function(e)
        if e.kind == "file" then log[#log + 1] = e.op .. ":" .. tostring(e.code) end
      end }
      sb:write_file("a", "1")
      sb:read_file("../x")
      sb:mkdir("d")
      sb:rename("a", "d/a")
      sb:glob("*")
      sb:remove("d", { recursive = true })
      assert.same({ "write_file:nil", "read_file:EESCAPE", "mkdir:nil", "rename:nil", "glob:nil", "remove:nil" }, log)
      sb:dispose()
    end)
  end)
end
