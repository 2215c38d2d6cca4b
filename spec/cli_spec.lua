-- agent-sandbox run (SPEC §13): one confined command with stdio and exit
-- status passed through, the sandbox options as flags and config files, and
-- the confinement specs' attack classes as one-liners (each asserting what
-- did not happen on the host).
local sh = require "support.sh"
local procs = require "support.procs"
local backends = require "support.backends"
local hostcan = require "support.host"

local BIN = (os.getenv("PWD") or ".") .. "/bin/agent-sandbox"
local function cmd(args) return sh.lua(false) .. " " .. sh.quote(BIN) .. " " .. args end

-- Run `agent-sandbox ARGS` with shell redirections in `tail`: rc, stdout, stderr.
local function run(args, tail)
  local tmp = backends.tmpdir("cli")
  local _, out = sh.run(("%s %s > %s/out 2> %s/err; echo rc=$?"):format(cmd(args), tail or "< /dev/null", tmp, tmp))
  return tonumber(out:match("rc=(%d+)")), sh.read_file(tmp .. "/out"), sh.read_file(tmp .. "/err")
end

local unconfined = os.getenv("SANDBOX_TEST_UNCONFINED") ~= nil

describe("agent-sandbox run", function()
  local dir
  before_each(function() dir = backends.tmpdir("run") end)
  local function in_dir(rest) return "run --dir " .. sh.quote(dir) .. (unconfined and " --no-confine " or " ") .. rest end

  it("passes the exit status through, 128+N for a signal", function()
    for _, case in ipairs {
      { "-- true", 0 }, { "-- false", 1 }, { "-- sh -c 'exit 7'", 7 }, { "-- sh -c 'kill -9 $$'", 137 },
      { "-- sh -c 'kill -TERM $$'", 143 }, { "-- no-such-program-here", 127 }, { "-- ./notexec", 126 },
    } do
      assert(sh.run("printf 'x' > " .. dir .. "/notexec"))
      local rc, _, err = run(in_dir(case[1]))
      assert.equal(case[2], rc, case[1] .. ": " .. tostring(err))
    end
  end)

  it("passes stdin, stdout and stderr through, byte for byte", function()
    local rc, out, err = run(in_dir("-- sh -c 'cat; echo to-stderr >&2'"), "< /usr/bin/env")
    assert.equal(0, rc, err)
    assert.equal(sh.read_file("/usr/bin/env"), out)
    assert.equal("to-stderr\n", err)
  end)

  it("starts in the directory, where files it writes land", function()
    local rc, out = run(in_dir("-- sh -c 'pwd >/dev/null; echo made > here.txt; ls'"))
    assert.equal(0, rc)
    assert.equal("here.txt\n", out)
    assert.equal("made\n", sh.read_file(dir .. "/here.txt"))
  end)

  it("forwards SIGTERM to the command's tree, which may handle it, and leaves nothing behind", function()
    local marker = procs.marker()
    local script = ("trap 'echo got-term; exit 9' TERM; sleep %s & wait"):format(marker)
    local _, out = sh.run(("%s > %s/out 2>&1 & pid=$!; sleep 1; kill -TERM $pid; wait $pid; echo rc=$?"):format(
      cmd(in_dir("-- sh -c " .. sh.quote(script))), dir))
    assert.matches("rc=9", out)
    assert.matches("got%-term", sh.read_file(dir .. "/out"))
    assert.equal(0, #procs.find("sleep " .. marker))
  end)

  it("kills the tree at --timeout", function()
    local marker = procs.marker()
    local rc, _, err = run(in_dir(("--timeout 0.5 --kill-grace 0.2 -- sh -c 'sleep %s & sleep %s; wait'"):format(marker, marker)))
    assert.equal(143, rc)
    assert.matches("ran past %-%-timeout 0.5", err)
    assert.equal(0, #procs.find("sleep " .. marker))
  end)

  it("takes the options as flags and from a Lua or JSON config file, checked as strictly", function()
    local lua_cfg, json_cfg = dir .. "/cfg.lua", dir .. "/cfg.json"
    assert(sh.run(("printf 'env = { FROM_LUA = \"yes\" }\\n' > %s; printf '{\"env\": {\"FROM_JSON\": \"1\"}}' > %s")
      :format(lua_cfg, json_cfg)))
    local rc, out = run(in_dir("--env GREETING=hi -- sh -c 'echo $GREETING'"))
    assert.equal(0, rc)
    assert.equal("hi\n", out)
    rc, out = run(in_dir("--config " .. lua_cfg .. " --env MORE=x -- sh -c 'echo $FROM_LUA$MORE'"))
    assert.equal(0, rc)
    assert.equal("yesx\n", out)
    rc, out = run(in_dir("--config " .. json_cfg .. " -- sh -c 'echo $FROM_JSON'"))
    assert.equal(0, rc)
    assert.equal("1\n", out)
    assert(sh.run(("printf '{\"max_red_bytes\": 1}' > %s/typo.json; printf 'exec_timeot = 3' > %s/typo.lua; "
      .. "printf 'os.exit(3)' > %s/evil.lua"):format(dir, dir, dir)))
    for _, case in ipairs {
      { "--max-read-byte 10 -- true", "unknown flag '%-%-max%-read%-byte' %(did you mean '%-%-max%-read%-bytes'%?%)" },
      { "--memory-limit lots -- true", "%-%-memory%-limit lots: 'lots' is not a size" },
      { "--mode x -- true", "must be one of rw, r, w" },
      { "--allow-shell=yes -- true", "takes no value" },
      { "--env NOEQUALS -- true", "expected NAME=VALUE" },
      { "--user abc -- true", "expected UID or UID:GID" },
      { "--config " .. dir .. "/typo.json -- true", "unknown option 'max_red_bytes' %(did you mean 'max_read_bytes'%?%)" },
      { "--config " .. dir .. "/typo.lua -- true", "unknown option 'exec_timeot' %(did you mean 'exec_timeout'%?%)" },
      { "--config " .. dir .. "/evil.lua -- true", "global 'os'" },
      { "--config /nonexistent.lua -- true", "cannot read" },
      { "--allow-host 'not a host' -- true", "is not a host" },
      { "--denied-hosts x -- true", "unknown flag" },
      { "", "run needs a command" },
    } do
      local rc2, _, err = run(in_dir(case[1]))
      assert.equal(125, rc2, case[1])
      assert.matches(case[2], err, 1)
    end
  end)

  it("spells every option of every backend as a flag, except a function, a file tree, a table and a secret", function()
    local sandbox = require "sandbox"
    local flags = require "sandbox.cli.flags"
    -- a remote engine's key is no flag: a command line is every user's to read (E2B_API_KEY, --config)
    local none = { audit = true, files = true, base_dir = true, metadata = true, api_key = true }
    for _, kind in ipairs { "container", "virtual", "overlay", "remote" } do
      local spelled = {}
      for _, f in pairs(flags.table(kind)) do
        spelled[f.opt] = true
        assert.is_nil(f.help:find("^the option "), kind .. ": --" .. f.key .. " has no help of its own")
      end
      for key in pairs(sandbox.schemas[kind]) do
        if none[key] then assert.is_nil(spelled[key], kind .. ": " .. key)
        else assert.is_true(spelled[key], kind .. ": " .. key) end
      end
    end
    assert.equal("NAME", flags.table("remote").user.meta) -- a name there, UID[:GID] on the host
    assert.equal("UID[:GID]", flags.table("container").user.meta)
  end)

  it("prints its flags with --help, for each subcommand", function()
    for _, sub in ipairs { "run", "mcp" } do
      local rc, out = run(sub .. " --help")
      assert.equal(0, rc)
      for _, f in ipairs { "%-%-max%-read%-bytes SIZE", "%-%-allow%-host HOST", "%-%-deny GLOB", "%-%-config FILE",
        "%-%-read%-root DIR" } do
        assert.matches(f, out)
      end
    end
    local rc, out = run("help")
    assert.equal(0, rc)
    assert.matches("agent%-sandbox mcp", out)
    rc = run("frobnicate")
    assert.equal(2, rc)
  end)

  it("lets the environment's secrets stay out unless asked", function()
    local rc, out = run(in_dir("-- sh -c 'echo ${MY_API_TOKEN:-unset} ${HOME#/}'"), "< /dev/null")
    assert.equal(0, rc)
    assert.matches("^unset ", out)
    local rc2, out2 = run(in_dir("--inherit-env -- sh -c 'echo ${MY_API_TOKEN:-unset} $VISIBLE'"), "< /dev/null")
    assert.equal(0, rc2)
    assert.equal("unset\n", out2)
    local _, out3 = sh.run("MY_API_TOKEN=s3cret VISIBLE=yes " .. cmd(in_dir("--inherit-env -- sh -c 'echo ${MY_API_TOKEN:-unset} $VISIBLE'")))
    assert.matches("unset yes", out3)
  end)
end)

describe("agent-sandbox run, the confinement's attack classes as one-liners", function()
  if unconfined then
    pending("not run here: commands are unconfined in this run (valgrind; make PORTABLE=1)")
    return
  end
  local root, marker, host_pid, host_limits, hostname
  setup(function()
    root = backends.tmpdir("runattack")
    assert(sh.run(("cp %s/test/attack %s/attack && chmod 755 %s %s/attack"):format(sh.build, root, root, root)))
    marker = procs.marker()
    host_pid = sh.lines(("sleep %s >/dev/null 2>&1 & echo $!"):format(marker))[1]
    host_limits = sh.read_file("/proc/" .. host_pid .. "/limits")
    hostname = sh.lines("hostname")[1]
  end)
  teardown(function() sh.run("kill " .. host_pid) end)

  local function attack(args)
    local rc, out, err = run("run --dir " .. sh.quote(root) .. " -- " .. args)
    return rc, (out or "") .. (err or "")
  end

  it("holds no capability and lives in its own namespaces", function()
    local _, caps = attack("./attack caps")
    assert.equal("0000000000000000", caps:gsub("%s+$", ""))
    local _, ns = attack("readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net")
    local i = 0
    for l in ns:gmatch("[^\n]+") do
      i = i + 1
      assert.are_not.equal(sh.lines("readlink /proc/self/ns/" .. ({ "pid", "mnt", "net" })[i])[1], l)
    end
    assert.equal(3, i)
  end)

  it("is refused every host-touching attack, and the host is unchanged", function()
    for _, a in ipairs { "settime", "bpf", "hostname", "x32", "i386", "netns " .. host_pid, "prlimit " .. host_pid,
      "renice " .. host_pid, "cpu " .. host_pid, "affinity " .. host_pid } do
      local _, out = attack("./attack " .. a)
      hostcan.expect_refused(a:match("^%S+"), out, a)
    end
    local _, sys = attack("./attack syscalls")
    for l in sys:gmatch("[^\n]+") do assert.matches("refused", l) end
    assert.equal(host_limits, sh.read_file("/proc/" .. host_pid .. "/limits"))
    assert.equal(hostname, sh.lines("hostname")[1])
    assert.equal(1, #procs.find(marker), "the host process died")
  end)

  it("cannot write outside its directory nor read the host's private files", function()
    local outside = "/tmp/agent-sandbox-run-outside-" .. marker
    local secret = "/root/.agent-sandbox-secret-" .. marker
    assert(sh.run("echo TOPSECRET > " .. secret))
    local _, out = attack(("sh -c 'echo x > %s; cat %s; ls /etc/shadow /sys; echo end'"):format(outside, secret))
    sh.run("rm -f " .. secret)
    assert.is_nil(sh.read_file(outside), "a file appeared outside the sandbox")
    assert.is_nil(out:find("TOPSECRET", 1, true))
    assert.matches("/etc/shadow': No such file", out)
    assert.matches("end", out)
  end)

  it("cannot plant set-user-ID or immutable files, and has no network", function()
    assert(sh.run("printf '#!/bin/sh\\nid -u\\n' > " .. root .. "/plant"))
    for _, a in ipairs { "setuid plant", "setcap plant", "chattr plant" } do
      local _, out = attack("./attack " .. a)
      for l in out:gmatch("[^\n]+") do assert.matches("refused", l, 1, a) end
    end
    assert.same({}, sh.lines("find " .. root .. " -name plant -perm /6000"))
    local rc, out = attack("curl -sS -m 3 http://1.1.1.1/")
    assert.are_not.equal(0, rc, out)
  end)
end)
