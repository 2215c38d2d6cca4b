-- Rename-exchange races (reference/paths.md §4): an attacker process swaps
-- directories with symlinks pointing out, and moves subtrees out of the root,
-- while the sandbox reads, writes, lists and removes. Zero escapes allowed,
-- on both resolvers. SANDBOX_RACE_ROUNDS sets the rounds (make race: many).
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"

local ROUNDS = tonumber(os.getenv("SANDBOX_RACE_ROUNDS")) or 1500
local SECRET = "OUTSIDE-SECRET"

local function start_swapper(a, b, out)
  local lines = sh.lines(("%s/test/swapper %s %s 600 %s >%s 2>&1 & echo $!")
    :format(sh.build, sh.quote(a), sh.quote(b), sh.pid(), sh.quote(out)))
  return lines[1]
end

local function stop_swapper(pid, out)
  sh.run(("kill -TERM %s; while kill -0 %s 2>/dev/null; do sleep 0.01; done"):format(pid, pid))
  local f = assert(io.open(out))
  local n = tonumber(f:read("*a"):match("%d+")) or 0
  f:close()
  return n
end

local function setup(script)
  local w = backends.tmpdir("race")
  local ok, out = sh.run(("set -e; cd %s; %s"):format(sh.quote(w), script))
  assert(ok, out)
  return w
end

local function report(name, stats)
  io.write(("\n  race %-42s %6d rounds %9d swaps %6d ok %6d refused %d escapes"):format(
    name, stats.rounds, stats.swaps, stats.ok, stats.err, stats.escapes))
end

local scenarios = {
  {
    name = "dir <-> absolute symlink out",
    setup = [[
      mkdir -p outside/etc R/d/etc
      printf OUTSIDE-SECRET > outside/etc/passwd; printf o > outside/etc/outside.txt
      printf keep > outside/victim
      printf inside > R/d/etc/passwd; printf i > R/d/etc/inside.txt
      ln -s "$PWD/outside" R/s
    ]],
    swap = { "R/d", "R/s" },
    round = function(sb, i, st)
      local v = sb:read_file("d/etc/passwd")
      if v == SECRET then st.escapes = st.escapes + 1 end
      if v then st.ok = st.ok + 1 else st.err = st.err + 1 end
      local list = sb:readdir("d/etc")
      for _, e in ipairs(list or {}) do
        if e.name == "outside.txt" then st.escapes = st.escapes + 1 end
      end
      sb:write_file("d/new" .. (i % 50), "x")
      sb:write_file("d/victim", "x")
      sb:remove("d/victim")
      sb:stat("d/etc/passwd")
    end,
    check = function(w)
      local ok, out = sh.run(("cd %s/outside && ls && cat victim"):format(sh.quote(w)))
      assert(ok, out)
      assert.equal("etc\nvictim\nkeep", out, "files appeared or vanished outside")
    end,
  },
  {
    name = "subtree moved out during '..' walks",
    setup = [[
      mkdir -p R/a/b/c park/b/c
      printf public > R/secret; printf OUTSIDE-SECRET > secret
    ]],
    swap = { "R/a/b", "park/b" },
    round = function(sb, i, st)
      for _, p in ipairs { "a/b/c/../../../secret", "a/b/c/../c/../c/../../../secret" } do
        local v = sb:read_file(p)
        if v == SECRET then st.escapes = st.escapes + 1 end
        if v then st.ok = st.ok + 1 else st.err = st.err + 1 end
      end
      sb:write_file("a/b/c/../../../w" .. (i % 20), "x")
      sb:mkdir("a/b/c/../../../m" .. (i % 20))
    end,
    check = function(w)
      local ok, out = sh.run(("cd %s && ls && cat secret"):format(sh.quote(w)))
      assert(ok, out)
      assert.equal("R\npark\nsecret\n" .. SECRET, out, "files appeared outside")
    end,
  },
  {
    name = "final link in <-> final link out, followed by reads",
    setup = [[
      mkdir -p outside R
      printf OUTSIDE-SECRET > outside/secret; printf keep > outside/victim
      printf agents > R/AGENTS.md
      ln -s AGENTS.md R/CLAUDE.md
      ln -s ../outside/secret R/evil
    ]],
    swap = { "R/CLAUDE.md", "R/evil" },
    round = function(sb, i, st)
      local v, _, code = sb:read_file("CLAUDE.md")
      if v == SECRET then st.escapes = st.escapes + 1 end
      if v == "agents" then st.ok = st.ok + 1 elseif code == "EESCAPE" then st.err = st.err + 1 end
      local s = sb:stat("CLAUDE.md", { follow = true })
      if s and s.size == #SECRET then st.escapes = st.escapes + 1 end
      local real = sb:realpath("CLAUDE.md")
      if real and real ~= "AGENTS.md" then st.escapes = st.escapes + 1 end
      sb:write_file("CLAUDE.md", "x" .. i) -- never written through
    end,
    check = function(w)
      local ok, out = sh.run(("cd %s && ls outside && cat outside/secret outside/victim R/AGENTS.md"):format(sh.quote(w)))
      assert(ok, out)
      assert.equal("secret\nvictim\n" .. SECRET .. "keepagents", out, "a write went through a link")
    end,
  },
  {
    name = "directory link in <-> absolute link out, listed",
    setup = [[
      mkdir -p outside R/src/include
      printf OUTSIDE-SECRET > outside/secret.h; printf i > R/src/include/api.h
      ln -s src/include R/include
      ln -s "$PWD/outside" R/evdir
    ]],
    swap = { "R/include", "R/evdir" },
    round = function(sb, i, st)
      local list = sb:readdir("include")
      for _, e in ipairs(list or {}) do
        if e.name == "secret.h" then st.escapes = st.escapes + 1 end
      end
      if list then st.ok = st.ok + 1 else st.err = st.err + 1 end
      local v = sb:read_file("include/secret.h")
      if v then st.escapes = st.escapes + 1 end
      for _, m in ipairs(sb:grep("OUTSIDE", { path = "include" }) or {}) do
        if m then st.escapes = st.escapes + 1 end
      end
      sb:write_file("include/new" .. (i % 20) .. ".h", "x")
    end,
    check = function(w)
      local ok, out = sh.run(("cd %s/outside && ls"):format(sh.quote(w)))
      assert(ok, out)
      assert.equal("secret.h\n", out, "files appeared outside")
    end,
  },
  {
    name = "recursive remove, a subdir swapped for a link out",
    setup = [[
      mkdir -p outside R/t/sub
      printf keep > outside/keep; printf keep > outside/also
      ln -s "$PWD/outside" R/lnk
    ]],
    swap = { "R/t/sub", "R/lnk" },
    round = function(sb, _, st)
      sb:mkdir("t/sub")
      sb:write_file("t/sub/keep", "inside")
      sb:write_file("t/f", "x")
      local ok = sb:remove("t", { recursive = true })
      if ok then st.ok = st.ok + 1 else st.err = st.err + 1 end
    end,
    check = function(w)
      local ok, out = sh.run(("cd %s/outside && ls && cat keep also"):format(sh.quote(w)))
      assert(ok, out)
      assert.equal("also\nkeep\nkeepkeep", out, "files outside were removed")
    end,
  },
}

for _, be in ipairs(backends.containers()) do
  describe("rename-exchange races, " .. be.name .. ":", function()
    for _, sc in ipairs(scenarios) do
      it(sc.name .. " - zero escapes", function()
        local w = setup(sc.setup)
        local sb = assert(sandbox.container { base_dir = w .. "/R", resolver = be.resolver })
        local out = backends.tmpdir("swaps") .. "/count"
        local pid = start_swapper(w .. "/" .. sc.swap[1], w .. "/" .. sc.swap[2], out)
        local st = { rounds = 0, ok = 0, err = 0, escapes = 0 }
        local ok, err = pcall(function()
          -- past ROUNDS while no operation has succeeded yet: every read of
          -- 100 rounds once met the link (CI), and the race was not exercised
          local i = 0
          while i < ROUNDS or (st.ok == 0 and i < 20 * ROUNDS) do
            i = i + 1
            sc.round(sb, i, st)
            st.rounds = i
          end
        end)
        st.swaps = stop_swapper(pid, out)
        sb:dispose()
        report(sc.name .. " (" .. be.resolver .. ")", st)
        assert(ok, err)
        assert.equal(0, st.escapes)
        assert.is_true(st.swaps > 0, "the attacker never ran")
        assert.is_true(st.ok > 0, "no operation succeeded: the race was not exercised")
        sc.check(w)
      end)
    end
  end)
end

-- openat2 answers EAGAIN to a lookup through ".." while any rename runs
-- anywhere on the system; a storm elsewhere must not fail agent operations.
for _, be in ipairs(backends.containers()) do
  it("a rename storm elsewhere on the system never fails a lookup through '..' (" .. be.resolver .. ")", function()
    local w = setup("mkdir -p R/a/b x y; printf hi > R/f")
    local sb = assert(sandbox.container { base_dir = w .. "/R", resolver = be.resolver })
    local out = backends.tmpdir("swaps") .. "/count"
    local pid = start_swapper(w .. "/x", w .. "/y", out)
    local path, codes, n = ("a/b/../../"):rep(60) .. "f", {}, 0
    for _ = 1, 5000 do
      local v, _, code = sb:read_file(path)
      if v ~= "hi" then codes[#codes + 1] = code end
      n = n + 1
    end
    local swaps = stop_swapper(pid, out)
    sb:dispose()
    assert.is_true(swaps > 1000, "the storm did not run")
    assert.same({}, codes)
  end)
end
