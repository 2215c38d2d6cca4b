-- The remote engine's client (csrc/remote/client.c, SPEC §15) against the
-- E2B test peer, through a test host that makes one call per run
-- (spec/c/remote_probe.c): unary Connect calls and their errors in the
-- sandbox's vocabulary, server streams message by message, and what E2B's
-- users trip over: a stream that goes quiet (a stalled link, a stopped
-- engine) fails with EIO within its idle limit instead of hanging (E2B
-- #1128), keepalives keep a quiet command's stream alive, a dropped
-- connection is EIO, and no key or token ever appears in a message.
local sh = require "support.sh"
local peer_lib = require "support.e2b_peer"

local PROBE = sh.build .. "/test/remote_probe"
local KEY = "client-key"
local clock = require("sandbox.core").clock

describe("the remote client", function()
  local peer, sbx

  local function auth(token)
    return sh.quote("E2b-Sandbox-Id: " .. sbx.sandboxID) .. " " .. sh.quote("X-Access-Token: " .. (token or sbx.envdAccessToken))
  end
  local function probe(mode, url, what, body, idle, extra)
    local ok, out = sh.run(("%s %s %s %s %s %s %s"):format(PROBE, mode, sh.quote(url), what, sh.quote(body),
      tostring(idle or 5), extra or ""))
    assert(ok, out)
    return out
  end
  local function start(script, idle, extra)
    return probe("stream", peer.envd .. "/process.Process/Start", "Start",
      ('{"process":{"cmd":"/bin/sh","args":["-c",%q]},"stdin":false}'):format(script), idle, auth() .. " " .. (extra or ""))
  end

  setup(function()
    peer = peer_lib.start(KEY)
    sbx = peer_lib.create(peer, KEY)
  end)
  teardown(function() if peer then peer.stop() end end)

  it("makes unary calls, and gives Connect's errors in the sandbox's codes", function()
    local stat = peer.envd .. "/filesystem.Filesystem/Stat"
    assert.matches('^ok {"entry":{"name":"user","type":"FILE_TYPE_DIRECTORY"', probe("unary", stat, "Stat", '{"path":"/home/user"}', 5, auth()))
    assert.matches("^err ENOENT: remote: Stat: ", probe("unary", stat, "Stat", '{"path":"/home/user/none"}', 5, auth()))
    local refused = probe("unary", stat, "Stat", '{"path":"/home/user"}', 5, auth("wrong-token"))
    assert.matches("^err EACCES: remote: Stat: invalid access token", refused)
    assert.is_nil(refused:find("wrong-token", 1, true))
  end)

  it("reads a stream message by message to its end", function()
    local out = start("echo hi; echo err >&2; exit 3")
    assert.matches('^msg {"event":{"start":{"pid":%d+}}}\n', out)
    assert.matches('\nmsg {"event":{"data":{"stdout":"aGkK"}}}\n', out, nil, true)
    assert.matches('\nmsg {"event":{"data":{"stderr":"ZXJyCg=="}}}\n', out, nil, true)
    -- envd's end: the error is Wait's *exec.ExitError, the status's words (process/handler/handler.go, Wait)
    assert.matches('\nmsg {"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3","error":"exit status 3"}}}\nok\n?$', out)
  end)

  it("fails a stream that goes quiet with EIO within its idle limit, never hangs", function()
    local t = clock()
    local out = start("sleep 8; echo late", 1)
    local took = clock() - t
    assert.matches("\nerr EIO: remote: Start: no data for 1 s %(the link or the sandbox is gone%)\n?$", out)
    assert.is_nil(out:find("late", 1, true))
    assert.is_true(took < 6, "took " .. took .. " s") -- the command would take 8
  end)

  it("keeps a quiet command's stream alive with envd's keepalives", function()
    local out = start("sleep 3; echo done", 1.5, sh.quote("Keepalive-Ping-Interval: 1"))
    assert.matches('"keepalive":{}', out, nil, true)
    assert.matches('"stdout":"ZG9uZQo="', out, nil, true) -- "done\n"
    assert.matches("\nok\n?$", out)
  end)

  it("fails with EIO when the engine stops answering mid-stream (a stalled link)", function()
    local p = sh.popen(("%s stream %s Start %s 2 %s %s"):format(PROBE, sh.quote(peer.envd .. "/process.Process/Start"),
      sh.quote('{"process":{"cmd":"/bin/sh","args":["-c","sleep 1; echo one; sleep 1; echo two"]},"stdin":false}'),
      auth(), sh.quote("Keepalive-Ping-Interval: 1")))
    assert.matches('"start"', p:read("*l"))
    sh.run("kill -STOP " .. peer.pid)
    local t = clock()
    local rest = p:read("*a")
    p:close()
    sh.run("kill -CONT " .. peer.pid)
    assert.matches("err EIO: remote: Start: no data for 2 s", rest, nil, true)
    assert.is_true(clock() - t < 6)
  end)

  it("fails with EIO when the connection drops before the stream's end", function()
    local other = peer_lib.start(KEY)
    local osbx = peer_lib.create(other, KEY)
    local p = sh.popen(("%s stream %s Start %s 5 %s %s"):format(PROBE, sh.quote(other.envd .. "/process.Process/Start"),
      sh.quote('{"process":{"cmd":"/bin/sh","args":["-c","sleep 5"]},"stdin":false}'),
      sh.quote("E2b-Sandbox-Id: " .. osbx.sandboxID), sh.quote("X-Access-Token: " .. osbx.envdAccessToken)))
    assert.matches('"start"', p:read("*l"))
    sh.run("kill -KILL " .. other.pid)
    local rest = p:read("*a")
    p:close()
    other.stop()
    assert.matches("^err EIO: remote: Start: ", rest)
    assert.is_nil(rest:find(osbx.envdAccessToken, 1, true))
  end)

  it("fails with EIO, naming the call, when nothing listens", function()
    local out = probe("unary", "http://127.0.0.1:9/filesystem.Filesystem/Stat", "Stat", '{"path":"/"}', 5)
    assert.matches("^err EIO: remote: Stat: ", out)
  end)

  it("speaks the REST control plane: create, refuse a wrong key, kill", function()
    local function call(method, url, body, key)
      local ok, out = sh.run(("%s call %s %s sandboxes %s %s %s"):format(PROBE, method, sh.quote(url), sh.quote(body or ""),
        sh.quote("X-API-Key: " .. key), sh.quote("Content-Type: application/json")))
      assert(ok, out)
      return out
    end
    local made = call("POST", peer.api .. "/v2/sandboxes", '{"templateID":"base","timeout":30}', KEY)
    local id = made:match('^status 201 {.*"sandboxID":"([^"]+)"')
    assert.truthy(id, made)
    assert.matches("^status 401 ", call("POST", peer.api .. "/v2/sandboxes", "{}", "wrong"))
    assert.matches("^status 204", call("DELETE", peer.api .. "/sandboxes/" .. id, nil, KEY))
    assert.matches("^status 404 ", call("DELETE", peer.api .. "/sandboxes/" .. id, nil, KEY))
  end)

  describe("the control plane (csrc/remote/control.c)", function()
    local function control(key, envd, ...)
      local args = {}
      for i, a in ipairs { ... } do args[i] = sh.quote(a) end
      local ok, out = sh.run(("%s control %s %s %s %s"):format(PROBE, sh.quote(peer.api), sh.quote(key), sh.quote(envd or ""),
        table.concat(args, " ")))
      assert(ok, out)
      return out
    end

    it("creates, reattaches, keeps alive, lists and kills a sandbox", function()
      local made = control(KEY, peer.envd, "create", "base", "30", "suite=client")
      local id = made:match("^box (%S+) base token " .. peer.envd:gsub("%p", "%%%0") .. "\nok\n?$")
      assert.truthy(id, made)
      -- without an envd URL it is derived from the id and the engine's domain
      assert.matches("^box " .. id .. " base token https://49983%-" .. id .. "%.e2b%.app\nok", control(KEY, nil, "connect", id, "60"))
      assert.matches("^ok", control(KEY, nil, "timeout", id, "60"))
      assert.matches("\nbox " .. id .. " ", "\n" .. control(KEY, nil, "list"))
      assert.matches("^ok", control(KEY, nil, "kill", id))
      assert.matches('^err ENOENT: remote: kill sandbox: sandbox "' .. id .. '" not found', control(KEY, nil, "kill", id))
      assert.matches("^err ENOENT: ", control(KEY, nil, "connect", id, "60"))
    end)

    it("refuses a wrong key as EACCES, and never repeats the key in a message", function()
      assert.matches("^err EACCES: remote: list sandboxes: Invalid API key", control("wrong-key-1234", nil, "list"))
      -- the peer's message repeats the id it was given: here, the key
      local out = control(KEY, nil, "kill", KEY)
      assert.matches('^err ENOENT: remote: kill sandbox: sandbox "%*%*%*" not found', out)
      assert.is_nil(out:find(KEY, 1, true))
    end)

    it("refuses a sandbox id that is not safe in a URL before any request", function()
      for _, id in ipairs { "../x", "a/b", "", "a?b", ("x"):rep(200) } do
        assert.matches("^err EINVAL: sandbox_id must be letters, digits", control(KEY, nil, "kill", id))
      end
    end)
  end)

  describe("envd's file operations (csrc/remote/envd.c)", function()
    local function envd(...)
      local args = {}
      for i, a in ipairs { ... } do args[i] = sh.quote(a) end
      local ok, out = sh.run(("%s envd %s %s %s %s"):format(PROBE, sh.quote(peer.envd), sh.quote(sbx.envdAccessToken),
        sh.quote(sbx.sandboxID), table.concat(args, " ")))
      assert(ok, out)
      return out
    end
    local H = "/home/user/fsops"

    it("writes (making parents), reads, and caps what it reads", function()
      assert.equal("ok\n", envd("write", H .. "/a/b.txt", "hello"))
      assert.equal("data hello\nok\n", envd("read", H .. "/a/b.txt", "100"))
      assert.matches("^err EFBIG: remote: read file: the reply is over 3 bytes", envd("read", H .. "/a/b.txt", "3"))
      assert.equal("ok\n", envd("write", H .. "/empty", ""))
      assert.equal("data \nok\n", envd("read", H .. "/empty", "10"))
      -- a name that needs escaping in the URL
      assert.equal("ok\n", envd("write", H .. "/sp ace&x=1?#", "odd"))
      assert.equal("data odd\nok\n", envd("read", H .. "/sp ace&x=1?#", "10"))
    end)

    it("answers ENOENT, EISDIR and EEXIST as the local backends do", function()
      assert.matches("^err ENOENT: remote: read file: ", envd("read", H .. "/none", "10"))
      assert.matches("^err EISDIR: remote: read file: ", envd("read", H .. "/a", "10"))
      assert.matches("^err EEXIST: remote: MakeDir: ", envd("mkdir", H .. "/a"))
      assert.matches("^err ENOENT: remote: Stat: ", envd("stat", H .. "/none"))
    end)

    it("describes entries: type, name, path, size, mode, time", function()
      local out = envd("stat", H .. "/a/b.txt")
      local t = tonumber(out:match("^entry f b%.txt " .. H .. "/a/b%.txt 5 644 (%d+)\nok"))
      assert.truthy(t, out)
      assert.is_true(math.abs(t - os.time()) < 600, "modifiedTime parsed: " .. out)
    end)

    it("lists to a depth, makes directories, moves and removes", function()
      assert.equal("ok\n", envd("mkdir", H .. "/c/d"))
      local two = envd("list", H, "2")
      assert.matches("entry d a " .. H .. "/a ", two, nil, true)
      assert.matches("entry f b.txt " .. H .. "/a/b.txt 5 ", two, nil, true)
      assert.matches("entry d d " .. H .. "/c/d ", two, nil, true)
      assert.is_nil(envd("list", H, "1"):find("b.txt", 1, true))
      assert.equal("ok\n", envd("move", H .. "/a/b.txt", H .. "/c/x.txt"))
      assert.equal("ok\n", envd("remove", H .. "/a"))
      local after = envd("list", H, "3")
      assert.matches("entry f x.txt " .. H .. "/c/x.txt 5 ", after, nil, true)
      assert.is_nil(after:find(" " .. H .. "/a ", 1, true))
    end)

    it("refuses a wrong token as EACCES without repeating it", function()
      local ok, out = sh.run(("%s envd %s %s %s stat /home/user"):format(PROBE, sh.quote(peer.envd),
        "not-the-token-123", sh.quote(sbx.sandboxID)))
      assert(ok, out)
      assert.matches("^err EACCES: ", out)
      assert.is_nil(out:find("not-the-token-123", 1, true))
    end)
  end)

  describe("envd's Process service (csrc/remote/process.c)", function()
    local function cmd(op, ...)
      local args = {}
      for i, a in ipairs { ... } do args[i] = sh.quote(a) end
      return ("env REMOTE_PROBE_IDLE=2 %s proc %s %s %s %s %s"):format(PROBE, sh.quote(peer.envd), sh.quote(sbx.envdAccessToken),
        sh.quote(sbx.sandboxID), op, table.concat(args, " "))
    end
    local function run(op, ...)
      local ok, out = sh.run(cmd(op, ...))
      assert(ok, out)
      return out
    end
    -- a start in the background: the probe's own pid, then the process's
    -- once the start event is in
    local function background(...)
      local p = sh.popen("echo $$; exec " .. cmd("start", ...))
      local probe_pid = assert(p:read("*l"):match("^(%d+)$"))
      local pid = assert(p:read("*l"):match("^start (%d+)$"))
      return p, pid, probe_pid
    end

    it("runs a command: output, exit code, arguments, and no stdin unless asked", function()
      local out = run("start", "0", "0", "/bin/sh", "-c", 'echo "$0 $1"; echo e >&2; read x || echo no-stdin; exit 4', "a b", "c")
      assert.matches("^start %d+\n", out)
      -- (output arrives in chunks as the process writes it: look for the text)
      assert.matches("\nstdout a b c\n", out, nil, true)
      assert.matches("\nstderr e\n", out, nil, true)
      assert.matches("no-stdin\n", out, nil, true)
      assert.matches("\nend 4 exited exit status 4 error=exit status 4\nok\n?$", out)
    end)

    it("ends a foreground command at its deadline, which the engine enforces", function()
      local t = clock()
      local out = run("start", "1", "0", "/bin/sh", "-c", "sleep 4; echo late")
      assert.matches("\nend %-1 not%-exited deadline exceeded timed%-out\nok\n?$", out)
      assert.is_nil(out:find("late", 1, true))
      assert.is_true(clock() - t < 3.5)
    end)

    it("starts background work without a deadline: it outlives its stream, and attach resumes it (E2B #1074)", function()
      local p, pid, probe_pid = background("0", "0", "/bin/sh", "-c", "for i in 1 2 3; do echo tick $i; sleep 0.7; done")
      assert.matches("^stdout tick 1", p:read("*l"))
      sh.run("kill -INT " .. probe_pid) -- the stream is gone; the process is not (INT: no shell notice)
      p:close()
      local out = run("attach", pid)
      assert.matches("^start " .. pid .. "\n", out)
      assert.matches("stdout tick 3", out, nil, true)
      assert.matches("\nend 0 exited exit status 0\nok\n?$", out)
    end)

    it("sends stdin and closes it", function()
      local p, pid = background("0", "1", "cat")
      assert.equal("ok\n", run("input", pid, "hello"))
      assert.equal("ok\n", run("close", pid))
      local rest = p:read("*a")
      p:close()
      assert.matches("^stdout hello\nend 0 exited exit status 0\nok\n?$", rest)
    end)

    it("signals a process: SIGKILL ends it as not exited", function()
      local p, pid = background("0", "0", "sleep", "30")
      assert.equal("ok\n", run("signal", pid, "9"))
      local rest = p:read("*a")
      p:close()
      assert.matches("^end %-1 not%-exited signal: killed error=signal: killed\nok\n?$", rest)
      assert.matches("^err EINVAL: envd sends only SIGTERM and SIGKILL", run("signal", pid, "2"))
    end)

    it("resumes a process with attach after a stalled link failed its stream", function()
      local p, pid = background("0", "0", "/bin/sh", "-c", "sleep 1; echo a; sleep 2; echo b")
      sh.run("kill -STOP " .. peer.pid)
      local rest = p:read("*a") -- REMOTE_PROBE_IDLE=2 (see cmd)
      p:close()
      sh.run("kill -CONT " .. peer.pid)
      assert.matches("err EIO: remote: Start: no data for 2 s", rest, nil, true)
      local out = run("attach", pid)
      assert.matches("^start " .. pid .. "\n", out)
      assert.matches("\nend 0 exited exit status 0\nok\n?$", out)
    end)

    it("ends the stream of a command whose sandbox is killed, never hangs", function()
      local doomed = peer_lib.create(peer, KEY)
      local p = sh.popen(("%s proc %s %s %s start 0 0 sleep 30"):format(PROBE, sh.quote(peer.envd),
        sh.quote(doomed.envdAccessToken), sh.quote(doomed.sandboxID)))
      assert.matches("^start %d+$", p:read("*l"))
      local t = clock()
      assert.equal(204, (peer_lib.http("DELETE", peer.api .. "/sandboxes/" .. doomed.sandboxID, { ["X-API-Key"] = KEY })))
      local rest = p:read("*a")
      p:close()
      assert.is_true(rest:match("^end %-1 not%-exited signal: killed error=signal: killed\nok\n?$") ~= nil
        or rest:match("^err EIO: ") ~= nil, rest)
      assert.is_true(clock() - t < 6, "took " .. (clock() - t))
    end)

    it("answers ENOENT for a process that is not there", function()
      assert.matches("^err ENOENT: remote: SendSignal: process not found", run("signal", "999999", "9"))
      assert.matches("^err ENOENT: remote: Connect: process not found", run("attach", "999999"))
    end)
  end)

  -- The peer in its own network namespace behind a veth link: cutting the
  -- link drops packets without a reset, as a dead network does.
  describe("over a link that is cut", function()
    local ns, far, fsbx
    setup(function()
      ns = peer_lib.netns()
      far = peer_lib.start(KEY, { netns = ns.name, host = ns.peer_ip })
      fsbx = peer_lib.create(far, KEY)
    end)
    teardown(function()
      if far then far.stop() end
      if ns then ns.remove() end
    end)
    local function proc(op, ...)
      local args = {}
      for i, a in ipairs { ... } do args[i] = sh.quote(a) end
      return ("env REMOTE_PROBE_IDLE=2 %s proc %s %s %s %s %s"):format(PROBE, sh.quote(far.envd),
        sh.quote(fsbx.envdAccessToken), sh.quote(fsbx.sandboxID), op, table.concat(args, " "))
    end

    it("fails a stream with EIO within its idle limit, and attach resumes once the link is back", function()
      local p = sh.popen(proc("start", "0", "0", "/bin/sh", "-c", "sleep 1; echo a; sleep 2; echo b; sleep 1"))
      local pid = assert(p:read("*l"):match("^start (%d+)$"))
      ns.cut()
      local t = clock()
      local rest = p:read("*a")
      p:close()
      local took = clock() - t
      -- the engine went on meanwhile: mend the link, follow the process again
      ns.mend()
      assert.matches("err EIO: remote: Start: no data for 2 s", rest, nil, true)
      assert.is_true(took < 6, "took " .. took)
      local ok, out = sh.run(proc("attach", pid))
      assert(ok, out)
      assert.matches("^start " .. pid .. "\n", out)
      assert.matches("\nend 0 exited exit status 0\nok\n?$", out)
    end)

    it("fails a call with EIO within its connect limit while the link is down, never hangs", function()
      ns.cut()
      local t = clock()
      local ok, out = sh.run(("%s unary %s Stat %s 2 %s %s"):format(PROBE, sh.quote(far.envd .. "/filesystem.Filesystem/Stat"),
        sh.quote('{"path":"/home/user"}'), sh.quote("E2b-Sandbox-Id: " .. fsbx.sandboxID),
        sh.quote("X-Access-Token: " .. fsbx.envdAccessToken)))
      local took = clock() - t
      ns.mend()
      assert(ok, out)
      assert.matches("^err EIO: remote: Stat: ", out)
      assert.is_true(took < 12, "took " .. took) -- connect 5 s, call 10 s
    end)
  end)
end)
