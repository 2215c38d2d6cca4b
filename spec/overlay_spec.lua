-- The OverlaySandbox (SPEC §11): copy-on-write over a real directory. The
-- agent's file operations and commands share one merged view; base_dir is
-- never written until the host commits — checked by a hash of the whole
-- base tree before and after every spec. Review against git (git apply of
-- sb:diff() on a copy of the base gives the merged view).
local sandbox = require "sandbox"
local sh = require "support.sh"
local procs = require "support.procs"
local backends = require "support.backends"

if os.getenv("SANDBOX_TEST_UNCONFINED") then -- valgrind: see the Makefile
  describe("overlay", function() pending("not run here: no sandbox namespaces in this run (valgrind; make PORTABLE=1)") end)
  return
end

-- Everything about a tree: types, paths, modes, link targets, file hashes.
local function tree_hash(dir)
  local ok, out = sh.run(("cd %s && { find . -printf '%%y %%p %%m %%l\\n' | LC_ALL=C sort; "
    .. "find . -type f -exec sha256sum {} + | LC_ALL=C sort; } | sha256sum"):format(sh.quote(dir)))
  assert(ok, out)
  return out:match("^(%x+)")
end

local FILES = {
  ["README.md"] = "# project\n",
  ["src/main.c"] = "int main(void)\n{\n  return 0;\n}\n",
  ["src/util.c"] = "int util(void) { return 1; }\n",
  ["docs/a.md"] = "alpha\n",
  ["docs/b.md"] = "beta\n",
  ["data.bin"] = "\0\1\2binary",
  ["empty/"] = true,
}

local function run(sb, script)
  local r = assert(sb:exec_shell(script))
  assert(r.exit_code == 0, r.stdout .. r.stderr)
  return r.stdout
end

local function kinds(sb)
  local t = {}
  for _, c in ipairs(assert(sb:changes())) do t[#t + 1] = c.kind .. " " .. c.path .. (c.from and (" <- " .. c.from) or "") end
  return t
end

local function names(sb, dir)
  local t = {}
  for _, e in ipairs(assert(sb:readdir(dir))) do t[#t + 1] = e.name end
  table.sort(t)
  return t
end

describe("overlay", function()
  local base, hash0, sb
  before_each(function()
    base = backends.tmpdir("ovbase")
    backends.populate(base, FILES)
    hash0 = tree_hash(base)
    sb = assert(sandbox.overlay { base_dir = base, allow_shell = true, kill_grace = 0.2 })
  end)
  after_each(function()
    if sb then sb:dispose() end
    if hash0 then assert.equal(hash0, tree_hash(base), "base_dir changed") end
  end)

  describe("one merged view", function()
    it("reads through to the base, and shadows what it writes", function()
      assert.equal("# project\n", sb:read_file("README.md"))
      assert(sb:write_file("README.md", "# changed\n", { overwrite = true }))
      assert.equal("# changed\n", sb:read_file("README.md"))
      assert.equal("# changed\n", run(sb, "cat README.md"))
      assert.equal("# project\n", sh.read_file(base .. "/README.md"))
      assert.equal("overlay", sb.kind)
    end)

    it("shows a file a command writes to read_file at once, and the reverse", function()
      run(sb, "echo from-command > made.txt")
      assert.equal("from-command\n", sb:read_file("made.txt"))
      assert(sb:write_file("made.txt", "from-tool\n"))
      assert.equal("from-tool\n", run(sb, "cat made.txt"))
      for i = 1, 20 do -- interleaved on one file
        run(sb, "echo c" .. i .. " >> log.txt")
        local cur = assert(sb:read_file("log.txt"))
        assert(sb:write_file("log.txt", cur .. "t" .. i .. "\n"))
      end
      local log = run(sb, "cat log.txt")
      assert.equal(40, select(2, log:gsub("\n", "")))
      assert.matches("^c1\nt1\nc2\nt2\n", log)
      assert.is_nil(sh.read_file(base .. "/log.txt"))
    end)

    -- an untouched file is read from the base directly: never once a
    -- command put anything on its way in the upper layer
    for _, case in ipairs {
      { "a command's edit", "echo edited > src/main.c", "src/main.c", "edited\n" },
      { "a command's removal", "rm README.md", "README.md", nil },
      { "an opaque directory", "rm -r docs && mkdir docs", "docs/a.md", nil },
      { "a link to an edited file", "ln -s src/main.c m.c && echo e2 > src/main.c", "m.c", "e2\n" },
      { "a rename of the directory", "mv docs docs2 && mkdir docs && echo z > docs/a.md", "docs/a.md", "z\n" },
    } do
      it("reads through to the base only while the upper layer has nothing on the path: " .. case[1], function()
        sb:read_file(case[3]) -- read once before: nothing may be remembered from it
        run(sb, case[2])
        assert.equal(case[4], (sb:read_file(case[3])))
        assert.equal(case[4] or "", (run(sb, "cat " .. case[3] .. " 2>/dev/null || true")))
      end)
    end

    -- what the sandbox remembers of the upper layer (that it has nothing on a
    -- path's way) never outlives a change from anywhere
    it("reads through to the base only until a running command changes the path", function()
      assert.equal("int util(void) { return 1; }\n", sb:read_file("src/util.c"))
      local h = assert(sb:exec("sh", { "-c", "sleep 0.3; echo bg > src/util.c; sleep 30" }, { background = true }))
      local seen
      local t0 = os.time()
      repeat
        seen = sb:read_file("src/util.c")
        h:wait(0.01)
      until seen == "bg\n" or os.time() - t0 > 10
      assert.equal("bg\n", seen, "a change of a running command's never seen")
      assert.is_true(h:kill())
    end)

    it("reads through to the base only until a forked copy of the host changes the path", function()
      local core = require "sandbox.core"
      assert.equal("alpha\n", sb:read_file("docs/a.md"))
      local job = assert(core.call_start(sb, function(s) return s:write_file("docs/a.md", "copy\n", { overwrite = true }) end, sb))
      local t0 = os.time()
      while job:result() == false and os.time() - t0 < 10 do sb:read_file("docs/a.md") end
      assert.equal("copy\n", sb:read_file("docs/a.md"))
    end)

    it("reads what discard and restore put on paths it read before, and what it wrote itself", function()
      assert(sb:write_file("docs/a.md", "v2\n", { overwrite = true }))
      local c = sb:checkpoint()
      assert(sb:discard())
      assert.equal("alpha\n", sb:read_file("docs/a.md")) -- docs: nothing in the upper layer now
      assert(sb:restore(c))
      assert.equal("v2\n", sb:read_file("docs/a.md"))
      assert(sb:discard { "docs/a.md" })
      assert.equal("alpha\n", sb:read_file("docs/a.md"))
      assert(sb:write_file("docs/b.md", "own\n", { overwrite = true })) -- and its own writes
      assert.equal("own\n", sb:read_file("docs/b.md"))
    end)

    it("removes with whiteouts: gone from the view and from commands, kept in the base", function()
      assert(sb:remove("docs/a.md"))
      assert.is_false(sb:exists("docs/a.md"))
      assert.equal("b.md\n", run(sb, "ls docs"))
      run(sb, "rm src/util.c")
      assert.is_nil((sb:read_file("src/util.c")))
      assert.same({ "deleted docs/a.md", "deleted src/util.c" }, kinds(sb))
    end)

    it("makes a directory removed and made again opaque: the base's entries stay hidden", function()
      assert(sb:remove("docs", { recursive = true }))
      assert(sb:mkdir("docs"))
      assert(sb:write_file("docs/new.md", "new\n"))
      local listed = {}
      for _, e in ipairs(assert(sb:readdir("docs"))) do listed[#listed + 1] = e.name end
      assert.same({ "new.md" }, listed)
      assert.equal("new.md\n", run(sb, "ls docs"))
      assert.same({ "deleted docs/a.md", "deleted docs/b.md", "added docs/new.md" }, kinds(sb))
    end)

    it("renames a directory of the base (copied up, as mv does), for file operations and commands", function()
      assert(sb:rename("docs", "documents"))
      assert.equal("a.md\nb.md\n", run(sb, "ls documents"))
      assert.is_false(sb:exists("docs"))
      run(sb, "mv src source")
      assert.equal("int util(void) { return 1; }\n", sb:read_file("source/util.c"))
      assert.same({ "renamed documents/a.md <- docs/a.md", "renamed documents/b.md <- docs/b.md",
                    "renamed source/main.c <- src/main.c", "renamed source/util.c <- src/util.c" }, kinds(sb))
    end)

    it("gives commands no way to the base or to the layers", function()
      local state = sb.state_dir
      local out = run(sb, ("for p in %s /proc/1/root%s /proc/self/root%s; do echo x > $p/probe.txt 2>/dev/null; done; "
        .. "ls %s 2>&1; ls /oldroot 2>&1; true"):format(base, base, base, state))
      assert.matches("cannot access '" .. state:gsub("%p", "%%%0") .. "': No such file", out)
      assert.matches("cannot access '/oldroot'", out)
      assert.equal("x\n", sb:read_file("probe.txt")) -- every way in is the merged view
      assert.is_nil(sh.read_file(base .. "/probe.txt"))
    end)

    it("keeps the policy on the merged view: rules, extensions, audit, read_only", function()
      sb:dispose()
      local seen = {}
      sb = assert(sandbox.overlay { base_dir = base, rules = { deny = { "docs/**" } },
        audit = function(e)
          if e.kind == "file" then seen[#seen + 1] = e.op .. " " .. tostring(e.path) .. " " .. tostring(e.ok) end
        end })
      assert.equal("EACCES", select(3, sb:read_file("docs/a.md")))
      assert(sb:write_file("x.txt", "x"))
      assert.truthy(table.concat(seen, "\n"):find("write_file x.txt true", 1, true))
      sb:dispose()
      sb = assert(sandbox.overlay { base_dir = base, read_only = true })
      assert.equal("EACCES", select(3, sb:write_file("y.txt", "y")))
    end)

    for _, view in ipairs { "kernel", "userspace" } do
      it("bounds the upper layer with max_disk_usage, not the base (" .. view .. " view)", function()
        sb:dispose()
        sh.run(("head -c 300000 /dev/zero > %s/big.bin && mkdir %s/bigdir && head -c 200000 /dev/zero > %s/bigdir/x"):format(
          base, base, base))
        hash0 = tree_hash(base)
        sb = assert(sandbox.overlay { base_dir = base, max_disk_usage = "100KB",
                                      confine = view == "userspace" and { namespaces = false } or nil })
        assert.equal(view, sb.overlay_view)
        assert.equal(300000, #assert(sb:read_file("big.bin")))
        assert(sb:write_file("small.txt", ("s"):rep(50000)))
        local ok, msg, code = sb:write_file("more.txt", ("m"):rep(60000))
        assert.is_nil(ok)
        assert.equal("ENOSPC", code, msg)
        assert(sb:remove("small.txt"))
        assert(sb:write_file("more.txt", ("m"):rep(60000))) -- room again
        -- a base file or directory moved is copied up first: it counts; the upper layer's own move in place
        assert.equal("ENOSPC", select(3, sb:rename("big.bin", "moved.bin")))
        assert.equal("ENOSPC", select(3, sb:rename("bigdir", "moved")))
        assert(sb:rename("more.txt", "more2.txt"))
        assert.equal(300000, #assert(sb:read_file("big.bin")))
        assert.equal(200000, #assert(sb:read_file("bigdir/x")))
      end)
    end
  end)

  describe("review", function()
    local function edit()
      assert(sb:write_file("README.md", "# project\nmore\n", { overwrite = true }))
      run(sb, "sed -i 's/return 0/return 1/' src/main.c 2>/dev/null; rm docs/b.md; mv src/util.c src/helpers.c")
      assert(sb:write_file("new/file.txt", "hello\n"))
      assert(sb:write_file("data.bin", "\0\1\2changed", { overwrite = true }))
    end

    it("lists the changes, sorted, with renames", function()
      edit()
      assert.same({ "modified README.md", "modified data.bin", "deleted docs/b.md", "added new/file.txt",
                    "renamed src/helpers.c <- src/util.c", "modified src/main.c" }, kinds(sb))
      assert.same({}, (function() sb:discard() return assert(sb:changes()) end)())
    end)

    it("gives a git diff that git apply turns the base into the merged view with", function()
      edit()
      local d = assert(sb:diff())
      assert.matches("diff %-%-git a/src/main%.c b/src/main%.c\n", d)
      assert.matches("Binary files a/data%.bin and b/data%.bin differ\n", d)
      assert.matches("rename from src/util%.c\nrename to src/helpers%.c\n", d)
      assert.matches("deleted file mode 100644\n", d)
      local only = assert(sb:diff { "src/main.c" })
      assert.matches("^diff %-%-git a/src/main%.c", only)
      assert.is_nil(only:find("README", 1, true))
      -- apply the text part to a copy of the base; the merged view must equal it
      local copy = backends.tmpdir("ovcopy")
      assert(sh.run(("cp -a %s/. %s/"):format(base, copy)))
      local f = assert(io.open(copy .. "/p.diff", "wb"))
      f:write((d:gsub("diff %-%-git a/data%.bin.-differ\n", "")))
      f:close()
      local ok, out = sh.run(("cd %s && git apply p.diff && rm p.diff"):format(copy))
      assert(ok, out)
      for _, p in ipairs { "README.md", "src/main.c", "src/helpers.c", "new/file.txt" } do
        assert.equal(sb:read_file(p), sh.read_file(copy .. "/" .. p), p)
      end
      assert.is_nil(sh.read_file(copy .. "/docs/b.md"))
      assert.is_nil(sh.read_file(copy .. "/src/util.c"))
      assert.equal("ENOENT", select(3, sb:diff { "no/such" }))
    end)

    it("commits into the base, each file whole, and then has nothing left to show", function()
      edit()
      hash0 = nil -- this spec changes the base on purpose
      local ok, done = sb:commit { "README.md", "src" }
      assert.is_true(ok, done)
      assert.same({ "README.md", "src/helpers.c", "src/main.c" }, done)
      assert.equal("# project\nmore\n", sh.read_file(base .. "/README.md"))
      assert.is_nil(sh.read_file(base .. "/src/util.c"))
      assert.equal("beta\n", sh.read_file(base .. "/docs/b.md"), "an uncommitted deletion stayed in the view")
      assert.same({ "modified data.bin", "deleted docs/b.md", "added new/file.txt" }, kinds(sb))
      assert(sb:commit())
      assert.same({}, kinds(sb))
      assert.is_nil(sh.read_file(base .. "/docs/b.md"))
      assert.equal("hello\n", sh.read_file(base .. "/new/file.txt"))
      -- the view still shows the same tree, and keeps working
      assert.equal("hello\n", run(sb, "cat new/file.txt"))
    end)

    it("refuses to commit over a base that changed since the sandbox first read it: nothing applied", function()
      edit()
      sh.run(("printf 'host edit\\n' > %s/README.md; printf 'host\\n' > %s/new.host"):format(base, base))
      hash0 = tree_hash(base) -- the host's own edits; the commit must not add to them
      local ok, msg, code, paths = sb:commit()
      assert.is_nil(ok)
      assert.equal("EAGAIN", code)
      assert.matches("README%.md", msg)
      assert.same({ "README.md" }, paths)
      assert.equal(hash0, tree_hash(base))
      local ok2 = sb:commit { "src/main.c" } -- the other paths still commit
      assert.is_true(ok2)
      hash0 = tree_hash(base)
    end)

    it("commits no link that leads out of the base, and nothing else with it", function()
      run(sb, "ln -s /etc/passwd out1; ln -s ../../x src/out2; ln -s main.c src/in; ln -s " .. base .. "/README.md abs_in")
      assert(sb:write_file("plain.txt", "p"))
      local ok, msg, code, paths = sb:commit()
      assert.is_nil(ok)
      assert.equal("EACCES", code, msg)
      assert.same({ "abs_in", "out1", "src/out2" }, paths)
      hash0 = nil
      assert(sb:discard { "abs_in", "out1", "src/out2" })
      assert(sb:commit())
      assert.equal("main.c", sh.lines("readlink " .. base .. "/src/in")[1])
      assert.equal("p", sh.read_file(base .. "/plain.txt"))
    end)

    it("discards chosen changes, or all: the view shows the base again", function()
      edit()
      assert(sb:discard { "README.md", "docs" })
      assert.equal("# project\n", sb:read_file("README.md"))
      assert.equal("beta\n", run(sb, "cat docs/b.md"))
      assert(sb:discard())
      assert.same({}, kinds(sb))
      assert.equal("int util(void) { return 1; }\n", sb:read_file("src/util.c"))
      assert.is_false(sb:exists("new/file.txt"))
    end)
  end)

  describe("checkpoints", function()
    it("undo an agent turn: restore brings the view back, base untouched", function()
      assert(sb:write_file("turn1.txt", "one\n"))
      assert(sb:remove("docs/a.md"))
      local c1 = sb:checkpoint()
      local at1 = assert(sb:snapshot())
      run(sb, "echo two > turn2.txt; rm -r src; echo changed > README.md")
      assert(sb:rename("docs", "moved"))
      local c2 = sb:checkpoint()
      assert.same({ c1, c2 }, sb:checkpoints())
      assert(sb:restore(c1))
      assert.same(at1, assert(sb:snapshot()))
      assert.equal("one\n", run(sb, "cat turn1.txt"))
      assert(sb:restore(c2))
      assert.is_true(sb:exists("turn2.txt"))
      assert.is_false(sb:exists("src"))
      assert.equal("ENOENT", select(3, sb:restore(99)))
    end)

    it("copies only what changed (the upper layer), never the base", function()
      sb:dispose()
      sh.run(("head -c 2000000 /dev/urandom > %s/large.bin"):format(base))
      hash0 = tree_hash(base)
      sb = assert(sandbox.overlay { base_dir = base })
      assert(sb:write_file("small.txt", "s"))
      sb:checkpoint()
      local _, du = sh.run("du -sb " .. sh.quote(sb.state_dir .. "/checkpoints") .. " | cut -f1")
      assert.is_true(tonumber(du) < 100000, du)
    end)
  end)

  describe("checkpoints under random agent turns", function()
    local difftest = require "support.difftest"
    -- The whole view: every entry's type, and contents or link text.
    local function view(s)
      local out = {}
      local function walk(dir)
        for _, e in ipairs(assert(s:readdir(dir))) do
          local p = dir == "." and e.name or dir .. "/" .. e.name
          if e.type == "directory" then
            out[#out + 1] = "d " .. p
            walk(p)
          elseif e.type == "symlink" then
            out[#out + 1] = "l " .. p .. " -> " .. assert(s:readlink(p))
          else
            out[#out + 1] = "f " .. p .. " " .. assert(s:read_file(p))
          end
        end
      end
      walk(".")
      return table.concat(out, "\n")
    end

    it("restore gives back exactly the view of each checkpoint; discard gives back the base", function()
      local start = view(sb)
      for seed = 1, 60 do
        local ops = difftest.gen_sequence(1000 + seed, 36)
        local saved = {}
        for i, op in ipairs(ops) do
          difftest.apply(sb, op)
          if i % 12 == 0 then saved[#saved + 1] = { sb:checkpoint(), view(sb) } end
        end
        for j = #saved, 1, -1 do
          assert(sb:restore(saved[j][1]))
          assert.equal(saved[j][2], view(sb), "seed " .. seed .. ", checkpoint " .. j)
        end
        assert(sb:discard())
        assert.same({}, assert(sb:changes()), "seed " .. seed)
        assert.equal(start, view(sb), "seed " .. seed .. ": discard")
      end
    end)
  end)

  describe("state", function()
    it("survives the process with state_dir, and reopens", function()
      sb:dispose()
      local state = backends.tmpdir("ovstate")
      sb = assert(sandbox.overlay { base_dir = base, state_dir = state })
      assert(sb:write_file("kept.txt", "kept\n"))
      local id = sb:checkpoint()
      assert(sb:write_file("later.txt", "later\n"))
      sb:dispose()
      sb = assert(sandbox.overlay { base_dir = base, state_dir = state })
      assert.equal("kept\n", sb:read_file("kept.txt"))
      assert.same({ id }, sb:checkpoints())
      assert(sb:restore(id))
      assert.is_false(sb:exists("later.txt"))
      assert.same({ "added kept.txt" }, kinds(sb))
    end)

    it("a crash between checkpoint and restore leaves a consistent state", function()
      sb:dispose()
      local state = backends.tmpdir("ovcrash")
      -- a child makes checkpoints in a loop and is killed at some point of one
      local script = ([[
        package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local sb = assert(require("sandbox").overlay { base_dir = %q, state_dir = %q })
        for i = 1, 100000 do
          assert(sb:write_file("f" .. (i %% 50) .. ".txt", ("x"):rep(i %% 5000)))
          sb:checkpoint()
          if i == 3 then io.stdout:write("ready\n") io.stdout:flush() end
        end]]):format(sh.build, base, state)
      local _, out = sh.run(("%s -e %s & pid=$!; sleep 1.5; kill -9 $pid; wait $pid; echo killed"):format(
        sh.lua(false), sh.quote(script)))
      assert.matches("ready", out)
      assert.matches("killed", out)
      sb = assert(sandbox.overlay { base_dir = base, state_dir = state })
      local ids = sb:checkpoints()
      assert.is_true(#ids >= 3)
      assert(sb:restore(ids[#ids]))
      assert(sb:restore(ids[1]))
      assert.same({ "added f1.txt" }, kinds(sb))
      assert(sb:write_file("after.txt", "fine"))
      local _, left = sh.run("ls " .. sh.quote(state .. "/checkpoints") .. " | grep -c tmp || true")
      assert.equal("0", left:match("%d+"))
    end)

    it("a crash in the middle of a restore is finished when the state is next opened", function()
      sb:dispose()
      local state = backends.tmpdir("ovrestorecrash")
      -- two checkpoints with nothing in common, restored in turn until killed
      local script = ([[
        package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local sb = assert(require("sandbox").overlay { base_dir = %q, state_dir = %q })
        for i = 1, 200 do assert(sb:write_file("a/" .. i .. ".txt", ("a"):rep(i))) end
        assert(sb:remove("docs", { recursive = true }))
        local one = sb:checkpoint()
        assert(sb:remove("a", { recursive = true }))
        for i = 1, 200 do assert(sb:write_file("b/" .. i .. ".txt", ("b"):rep(i))) end
        assert(sb:write_file("README.md", "# b\n", { overwrite = true }))
        local two = sb:checkpoint()
        io.stdout:write("ready\n") io.stdout:flush()
        for i = 1, 100000 do assert(sb:restore(i %% 2 == 1 and one or two)) end]]):format(sh.build, base, state)
      local _, out = sh.run(("%s -e %s & pid=$!; sleep 2.5; kill -9 $pid; wait $pid; echo killed"):format(
        sh.lua(false), sh.quote(script)))
      assert.matches("ready", out)
      assert.matches("killed", out)
      sb = assert(sandbox.overlay { base_dir = base, state_dir = state })
      local got = kinds(sb)
      local a, b = 0, 0
      for _, k in ipairs(got) do
        if k:match("^added a/") then a = a + 1 elseif k:match("^added b/") then b = b + 1 end
      end
      -- exactly one checkpoint's view (docs gone in both): 200 files, or 200 others and README changed
      assert.is_false(sb:exists("docs/a.md"))
      if a > 0 then
        assert.same({ 200, 0 }, { a, b })
        assert.equal("# project\n", sb:read_file("README.md"))
      else
        assert.same({ 0, 200 }, { a, b })
        assert.equal("# b\n", sb:read_file("README.md"))
      end
      assert.is_nil(sh.read_file(state .. "/restoring"))
    end)

    it("removes a temporary state at dispose, and leaves no process", function()
      local state = sb.state_dir
      assert.is_true(sb.state_temporary)
      local m = procs.marker()
      assert(sb:exec("sleep", { m }, { background = true }))
      sb:dispose()
      assert.has_error(function() sb:changes() end, "changes: the sandbox is closed")
      sb = nil
      assert.is_nil(sh.read_file(state .. "/base"))
      assert.same({}, (procs.find(m)))
    end)

    it("refuses a state_dir of another base, or one that contains it or lies in it", function()
      sb:dispose()
      local state = backends.tmpdir("ovother")
      local other = backends.tmpdir("ovotherbase")
      assert(sandbox.overlay { base_dir = other, state_dir = state }):dispose()
      local s2, msg, code = sandbox.overlay { base_dir = base, state_dir = state }
      assert.is_nil(s2)
      assert.equal("EINVAL", code)
      assert.matches("holds the overlay of", msg)
      s2, msg = sandbox.overlay { base_dir = base, state_dir = base .. "/.state" }
      assert.is_nil(s2)
      assert.matches("must not contain one another", msg)
      s2, msg = sandbox.overlay { base_dir = base .. "/docs", state_dir = base }
      assert.is_nil(s2)
      assert.matches("must not contain one another", msg)
      sb = nil -- and the base is untouched: no directory was made in it (checked after each spec)
    end)

    it("where the kernel cannot mount it, works over the layers in userspace, in the kernel's format; commands fail closed", function()
      sb:dispose()
      local state = backends.tmpdir("ovuser")
      for i, confine in ipairs { false, { namespaces = false } } do
        local u = assert(sandbox.overlay { base_dir = base, state_dir = state, confine = confine })
        assert.equal("userspace", u.overlay_view)
        assert.matches("own mount namespace", u.overlay_why)
        local r, msg, code = u:exec("true")
        assert.is_nil(r)
        assert.equal("ENOTSUP", code)
        assert.matches("mount namespace", msg)
        if i == 1 then
          assert(u:write_file("src/main.c", "int main(void) { return 7; }\n", { overwrite = true }))
          assert(u:remove("docs", { recursive = true }))
          assert(u:mkdir("docs"))
          assert(u:write_file("docs/c.md", "gamma\n"))
          assert(u:rename("src", "lib"))
          assert(u:remove("data.bin"))
          assert(u:symlink("lib/main.c", "main.c"))
        end
        assert.same({ "c.md" }, names(u, "docs"))
        assert.equal("int main(void) { return 7; }\n", u:read_file("main.c"))
        assert.same({ "deleted data.bin", "deleted docs/a.md", "deleted docs/b.md", "added docs/c.md", "added lib/main.c",
                      "renamed lib/util.c <- src/util.c", "added main.c", "deleted src/main.c" }, kinds(u))
        u:dispose()
      end
      -- the kernel's overlayfs over the same state directory shows the same tree
      local k = assert(sandbox.overlay { base_dir = base, state_dir = state, allow_shell = true })
      assert.equal("kernel", k.overlay_view)
      assert.same({ "c.md" }, names(k, "docs"))
      assert.equal("c.md\n", run(k, "ls docs"))
      assert.equal("README.md\ndocs\nempty\nlib\nmain.c\n", run(k, "ls"))
      assert.equal("int main(void) { return 7; }\n", run(k, "cat main.c"))
      sb = k -- disposed after the spec; the base is checked untouched
    end)

    it("a seccomp filter that refuses every namespace leaves the userspace overlay, and exec says why", function()
      sb:dispose()
      local lua = ([[%s/test/no_ns all %s -e '
        package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
        package.cpath = "%s/?.so;" .. package.cpath
        local s = require "sandbox"
        local sb = assert(s.overlay { base_dir = "%s" })
        assert(sb:write_file("new.txt", "n"))
        local r, msg, code = sb:exec("true")
        assert(sb:read_file("new.txt") == "n" and sb:read_file("README.md"):match("^# project"))
        print(sb.overlay_view, code)
        print(msg)
        sb:dispose()']]):format(sh.build, sh.lua(), sh.build, base)
      local ok, out = sh.run(("cd %s && %s"):format(sh.quote(os.getenv("PWD") or "."), lua))
      assert(ok, out)
      local first, second = out:match("^([^\n]*)\n([^\n]*)")
      assert.equal("userspace\tENOTSUP", first)
      assert.matches("namespace", second)
      sb = nil
    end)
  end)
end)
