-- sandbox.diff (SPEC §11's review): one file's unified diff in git's format,
-- checked against git itself — the same hunks as `git diff --no-index` on
-- cases without ambiguity, the same line counts as `git diff --minimal` on
-- random edits, and every diff applied by `git apply` gives the new text.
local sandbox = require "sandbox"
local sh = require "support.sh"
local backends = require "support.backends"

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

-- git's hunks for old -> new (from the first @@ on), and its numstat.
local function git_diff(dir, old, new, flags)
  write(dir .. "/old", old)
  write(dir .. "/new", new)
  local _, out = sh.run(("cd %s && git diff --no-index --no-color %s old new"):format(dir, flags or ""))
  return out:match("\n(@@.*)$") or ""
end

local function numstat(dir)
  local _, out = sh.run(("cd %s && git diff --no-index --minimal --numstat old new"):format(dir))
  local a, r = out:match("^(%d+)%s+(%d+)")
  return tonumber(a) or 0, tonumber(r) or 0
end

-- Apply a diff of file f with git apply in dir; the file's bytes after.
local function apply(dir, diff)
  write(dir .. "/p.diff", diff)
  local ok, out = sh.run(("cd %s && git apply --unidiff-zero p.diff"):format(dir))
  assert(ok, out .. "\n" .. diff)
  return sh.read_file(dir .. "/f")
end

describe("sandbox.diff", function()
  local dir
  before_each(function() dir = backends.tmpdir("diff") end)

  local lines = function(n, fmt_) local t = {} for i = 1, n do t[i] = (fmt_ or "line %d"):format(i) end return table.concat(t, "\n") .. "\n" end

  it("gives git's hunks where the edit is unambiguous", function()
    local base = lines(30)
    local cases = {
      { "one line changed", base, base:gsub("line 15\n", "LINE 15\n") },
      { "added at the start", base, "first\n" .. base },
      { "removed at the end", base, base:gsub("line 30\n$", "") },
      { "two far apart: two hunks", base, base:gsub("line 3\n", "x3\n"):gsub("line 27\n", "x27\n") },
      { "two near: one hunk", base, base:gsub("line 10\n", "x10\n"):gsub("line 15\n", "x15\n") },
      { "the last newline removed", "a\nb\n", "a\nb" },
      { "the last newline added", "a\nb", "a\nb\n" },
      { "from empty", "", "a\nb\n" },
      { "to empty", "a\nb\n", "" },
      { "a function line above the hunk", "int main(void)\n{\n" .. lines(8, "  x%d;") .. "}\n",
        "int main(void)\n{\n" .. lines(8, "  x%d;"):gsub("x6;", "y6;") .. "}\n" },
      { "a long function line is cut to 80 bytes", ("f" .. ("o"):rep(100)) .. "\n" .. lines(10),
        ("f" .. ("o"):rep(100)) .. "\n" .. lines(10):gsub("line 8\n", "eight\n") },
      { "CRLF lines", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n" },
    }
    for _, c in ipairs(cases) do
      local ours = sandbox.diff(c[2], c[3], { path = "f" })
      assert.equal(git_diff(dir, c[2], c[3]), ours:match("\n(@@.*)$") or "", c[1])
    end
  end)

  it("writes git's headers: modes for new and deleted files, quoted names, binary files named", function()
    assert.equal("", (sandbox.diff("same\n", "same\n")))
    local d = sandbox.diff("a\n", "b\n", { path = "src/x.c" })
    assert.matches("^diff %-%-git a/src/x%.c b/src/x%.c\n%-%-%- a/src/x%.c\n%+%+%+ b/src/x%.c\n@@ %-1 %+1 @@\n%-a\n%+b\n$", d)
    assert.matches("^diff %-%-git a/n b/n\nnew file mode 100644\n%-%-%- /dev/null\n%+%+%+ b/n\n@@ %-0,0 %+1 @@\n", (sandbox.diff(nil, "x\n", { path = "n" })))
    assert.matches("^diff %-%-git a/g b/g\ndeleted file mode 100644\n%-%-%- a/g\n%+%+%+ /dev/null\n", (sandbox.diff("x\n", nil, { path = "g" })))
    local bin, st = sandbox.diff("a\0b", "a\0c", { path = "img.png" })
    assert.equal("diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n", bin)
    assert.is_true(st.binary)
    assert.equal("", (sandbox.diff("a\0b", "a\0b")))
    -- names as git quotes them
    local name = "tab\there é"
    write(dir .. "/" .. name, "x\n")
    local _, out = sh.run(("cd %s && git diff --no-index --no-color -- /dev/null %s"):format(dir, sh.quote(name)))
    local theirs = out:match("%+%+%+ (.-)\n")
    local ours = sandbox.diff(nil, "x\n", { path = name }):match("%+%+%+ (.-)\n")
    assert.equal(theirs, ours)
  end)

  it("counts and applies like git on random edits (minimal edit scripts)", function()
    math.randomseed(11)
    local words = { "a", "b", "c", "d", "", "end", "{", "}" }
    for round = 1, 150 do
      local old = {}
      for i = 1, math.random(0, 40) do old[i] = words[math.random(#words)] end
      local new = {}
      for _, l in ipairs(old) do
        local r = math.random()
        if r < 0.15 then -- luacheck: ignore 542 (removed: nothing added)
        elseif r < 0.3 then new[#new + 1] = words[math.random(#words)]
        elseif r < 0.4 then new[#new + 1] = l new[#new + 1] = words[math.random(#words)]
        else new[#new + 1] = l end
      end
      local a = table.concat(old, "\n") .. (#old > 0 and math.random() < 0.8 and "\n" or "")
      local b = table.concat(new, "\n") .. (#new > 0 and math.random() < 0.8 and "\n" or "")
      local ctx = math.random(0, 4)
      local d, st = sandbox.diff(a, b, { path = "f", context = ctx })
      write(dir .. "/old", a)
      write(dir .. "/new", b)
      local ga, gr = numstat(dir)
      assert.same({ ga, gr }, { st.added, st.removed }, "round " .. round)
      if d ~= "" then
        -- (git apply misreads zero-context patches that end without a
        -- newline, git's own included: apply with at least one line)
        if ctx == 0 then d = sandbox.diff(a, b, { path = "f", context = 1 }) end
        write(dir .. "/f", a)
        assert.equal(b, apply(dir, d), "round " .. round)
      else
        assert.equal(a, b)
      end
    end
  end)

  it("stays fast and correct on long and on wholly different texts", function()
    local big = {}
    for i = 1, 20000 do big[i] = "row " .. i end
    local edited = {}
    for i, l in ipairs(big) do edited[i] = i % 20 == 0 and (l .. " changed") or l end
    local a, b = table.concat(big, "\n") .. "\n", table.concat(edited, "\n") .. "\n"
    -- the bound is relative to a linear pass over the same texts measured in
    -- this run (CPU time, so a busy machine, ASan or valgrind slow both
    -- alike): here the diff takes about one such pass; a quadratic one
    -- (20000 x 20000 lines) takes thousands
    local t0 = os.clock()
    for _ = 1, 3 do
      local la, lb, n = {}, {}, 0
      for l in a:gmatch("[^\n]*\n") do la[#la + 1] = l end
      for l in b:gmatch("[^\n]*\n") do lb[#lb + 1] = l end
      for i = 1, #la do if la[i] ~= lb[i] then n = n + 1 end end
    end
    local linear = os.clock() - t0
    t0 = os.clock()
    local d, st = sandbox.diff(a, b, { path = "f" })
    local took = os.clock() - t0
    assert.is_true(took < math.max(0.5, 40 * linear), ("diff %.3f s, a linear pass %.3f s"):format(took, linear))
    assert.equal(1000, st.added)
    assert.equal(1000, st.removed)
    write(dir .. "/f", a)
    assert.equal(b, apply(dir, d))
    -- nothing in common: bounded cost, still a diff that applies
    local x, y = {}, {}
    for i = 1, 3000 do x[i], y[i] = "x" .. i, "y" .. (i * 7 % 3001) end
    a, b = table.concat(x, "\n") .. "\n", table.concat(y, "\n") .. "\n"
    d = sandbox.diff(a, b, { path = "f" })
    write(dir .. "/f", a)
    assert.equal(b, apply(dir, d))
  end)

  it("checks its arguments", function()
    assert.has_error(function() sandbox.diff(1, "x") end, "diff: old must be a string or nil")
    assert.has_error(function() sandbox.diff(nil, nil) end, "diff: old and new cannot both be nil")
    assert.has_error(function() sandbox.diff("a", "b", { contxt = 1 }) end,
      "diff: unknown option 'contxt' (did you mean 'context'?)")
    assert.has_error(function() sandbox.diff("a", "b", { context = -1 }) end)
  end)
end)
