-- The attack corpus of reference/paths.md §3 against the ContainerSandbox,
-- on both resolvers. Every case checks the result code AND that nothing
-- outside the root was read, created or changed.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local hostcan = require "support.host"

local build = require("support.sh").build
local SECRET = "OUTSIDE-SECRET"

-- W/R is the root; W/outside is its sibling holding the secret. Built once
-- (some 60 programs), then copied for each case with cp -a (links, the FIFO,
-- the socket, the device node and the hard link as they are); the two links
-- that name the tree's own absolute path are made again in the copy.
local template
local function build_tree()
  local w = backends.tmpdir("corpus-template")
  local script = ([[
    set -e
    cd %q
    mkdir -p R/a/b R/d R/n1 R/n2 R/n3 outside/sub
    printf %%s %q > outside/secret
    printf hl-original > outside/hlsrc
    printf inside > R/file
    printf data > R/n3/data.txt
    cd R
    ln -s /etc/passwd abslink
    ln -s /etc absdir
    ln -s "$PWD/file" absin
    ln -s "$PWD/a" absindir
    ln -s ../outside/secret rellink
    ln -s ../outside reldir
    ln -s chain2 chain1; ln -s ../outside/secret chain2
    ln -s chaind2 chaind1; ln -s ../outside chaind2
    ln -s ../outside dirlink
    ln -s .. up
    ln -s .. a/up
    ln -s ../outside/new dang
    ln -s newin dangin
    ln -s /newfile3-sbtest creatlink
    ln -s ../outside/newdir dangdir
    ln -s newdir2 dangin2
    ln -s file inlink
    ln -s /proc/self/root procself
    ln -s loop2 loop1; ln -s loop1 loop2
    ln -s evil/ a/link1; ln -s ../../outside a/evil
    ln -s ../n2/y n1/x; ln -s ../n3 n2/y
    mkfifo fifo
    %s sock
    mknod nulldev c 1 3
    ln ../outside/hlsrc hl
    mkdir hops; cd hops; mkdir target; printf deep > target/f
    i=0; prev=target
    while [ $i -lt 41 ]; do ln -s $prev c$i; prev=c$i; i=$((i+1)); done
  ]]):format(w, SECRET, build .. "/test/mksock")
  local ok, out = sh.run(script)
  assert(ok, out)
  return w
end

local function make_tree()
  template = template or build_tree()
  local w = backends.tmpdir("corpus")
  local ok, out = sh.run(("cp -a %q/. %q && cd %q/R && ln -sfn \"$PWD/file\" absin && ln -sfn \"$PWD/a\" absindir")
    :format(template, w, w))
  assert(ok, out)
  return w, w .. "/R"
end

-- Everything outside the root, as a comparable string (names, types, contents).
local function outside_state(w)
  local _, out = sh.run(("cd %q && find outside -printf '%%p %%y %%s %%T@\\n' | sort && cat outside/secret outside/hlsrc; ls -d /newfile3-sbtest 2>&1; ls R/newin R/n2/newdir 2>&1"):format(w))
  return out
end

for _, be in ipairs(backends.containers()) do
  describe("attack corpus, " .. be.name .. ":", function()
    local w, r, sb, before
    before_each(function()
      w, r = make_tree()
      sb = assert(sandbox.container { base_dir = r, resolver = be.resolver, exec = false }) -- file operations only
      assert.equal(be.resolver, sb.resolver)
      before = outside_state(w)
    end)
    after_each(function()
      sb:dispose()
      assert.equal(before, outside_state(w), "something outside the root changed")
    end)

    local function never_secret(v)
      if type(v) == "string" then assert.is_nil(v:find(SECRET, 1, true), "the outside secret was read") end
    end

    -- {label, function(sb, r) -> results..., expected code or value}
    local cases = {
      -- traversal and absolute paths
      { "1 ../outside/secret", function() return sb:read_file("../outside/secret") end, "EESCAPE" },
      { "2 leave and re-enter", function() return sb:read_file("a/../../R/file") end, "EESCAPE" },
      { "2 leave a/../..", function() return sb:read_file("a/../../outside/secret") end, "EESCAPE" },
      { "3 a/../file", function() return sb:read_file("a/../file") end, "inside" },
      { "4 ../", function() return sb:readdir("../") end, "EESCAPE" },
      { "4 a/../../", function() return sb:readdir("a/../../") end, "EESCAPE" },
      { "5 /etc/passwd", function() return sb:read_file("/etc/passwd") end, "EESCAPE" },
      { "6 absolute path inside the root", function() return sb:read_file(r .. "/file") end, "inside" },
      -- symlink escapes
      { "7 absolute symlink as final", function() return sb:read_file("abslink") end, "EESCAPE" },
      { "7 absolute symlink mid-path", function() return sb:read_file("absdir/passwd") end, "EESCAPE" },
      { "8 absolute symlink back inside", function() return sb:read_file("absindir/up/file") end, "EESCAPE" },
      { "8 absolute symlink to a file inside", function() return sb:read_file("absin") end, "EESCAPE" },
      { "9 relative symlink out, final", function() return sb:read_file("rellink") end, "EESCAPE" },
      { "9 stat of a link out, followed", function() return sb:stat("rellink", { follow = true }) end, "EESCAPE" },
      { "9 exists through a link out", function() return sb:exists("rellink") end, "EESCAPE" },
      { "9 relative symlink out, mid-path", function() return sb:read_file("reldir/secret") end, "EESCAPE" },
      { "10 chained symlinks out, final", function() return sb:read_file("chain1") end, "EESCAPE" },
      { "10 chained symlinks out, mid-path", function() return sb:read_file("chaind1/secret") end, "EESCAPE" },
      { "11 non-lexical chain staying inside", function() return sb:read_file("n1/x/data.txt") end, "data" },
      { "12 directory symlink mid-path", function() return sb:read_file("dirlink/secret") end, "EESCAPE" },
      { "12 list through a directory symlink", function() return sb:readdir("dirlink/sub") end, "EESCAPE" },
      { "13 up -> .. mid-path", function() return sb:read_file("up/outside/secret") end, "EESCAPE" },
      { "13 nested a/up/up", function() return sb:read_file("a/up/up/outside/secret") end, "EESCAPE" },
      { "14 in-root a/up/file", function() return sb:read_file("a/up/file") end, "inside" },
      { "14 a final link inside is followed", function() return sb:read_file("inlink") end, "inside" },
      { "14 stat of a link describes it", function() return sb:stat("inlink").size end, 4 },
      { "14 readlink", function() return sb:readlink("inlink") end, "file" },
      { "14 a link out is made only when allowed", function() return sb:symlink("../outside/secret", "mine") end, "EESCAPE" },
      { "14 an absolute link is made only when allowed", function() return sb:symlink(r .. "/file", "mine") end, "EESCAPE" },
      { "15 target with trailing slash", function() return sb:read_file("a/link1/secret") end, "EESCAPE" },
      { "15 dirlink/ is followed, out", function() return sb:readdir("dirlink/") end, "EESCAPE" },
      { "15 stat dirlink/", function() return sb:stat("dirlink/") end, "EESCAPE" },
      { "15 readdir dirlink, out", function() return sb:readdir("dirlink") end, "EESCAPE" },
      { "16 symlink loop, final", function() return sb:read_file("loop1") end, "ELOOP" },
      { "16 symlink loop, mid-path", function() return sb:read_file("loop1/x") end, "ELOOP" },
      { "17 40 hops", function() return sb:read_file("hops/c39/f") end, "deep" },
      { "17 41 hops", function() return sb:read_file("hops/c40/f") end, "ELOOP" },
      -- creating through symlinks
      { "18 write through a dangling link out", function() return sb:write_file("dang", "x") end, "EESCAPE" },
      { "18 mkdir on a dangling link out", function() return sb:mkdir("dang", { parents = false }) end, "EEXIST" },
      { "19 write through a dangling link in", function() return sb:write_file("dangin", "x") end, "ELOOP" },
      { "20 write through a link to /", function() return sb:write_file("creatlink", "x") end, "EESCAPE" },
      { "21 mkdir -p below a dangling link out", function() return sb:mkdir("dangdir/foo") end, "EESCAPE" },
      { "21 mkdir -p below a dangling link in", function() return sb:mkdir("dangin2/foo") end, "ENOENT" },
      { "21 write below a dangling link out", function() return sb:write_file("dangdir/f", "x") end, "EESCAPE" },
      -- hard and magic links
      { "22 write to a hard link replaces the name, not the outside inode",
        function() return sb:write_file("hl", "replaced") end, true },
      { "24 /proc/self/root via a symlink", function() return sb:read_file("procself/etc/passwd") end, "EESCAPE" },
      -- malformed and edge paths
      { "27 NUL byte", function() return sb:read_file("file\0/../../outside/secret") end, "EINVAL" },
      { "28 empty path", function() return sb:read_file("") end, "EINVAL" },
      { "29 read .", function() return sb:read_file(".") end, "EISDIR" },
      { "29 remove .", function() return sb:remove(".", { recursive = true }) end, "EINVAL" },
      { "29 remove the root by absolute path", function() return sb:remove(r, { recursive = true }) end, "EINVAL" },
      { "29 rename .", function() return sb:rename(".", "x") end, "EINVAL" },
      { "30 file/", function() return sb:read_file("file/") end, "ENOTDIR" },
      { "30 file/.", function() return sb:read_file("file/.") end, "ENOTDIR" },
      { "31 a/up/ is followed, inside", function() return sb:stat("a/up/").type end, "directory" },
      { "31 a/up, the link itself", function() return sb:stat("a/up").type end, "symlink" },
      { "31 remove dirlink/", function() return sb:remove("dirlink/", { recursive = true }) end, "ENOTDIR" },
      { "32 a//b and ./a/./b/.", function() return sb:stat("./a/./b/.").type end, "directory" },
      { "33 256-byte component", function() return sb:read_file(("x"):rep(256)) end, "ENAMETOOLONG" },
      { "34 path over 4095 bytes", function() return sb:read_file(("a/"):rep(2048)) end, "EINVAL" },
      { "35 thousands of ..", function() return sb:read_file(("../"):rep(1300) .. "etc/passwd") end, "EESCAPE" },
      { "35 balanced a/.. x 800", function() return sb:read_file(("a/../"):rep(800) .. "file") end, "inside" },
      { "36 unicode look-alike", function() return sb:read_file("\xef\xac\x81le") end, "ENOENT" },
      -- special files: refused, never blocking
      { "42 read a FIFO", function() return sb:read_file("fifo") end, "ENOTSUP" },
      { "42 write a FIFO", function() return sb:write_file("fifo", "x") end, "ENOTSUP" },
      { "44 read a device node", function() return sb:read_file("nulldev") end, "ENOTSUP" },
      { "45 read a unix socket", function() return sb:read_file("sock") end, "ENOTSUP" },
      -- whole operations
      { "48 rename into a directory symlink out", function() return sb:rename("file", "dirlink/file") end, "EESCAPE" },
      { "48 rename from a directory symlink out", function() return sb:rename("dirlink/secret", "stolen") end, "EESCAPE" },
      { "48 rename over a symlink replaces the link", function()
          assert(sb:write_file("new.txt", "N"))
          return sb:rename("new.txt", "inlink", { overwrite = true })
        end, true },
      { "remove a symlink to outside removes the link only", function() return sb:remove("dirlink") end, true },
      { "remove -r a tree holding a symlink out", function()
          assert(sb:mkdir("t/u"))
          return sb:remove("a", { recursive = true })
        end, true },
      { "grep does not follow symlinks out", function() return #sb:grep(SECRET) end, 0 },
      { "glob does not descend into symlinks", function() return #sb:glob("**/secret") end, 0 },
      { "glob through a link out is an escape", function() return sb:glob("dirlink/**") end, "EESCAPE" },
      { "glob lists symlinks without following", function() return #sb:glob("dirlink*") end, 1 },
      { "snapshot holds no outside content", function()
          local snap = assert(sb:snapshot())
          for _, v in pairs(snap) do never_secret(v) end
          return snap.file
        end, "replaced-or-inside" },
    }

    for _, c in ipairs(cases) do
      it(c[1], function()
        local res = table.pack(c[2]())
        for i = 1, res.n do never_secret(res[i]) end
        local want = c[3]
        if want == "replaced-or-inside" then
          assert.equal("inside", res[1])
        elseif type(want) == "string" and want:match("^E[A-Z]+$") then
          assert.is_nil(res[1], "expected " .. want .. ", got " .. tostring(res[1]))
          assert.equal(want, res[3], res[2])
        else
          assert.equal(want, res[1], res[2])
        end
      end)
    end

    it("22 after writing a hard link, the outside file keeps its content", function()
      assert(sb:write_file("hl", "replaced"))
      assert.equal("replaced", sb:read_file("hl"))
      local _, out = sh.run(("cat %q/outside/hlsrc"):format(w))
      assert.equal("hl-original", out)
    end)

    it("48 rename over a symlink leaves the link's target untouched", function()
      assert(sb:write_file("new.txt", "N"))
      assert(sb:rename("new.txt", "inlink", { overwrite = true }))
      assert.equal("inside", sb:read_file("file"))
      assert.equal("N", sb:read_file("inlink"))
    end)

    it("readdir classifies entries without following them", function()
      local types = {}
      for _, e in ipairs(assert(sb:readdir("."))) do types[e.name] = e.type end
      assert.same({ "symlink", "symlink", "other", "other", "other", "file", "directory" },
        { types.abslink, types.dirlink, types.fifo, types.sock, types.nulldev, types.hl, types.a })
      assert.equal("symlink", sb:stat("dirlink").type)
      assert.equal("symlink", sb:stat("abslink").type)
    end)

    it("opening a FIFO never blocks, for every operation that meets it", function()
      assert.equal("ENOTSUP", select(3, sb:read_file("fifo")))
      assert.equal("other", sb:stat("fifo").type)
      assert.equal(0, #sb:grep("x", { path = "fifo" }))
      assert.is_nil(sb:snapshot().fifo)
    end)

    it("25 a procfs mounted inside the root: magic links are refused", function()
      if not hostcan.can("a procfs mounted inside the root", hostcan.root()) then return end
      local script = ([[
        mkdir -p %s/proc && mount -t proc proc %s/proc && SANDBOX_RESOLVER=%s %s -e '
          package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
          package.cpath = "%s/?.so;" .. package.cpath
          local sb = assert(require("sandbox").container { base_dir = "%s" })
          for _, p in ipairs { "proc/self/root/etc/passwd", "proc/self/cwd/file", "proc/1/root/etc/passwd" } do
            local v, msg, code = sb:read_file(p)
            print(p, v == nil and code or "READ")
          end
          print("fd", select(3, sb:read_file("proc/self/fd/0")))
          print("exe", select(3, sb:write_file("proc/self/exe", "x")))'
      ]]):format(r, r, be.resolver, sh.lua(), build, r)
      local ok, out = sh.run("unshare -m sh -c " .. sh.quote(script))
      assert.is_true(ok, out)
      assert.matches("proc/self/root/etc/passwd\tELOOP", out)
      assert.matches("proc/self/cwd/file\tELOOP", out)
      assert.matches("proc/1/root/etc/passwd\tE[LA][OC][OC]", out) -- ELOOP or EACCES
      assert.matches("fd\tELOOP", out)
      assert.is_nil(out:find("READ", 1, true), out)
      assert.is_nil(out:find("exe\tnil", 1, true))
    end)
  end)
end

describe("ContainerSandbox construction", function()
  it("returns nil, msg, code when the root cannot be opened", function()
    local v, msg, code = sandbox.container { base_dir = "/nonexistent/sbtest" }
    assert.is_nil(v)
    assert.equal("ENOENT", code)
    assert.matches("base_dir", msg)
    local f = backends.tmpdir("ctor") .. "/file"
    sh.run("touch " .. f)
    assert.equal("ENOTDIR", select(3, sandbox.container { base_dir = f }))
  end)

  it("creates base_dir with create = true", function()
    local d = backends.tmpdir("ctor") .. "/new/deep"
    local sb = assert(sandbox.container { base_dir = d, create = true })
    assert.equal(d, sb.cwd)
    assert.is_true(sb:write_file("x", "1"))
    sb:dispose()
  end)

  it("reports the real absolute path as cwd, through a symlinked base_dir", function()
    local d = backends.tmpdir("ctor")
    sh.run(("mkdir %s/real && ln -s real %s/link"):format(d, d))
    local sb = assert(sandbox.container { base_dir = d .. "/link" })
    assert.equal(d .. "/real", sb.cwd)
    assert.equal("container", sb.kind)
    sb:dispose()
  end)

  it("checks options strictly", function()
    for _, c in ipairs {
      { {}, "option 'base_dir' is required" },
      { { base_dir = "/tmp", mode = "x" }, "'mode' must be one of rw, r, w" },
      { { base_dir = "/tmp", resolver = "magic" }, "'resolver' must be one of" },
      { { base_dir = "/tmp", read_roots = "/usr" }, "option 'read_roots' must be an array of strings" },
      { { base_dir = "/tmp", max_disk_usage = "big" }, "'max_disk_usage'" },
      { { base_dir = "/tmp", files = {} }, "unknown option 'files'" },
    } do
      local ok, err = pcall(function() local s = sandbox.container(c[1]); return s end)
      assert.is_false(ok)
      assert.matches(c[2], err)
    end
  end)

  it("reports kernel capabilities", function()
    local caps = sandbox.capabilities()
    assert.is_boolean(caps.openat2)
    assert.is_boolean(caps.pidfd)
    assert.is_true(caps.landlock_abi == false or caps.landlock_abi == math.floor(caps.landlock_abi))
  end)
end)

describe("ContainerSandbox failure paths", function()
  it("a resolver that cannot be set up returns an error and frees everything", function()
    local d = backends.tmpdir("fail")
    local script = ([[SANDBOX_RESOLVER=bogus %s -e '
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = "%s/?.so;" .. package.cpath
      local s = require("sandbox")
      for i = 1, 3 do print(select(3, s.container { base_dir = "%s", rules = { deny = { "x" } } })) end
      collectgarbage()']]):format(sh.lua(true), sh.build, d)
    local ok, out = sh.run(script)
    assert.is_true(ok, out)
    assert.equal("EINVAL\nEINVAL\nEINVAL\n", out)
  end)
end)
