-- One policy for files and commands (SPEC §6.1): every option that binds the
-- file tools binds the sandbox's commands as well, or commands are refused
-- with the reason. Each case does the same thing through a file tool and
-- through commands (cat, grep -r, cp, tar, Python, mv, ln, rm, redirects),
-- on the container and the overlay, as root and as an unprivileged user
-- (setpriv), and asserts what did not happen: no byte of a denied file in
-- any output, nothing written, nothing left; then what the host sees.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"
local cases = require "support.policy_cases"
local hostcan = require "support.host"

local without_layers = require("support.host").without_layers("only confinement binds commands to the policy")
if without_layers then
  describe("one policy for files and commands", function() pending(without_layers) end)
  return
end
if os.getenv("SANDBOX_TEST_UNCONFINED") then -- valgrind: see the Makefile
  describe("one policy for files and commands", function()
    pending("not run here: commands are unconfined in this run (valgrind; make PORTABLE=1)")
  end)
  return
end


local function mkfile(path, content)
  assert(sh.run("mkdir -p " .. sh.quote(path:match("^(.*)/[^/]+$"))))
  local f = assert(io.open(path, "wb"))
  f:write(content)
  f:close()
end

-- A fresh copy of the cases' tree at dir (made if nil), owned by `owner`.
local function tree(dir, owner)
  dir = dir or backends.tmpdir("policy")
  for p, content in pairs(cases.TREE) do mkfile(dir .. "/" .. p, content) end
  if owner then assert(sh.run(("chown -R %s %s && chmod 755 %s"):format(owner, sh.quote(dir), sh.quote(dir)))) end
  return dir
end

-- Every regular file below dir: {path = content}.
local function files(dir)
  local t = {}
  for _, p in ipairs(sh.lines(("cd %s && find . -type f | sed 's|^./||'"):format(sh.quote(dir)))) do
    t[p] = sh.read_file(dir .. "/" .. p)
  end
  return t
end

local function absent(text, needle, what)
  assert.is_nil(text:find(needle, 1, true), (what or "") .. ": '" .. needle .. "' in:\n" .. text)
end

local function no_secret(text, what, list)
  for _, s in ipairs(list or cases.SECRETS) do absent(text, s, what) end
end

-- A command of sb is refused (ENOTSUP) with a reason matching pattern.
local function exec_refused(sb, pattern)
  local r, msg, code = sb:exec("true")
  assert.is_nil(r)
  assert.equal("ENOTSUP", code)
  assert.matches(pattern, msg)
end

-- The runners: a case in this process, or in a child as nobody.
local function in_process(name, kind, dir) return cases.cases[name](kind, dir) end
local function as_nobody(name, kind, dir)
  local ok, out = sh.run(("setpriv --reuid=65534 --regid=65534 --clear-groups env SANDBOX_BUILD=%s TMPDIR=/tmp "
    .. "%s spec/support/policy_as_user.lua %s %s %s"):format(sh.build, sh.lua(), name, kind, sh.quote(dir)))
  assert(ok, out)
  local res = {}
  for l in out:gmatch("[^\n]+") do
    local k, v = l:match("^([%w_]+)\t(.*)$")
    if k then res[k] = v:gsub("\\(.)", { n = "\n", ["\\"] = "\\" }) end
  end
  return res
end

local users = { { "as root", in_process, nil } }
if hostcan.can("the policy cases as an unprivileged user", hostcan.unprivileged()) then
  users[#users + 1] = { "as an unprivileged user", as_nobody, "65534:65534" }
end

for _, user in ipairs(users) do
  local who, run, owner = user[1], user[2], user[3]
  for _, kind in ipairs { "container", "overlay" } do
    describe(("one policy for files and commands, %s %s:"):format(kind, who), function()
      it("deny rules: commands neither read nor change what the file tools may not", function()
        local dir = tree(nil, owner)
        local before = files(dir)
        local o = run("deny", kind, dir)
        assert.equal("EACCES", o.tool_read)
        assert.equal("SECRET-SRC-6604\n", o.tool_grep) -- the one secret no rule covers
        assert.equal("true", o.rules)
        no_secret(o.read, "a command's reads", cases.DENIED)
        assert.matches("SECRET%-SRC%-6604", o.read) -- the commands did read: what is allowed
        assert.matches("end", o.read)
        no_secret(o.change, "a command's changes", cases.DENIED)
        assert.matches("end", o.change)
        -- a file the agent's command made that a rule matches: masked from the next command on
        assert.matches("SECRET%-MADE%-8181", o.made) -- its own maker may read it (said in the README)
        absent(o.made_next, "SECRET-MADE-8181", "the next command")
        assert.equal("EACCES", o.tool_move) -- conf/secret.txt would leave its rule
        assert.equal("ok", o.tool_move_ok)  -- keys/a.pem stays denied as k4/a.pem
        local after = files(dir)
        for _, p in ipairs { ".env", "private/notes.txt", "conf/secret.txt" } do
          assert.equal(before[p], after[p], p .. " changed on the host")
        end
        if kind == "container" then
          assert.equal(before["keys/a.pem"], after["k4/a.pem"])
          for _, p in ipairs { "h1", "h2", "h3", "e2", "k2/a.pem", "c2/secret.txt", "p2/notes.txt", "m2", "m3" } do
            assert.is_nil(after[p], p .. " appeared")
          end
        else -- an overlay's base is never written; its layer holds no change to a denied path
          assert.same(before, after)
          for line in o.changes:gmatch("[^\n]+") do -- (k4/ is the file tool's allowed move)
            assert.is_nil(line:match(" %.env$") or line:match("private") or line:match("secret%.txt")
              or (line:match("a%.pem$") and not line:match(" k4/")) or line:match("^%a+ h%d$"), line)
          end
        end
      end)

      it("read_only and mode = \"r\": commands change nothing in the root, /tmp stays theirs", function()
        local dir = tree(nil, owner)
        local before = files(dir)
        local o = run("read_only", kind, dir)
        for _, k in ipairs { "ro", "mode_r" } do
          assert.equal("EACCES", o[k .. "_tool"])
          assert.matches("Read%-only file system", o[k .. "_cmd"])
          assert.matches("readme text\nend", o[k .. "_cmd"])
          assert.matches("^x\n", o[k .. "_tmp"])
          assert.equal("true", o[k .. "_report"])
          if kind == "overlay" then assert.equal("", o[k .. "_changes"]) end
        end
        assert.same(before, files(dir))
      end)

      it("mode = \"w\": commands write and list the root, never read a file's contents", function()
        -- Landlock's rules add up along a path: a root below /tmp or
        -- /dev/shm (which commands read) cannot be write-only; /var/tmp is not
        local base = assert(sh.lines("mktemp -d /var/tmp/sbtest-modew-XXXXXX")[1])
        finally(function() sh.run("rm -rf " .. sh.quote(base)) end)
        if owner then assert(sh.run("chmod 755 " .. sh.quote(base))) end
        local dir = tree(base .. "/ws", owner)
        local o = run("mode_w", kind, dir)
        assert.equal("EACCES", o.tool)
        assert.equal("nil", o.refused)
        absent(o.cmd, "readme text", "a command in mode w")
        absent(o.cmd, "print('hi')", "a command in mode w")
        no_secret(o.cmd, "a command in mode w")
        assert.matches("README%.md", o.cmd) -- names can be listed
        assert.matches("end", o.cmd)
        assert.equal("true", o.report)
        if kind == "container" then assert.equal("written\n", sh.read_file(dir .. "/new.txt")) end
        -- below /dev/shm the root cannot be kept from being read: commands fail closed, saying so
        local shm = tree(nil, owner)
        local s = assert(sandbox[kind] { base_dir = shm, mode = "w" })
        exec_refused(s, "mode = \"w\".*/dev/shm")
        s:dispose()
      end)

      it("allow rules: only what is allowed (and the way to it) exists for commands", function()
        local dir = tree(nil, owner)
        local o = run("allow", kind, dir)
        assert.equal("EACCES", o.tool)
        -- the root holds what is allowed and the way to it; src/secret.lua is denied there
        assert.equal("README.md\nsrc\nmain.lua\nsecret.lua\n\nexit=0", o.ls)
        no_secret(o.cmd, "a command under allow rules")
        assert.matches("print%('hi'%)\nreadme text", o.cmd)
        assert.matches("top%.txt: Read%-only file system", o.cmd) -- not an allowed path
        assert.matches("end", o.cmd)
        assert.equal("added\n\nexit=0", o.next)
        local after = files(dir)
        assert.is_nil(after["top.txt"])
        if kind == "container" then assert.equal("new\n", after["src/new.lua"]) end
      end)

      it("max_disk_usage binds commands where the kernel can hold them to it, else they are refused", function()
        local dir = tree(nil, owner)
        local o = run("disk", kind, dir)
        assert.equal("ENOSPC", o.tool)
        if kind == "overlay" then -- the upper layer is a tmpfs of max_disk_usage bytes
          assert.matches("No space left on device", o.cmd)
          assert.equal("true", o.report)
        else -- no kernel limit on one directory here: commands fail closed, saying why
          assert.matches("^FAILED ENOTSUP: .*max_disk_usage.*max_disk_usage_files_only", o.cmd)
          assert.equal("false", o.report)
          assert.is_nil(sh.read_file(dir .. "/big"))
        end
        -- said explicitly, the limit binds the file tools only, and commands run
        assert.matches("^ran\n", o.files_only)
        assert.equal("ENOSPC", o.files_only_tool)
        assert.matches("file tools only", o.files_only_report)
      end)

      it("tmp_size bounds bytes and inodes, and /dev/shm shares them", function()
        local o = run("tmp", kind, tree(nil, owner))
        local made = tonumber(o.files:match("made=(%d+)"))
        assert.is_true(made < 5000 and made <= 512, o.files) -- 8 MB: 512 inodes
        assert.matches("tmp%-ok", o.shared)
        assert.is_nil(o.shared:match("shm%-ok"), o.shared) -- 5 MB + 5 MB > 8 MB together
        assert.equal("512 /dev/shm shares /tmp's bytes and inodes", o.report)
      end)

      it("no command breaks the sandbox for the next: the way to the root is pinned", function()
        local parent = backends.tmpdir("later")
        if owner then assert(sh.run(("chown %s %s"):format(owner, sh.quote(parent)))) end
        local dir = tree(parent .. "/ws", owner)
        local o = run("later", kind, dir)
        assert.matches("end", o.breaks)
        assert.equal(dir .. "\nalive\n\nexit=0", o.next)
        assert.equal(dir .. "\n\nexit=0", o.after)
        assert.is_true(sh.run("test -d " .. sh.quote(dir))) -- the root is where it was (its files were the command's to remove)
      end)
    end)
  end
end

describe("one policy for files and commands: where no layer can bind it, commands are refused", function()
  local function refused(opts, pattern)
    opts.base_dir = tree()
    local sb = assert(sandbox.container(opts))
    exec_refused(sb, pattern)
    assert.matches(pattern, sb.confinement.refused)
    -- the file tools still work, bound as before
    assert.is_truthy(sb:read_file("README.md"))
    sb:dispose()
  end

  it("confine = false with read_only, mode or rules", function()
    refused({ confine = false, read_only = true }, "confine = false")
    refused({ confine = false, mode = "r" }, "confine = false")
    refused({ confine = false, rules = { deny = { ".env" } } }, "confine = false")
  end)

  it("rules without the mount view (confine = {namespaces = false})", function()
    refused({ confine = { namespaces = false }, rules = { deny = { ".env" } } }, "mount view")
  end)

  it("max_disk_usage on a ContainerSandbox, and on an overlay whose layers must outlive it", function()
    refused({ max_disk_usage = "1MB" }, "max_disk_usage_files_only")
    local state = backends.tmpdir("state")
    local ov = assert(sandbox.overlay { base_dir = tree(), state_dir = state .. "/s", max_disk_usage = "1MB" })
    exec_refused(ov, "state_dir")
    ov:dispose()
  end)

  it("no Landlock (forced): commands fail closed", function()
    local ok, out = sh.run(("ROOT=%s SANDBOX_BUILD=%s SANDBOX_NO_LANDLOCK=1 %s -e %s"):format(
      sh.quote(tree()), sh.build, sh.lua(), sh.quote([[
      package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
      package.cpath = os.getenv("SANDBOX_BUILD") .. "/?.so;" .. package.cpath
      local sb = assert(require("sandbox").container { base_dir = os.getenv("ROOT"),
        rules = { deny = { ".env" } } })
      local r, msg, code = sb:exec("cat", { ".env" })
      io.write(tostring(r), " ", tostring(code), " ", tostring(msg))
      sb:dispose()]])))
    assert(ok, out)
    assert.matches("^nil ENOTSUP .*Landlock", out)
  end)

  it("sandbox.capabilities() says how this host binds each policy item, or false", function()
    local c = sandbox.capabilities()
    assert.is_table(c.policy)
    for _, k in ipairs { "read_only", "mode_w", "rules", "disk" } do
      assert.is_true(c.policy[k] == false or type(c.policy[k]) == "string", k)
    end
    assert.is_false(c.policy.extensions)
    assert.equal(c.namespaces and c.landlock_abi and "the mount view" or false, c.policy.rules)
  end)

  it("the report has one entry per policy item, extensions a file-tool policy by name", function()
    local sb = assert(sandbox.container { base_dir = tree(), extensions = { read = { ".md" } }, read_only = true,
                                           rules = { deny = { ".env" } } })
    local c = sb.confinement
    assert.is_true(c.read_only.enforced)
    assert.is_true(c.rules.enforced)
    assert.equal(1, c.rules.deny)
    assert.is_false(c.disk.enforced)
    assert.equal("not set", c.disk.why)
    assert.is_false(c.extensions.enforced)
    assert.matches("file%-tool policy", c.extensions.why)
    assert.is_false(c.mode.enforced)
    sb:dispose()
  end)
end)

describe("links are judged as the kernel resolves them, never lexically", function()
  it("sb:symlink refuses a '..' after a name, whose meaning depends on what the name becomes", function()
    for _, kind in ipairs { "container", "overlay" } do
      local sb = assert(sandbox[kind] { base_dir = tree() })
      assert(sb:symlink(".", "y"))
      local r, msg, code = sb:symlink("y/y/y/y/../../../../etc/passwd", "x")
      assert.is_nil(r)
      assert.equal("EESCAPE", code, msg)
      assert.matches("after a name", msg)
      assert.is_nil(sb:stat("x"))
      assert(sb:symlink("src/main.lua", "ok")) -- plain targets stay fine
      assert.equal("print('hi')\n", sb:read_file("ok"))
      sb:dispose()
    end
    local v = sandbox.virtual { files = { ["a/b"] = "x" } }
    assert.equal("EESCAPE", select(3, v:symlink("a/../../x", "l")))
    assert(v:symlink("a/b", "l"))
    v:dispose()
  end)

  it("sb:symlink refuses a target that leads out through a link already there (one a command made)", function()
    local sb = assert(sandbox.container { base_dir = tree() })
    assert(sb:exec("ln", { "-s", "/etc", "sys" })) -- commands make any link
    local r, msg, code = sb:symlink("sys/passwd", "pw")
    assert.is_nil(r)
    assert.equal("EESCAPE", code)
    assert.matches("through a link on its way", msg)
    assert.is_nil(sb:stat("pw"))
    sb:dispose()
  end)

  it("an overlay's commit never puts a link into base_dir that leads out, in the tree as it will be", function()
    local base = tree()
    local sb = assert(sandbox.overlay { base_dir = base, allow_shell = true })
    -- the attack of the issue: y -> . and x -> y/y/y/y/../../../../etc/passwd, made by a command
    assert(sb:exec_shell("ln -s . y && ln -s y/y/y/y/../../../../etc/passwd x"))
    local ok, msg, code, which = sb:commit { "x", "y" }
    assert.is_nil(ok)
    assert.equal("EACCES", code, msg)
    assert.same({ "x" }, which)
    assert.is_nil(sh.read_file(base .. "/x"))
    assert.is_false(sh.run("test -L " .. sh.quote(base .. "/y")), "nothing was committed")
    -- chains through links made earlier: each judged where it lands
    assert(sb:exec_shell("rm x y && ln -s .. up && ln -s up/etc/passwd pw2"))
    ok, msg, code, which = sb:commit { "up", "pw2" }
    assert.is_nil(ok, msg)
    assert.is_string(code)
    assert.same({ "pw2", "up" }, which)
    -- a link already in the base that leads inside now and would lead out after the commit
    assert(sh.run(("ln -s m/../../outside %s/z"):format(sh.quote(base))))
    local sb2 = assert(sandbox.overlay { base_dir = base })
    assert(sb2:write_file("m/f", "new dir"))
    ok, msg, code, which = sb2:commit { "m/f" }
    assert.is_nil(ok, msg)
    assert.is_string(code)
    assert.same({ "z" }, which)
    assert.is_nil(sh.read_file(base .. "/m/f"))
    -- a link that stays inside is committed
    assert(sb:exec_shell("rm -f up pw2 && ln -s src/main.lua main"))
    assert(sb:commit { "main" })
    assert.equal("src/main.lua", sh.lines("readlink " .. sh.quote(base .. "/main"))[1])
    sb2:dispose()
    sb:dispose()
  end)
end)

describe("the command line and the MCP server bind commands as the options do", function()
  local function cli(args)
    local ok, out = sh.run(("%s bin/agent-sandbox %s 2>&1"):format(sh.lua(), args))
    return ok, out
  end

  it("agent-sandbox run --read-only, --deny, --mode w: the command is held to them", function()
    local dir = tree()
    local ok = cli(("run --dir %s --read-only -- sh -c 'echo x > f'"):format(sh.quote(dir)))
    assert.is_false(ok)
    assert.is_nil(sh.read_file(dir .. "/f"))
    local _, out = cli(("run --dir %s --deny .env --deny '**/*.pem' -- sh -c 'cat .env keys/a.pem; echo end'")
      :format(sh.quote(dir)))
    no_secret(out, "agent-sandbox run", { "SECRET-ENV-7731", "SECRET-PEM-4410" })
    assert.matches("end", out)
    local rc, dout = cli(("run --dir %s --max-disk-usage 1MB -- true"):format(sh.quote(dir)))
    assert.is_false(rc)
    assert.matches("max%-disk%-usage%-files%-only", dout:gsub("_", "-"))
    assert.is_true((cli(("run --dir %s --max-disk-usage 1MB --max-disk-usage-files-only -- true"):format(sh.quote(dir)))))
  end)

  it("agent-sandbox help says what each policy flag binds", function()
    local _, out = cli("help run")
    assert.matches("%-%-read%-only.-commands", out)
    assert.matches("%-%-deny GLOB.-command", out)
    assert.matches("%-%-read%-ext EXT.-commands are not bound", out)
    assert.matches("%-%-max%-disk%-usage%-files%-only", out)
  end)
end)
