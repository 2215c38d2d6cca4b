-- Search as agents expect it (SPEC §12), checked against the real peers:
-- git decides what ignore files leave out (ls-files and check-ignore on
-- generated trees), ripgrep counts the matches on a copy of a real source
-- tree, and the answer never depends on how many threads searched.
local sandbox = require "sandbox"
local backends = require "support.backends"
local sh = require "support.sh"

local function file_set(list)
  local t = {}
  for _, p in ipairs(list) do t[p] = true end
  return t
end

local function sorted(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- ---- ignore files against git ---------------------------------------------

local NAMES = { "a", "b", "build", "tmp", "sub", "doc", "x1", "keep.log", "foo.log", "a.c", "b.c",
  "top.txt", "z.o", "readme.md", "sp ace" }
local RULES = { "*.log", "build/", "/top.txt", "!keep.log", "a/**/b.c", "**/tmp", "doc/*.md", "*.o",
  "x?", "[ab].c", "sub/", "!sub/", "sub/*", "!a.c", "/a/", "b", "# comment", "", "tmp/**", "*.md",
  "doc/", "!doc/readme.md", "sp ace", "**/sub/a", "a/*/", "*.c  ", "\\#x", "/*/b", "!/build/" }

local function rand_tree(seed)
  math.randomseed(seed)
  local files, dirs = {}, { "" }
  for _ = 1, 40 do
    local depth = math.random(1, 3)
    local parts = {}
    for d = 1, depth do parts[d] = NAMES[math.random(#NAMES)] end
    files[table.concat(parts, "/")] = "line\n"
  end
  -- a path cannot be both a file and a directory: keep the directories
  -- (in sorted order: pairs' order differs between LuaJIT processes, and
  -- the draws below would make another tree from the same seed)
  local paths = {}
  for p in pairs(files) do paths[#paths + 1] = p end
  table.sort(paths)
  for _, p in ipairs(paths) do
    local prefix = ""
    for part in p:gmatch("[^/]+") do
      prefix = prefix == "" and part or prefix .. "/" .. part
      if prefix ~= p and files[prefix] then files[prefix] = nil end
      if prefix ~= p then dirs[#dirs + 1] = prefix end
    end
  end
  for _, d in ipairs(dirs) do
    if math.random() < 0.4 then
      local lines = {}
      for i = 1, math.random(1, 4) do lines[i] = RULES[math.random(#RULES)] end
      local at = d == "" and ".gitignore" or d .. "/.gitignore"
      if not files[d] then files[at] = table.concat(lines, "\n") .. "\n" end
    end
  end
  return files
end

local function git(dir, args, input)
  -- check-ignore exits 1 when nothing is ignored: only its output counts
  local cmd = ("cd %s && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 git %s; true"):format(sh.quote(dir), args)
  if input then
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write(input)
    f:close()
    cmd = cmd .. " < " .. tmp
    local out = sh.lines(cmd)
    os.remove(tmp)
    return out
  end
  return sh.lines(cmd)
end

describe("ignore files, as git reads them", function()
  after_each(backends.cleanup)

  local SEEDS = tonumber(os.getenv("SANDBOX_IGNORE_SEEDS") or "60")
  -- git's answer for a seed's tree, asked once and kept for every backend
  local oracle = {}
  local function git_wants(seed, files)
    if oracle[seed] then return oracle[seed] end
    local dir = backends.tmpdir("gitignore")
    backends.populate(dir, files)
    git(dir, "init -q")
    local want = file_set(git(dir, "ls-files --others --exclude-standard"))
    -- (ls-files is git's own walk; check-ignore judges each path alone,
    -- without the rule that nothing under an excluded directory returns,
    -- so it is asked only about the files git lists: none is ignored)
    local listed = {}
    for p in pairs(want) do listed[#listed + 1] = p end
    if #listed > 0 then
      local wrongly = git(dir, "check-ignore --no-index --stdin", table.concat(listed, "\n") .. "\n")
      assert.same({}, wrongly, "seed " .. seed)
    end
    oracle[seed] = want
    return want
  end
  for _, b in ipairs(backends.list) do
    it(("%s: leaves out what git ignores, on %d generated trees"):format(b.name, SEEDS), function()
      for seed = 1, SEEDS do
        local files = rand_tree(seed)
        local want = git_wants(seed, files)
        local sb = b.new({}, files)
        local got = file_set(assert(sb:grep("", { mode = "files", hidden = true })))
        assert.same(sorted(want), sorted(got), "seed " .. seed)
        -- glob leaves out the same
        local globbed = {}
        for _, p in ipairs(assert(sb:glob("**", { hidden = true, max_results = 10000 }))) do
          if files[p] then globbed[p] = true end
        end
        assert.same(sorted(want), sorted(globbed), "glob, seed " .. seed)
        sb:dispose()
      end
    end)
  end

  local function tree(files, opts)
    return sandbox.virtual { files = files }, opts
  end

  it("reads .ignore over .gitignore, .git/info/exclude under both, and ignored = true for everything", function()
    local sb = tree {
      [".gitignore"] = "*.log\n", [".ignore"] = "!keep.log\n", [".git/info/exclude"] = "*.tmp\n!b.log\n",
      ["a.log"] = "x\n", ["keep.log"] = "x\n", ["b.log"] = "x\n", ["c.tmp"] = "x\n", ["d.txt"] = "x\n",
      [".env"] = "x\n", [".git/config"] = "x\n",
    }
    assert.same({ "d.txt", "keep.log" }, sb:grep("x", { mode = "files" }))
    assert.same({ ".env", ".gitignore", ".ignore", "d.txt", "keep.log" }, sb:grep("", { mode = "files", hidden = true }))
    assert.same({ ".env", ".git/config", ".git/info/exclude", ".gitignore", ".ignore", "a.log", "b.log", "c.tmp", "d.txt", "keep.log" },
      sb:grep("", { mode = "files", ignored = true }))
  end)

  it("applies the rules of the directories above a path that is searched, and searches a named file anyway", function()
    local sb = tree {
      [".gitignore"] = "gen/\n*.min.js\n", ["src/.gitignore"] = "local.lua\n",
      ["src/a.lua"] = "x\n", ["src/local.lua"] = "x\n", ["src/gen/b.lua"] = "x\n", ["src/app.min.js"] = "x\n",
    }
    assert.same({ "src/a.lua" }, sb:grep("x", { path = "src", mode = "files" }))
    assert.same({ "src/local.lua" }, sb:grep("x", { path = "src/local.lua", mode = "files" }))
    assert.same({ "src/a.lua" }, sb:glob("src/**/*.lua"))
  end)

  it("skips binary files (a NUL in the first block)", function()
    local sb = tree { ["a.bin"] = "x\0y\nx\n", ["b.txt"] = "x\n", ["c.txt"] = ("y"):rep(9000) .. "\0x\n" }
    assert.same({ "b.txt", "c.txt" }, sb:grep("x", { mode = "files" }))
  end)
end)

-- ---- modes, context, types, multiline ---------------------------------------

describe("grep options", function()
  local files = {
    ["a.lua"] = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
    ["b.c"] = "int x;\nint y;\n",
    ["c.h"] = "int z;\n",
    ["d.txt"] = "begin\nmiddle\nend\n",
  }
  local function fmt(hits)
    local out = {}
    for i, h in ipairs(hits) do
      out[i] = ("%s:%d%s%s"):format(h.path, h.line, h.context and "-" or ":", h.text)
    end
    return out
  end

  for _, b in ipairs(backends.list) do
    describe(b.name, function()
      after_each(backends.cleanup)

      it("gives context lines before and after, merged and never twice", function()
        local sb = b.new({}, files)
        assert.same({ "a.lua:2-two", "a.lua:3:three", "a.lua:4-four" }, fmt(sb:grep("three", { context = 1 })))
        assert.same({ "a.lua:1-one", "a.lua:2:two", "a.lua:3:three", "a.lua:4-four", "a.lua:5-five" },
          fmt(sb:grep("t[wh]", { before = 1, after = 2 })))
        assert.same({ "a.lua:6-six", "a.lua:7:seven" }, fmt(sb:grep("seven", { before = 1, after = 3 })))
        assert.same({ "a.lua:1:one", "a.lua:2-two" }, fmt(sb:grep("one", { after = 1 })))
      end)

      it("counts and lists files", function()
        local sb = b.new({}, files)
        assert.same({ { path = "b.c", count = 2 }, { path = "c.h", count = 1 } }, sb:grep("int", { mode = "count" }))
        assert.same({ "b.c", "c.h" }, sb:grep("int", { mode = "files" }))
        local r = sb:grep("int", { mode = "files", max_results = 1 })
        assert.same({ 1, "b.c", true }, { #r, r[1], r.truncated })
      end)

      it("filters by type", function()
        local sb = b.new({}, files)
        assert.same({ "b.c", "c.h" }, sb:grep("", { mode = "files", type = "c" }))
        assert.same({ "a.lua" }, sb:grep("", { mode = "files", type = "lua" }))
        local ok, err = pcall(sb.grep, sb, "", { type = "lau" })
        assert.is_false(ok)
        assert.matches("did you mean 'lua'", err)
      end)

      it("matches over lines with multiline = true, and only within one without", function()
        local sb = b.new({}, files)
        assert.same({}, sb:grep("begin\\s+middle"))
        local r = sb:grep("begin\\s+middle", { multiline = true })
        assert.equal(1, #r)
        assert.same({ "d.txt", 1, 2, "begin\nmiddle" }, { r[1].path, r[1].line, r[1].end_line, r[1].text })
        assert.same({ "d.txt:3:end" }, fmt(sb:grep("^e.d$")))
      end)

      -- content mode's records as lines mode must give them
      local function as_lines(records, o)
        local want, last = {}, nil
        for _, h in ipairs(records) do
          if (o.context or o.before) and last and (last.path ~= h.path or h.line > (last.end_line or last.line) + 1) then
            want[#want + 1] = "--"
          end
          local n = h.line
          for l in (h.text .. "\n"):gmatch("(.-)\n") do
            want[#want + 1] = ("%s%s%d%s%s"):format(h.path, h.context and "-" or ":", n, h.context and "-" or ":", l)
            n = n + 1
          end
          last = h
        end
        return #want > 0 and table.concat(want, "\n") .. "\n" or ""
      end

      it("gives content as one string in rg's words with mode = \"lines\", the records it holds and truncated", function()
        local sb = b.new({}, files)
        for _, o in ipairs { {}, { context = 1 }, { before = 2 }, { multiline = true }, { max_results = 2 } } do
          local pat = o.multiline and "t\\w+\\s+\\w+" or "t[wh]|int"
          local records = assert(sb:grep(pat, o))
          o.mode = "lines"
          local text, n, truncated = sb:grep(pat, o)
          assert.equal(as_lines(records, o), text)
          assert.same({ #records, records.truncated or false }, { n, truncated })
        end
        assert.same({ "", 0, false }, { sb:grep("nowhere at all", { mode = "lines" }) })
      end)

      it("orders lines mode's files as the records, by the path's bytes, whatever order the walk took", function()
        -- a walk that enters can/ before it passes can.h gives can/x.h first;
        -- by the bytes, can-y.h, can.h, can/x.h, can0.h
        local sb = b.new({}, { ["can.h"] = "int a;\n", ["can/x.h"] = "int b;\nint b2;\n", ["can-y.h"] = "int c;\n",
                               ["can0.h"] = "int d;\n" })
        for _, o in ipairs { {}, { context = 1 }, { max_results = 3 } } do
          local records = assert(sb:grep("int", o))
          local paths = {}
          for _, h in ipairs(records) do paths[#paths + 1] = h.path end
          if not o.max_results then assert.same({ "can-y.h", "can.h", "can/x.h", "can/x.h", "can0.h" }, paths) end
          o.mode = "lines"
          assert.equal(as_lines(records, o), (sb:grep("int", o)))
        end
      end)

      it("refuses unknown options and bad values with a clear error", function()
        local sb = b.new({}, files)
        assert.has_error(function() sb:grep("x", { mode = "line" }) end)
        assert.has_error(function() sb:grep("x", { contxt = 2 }) end)
        assert.has_error(function() sb:grep("x", { context = 1000 }) end)
        assert.has_error(function() sb:glob("*", { sort = "size" }) end)
      end)
    end)
  end
end)

-- ---- glob: braces and sort by mtime ---------------------------------------

describe("glob", function()
  after_each(backends.cleanup)
  it("sorts newest first with sort = \"mtime\"", function()
    local dir = backends.tmpdir("mtime")
    backends.populate(dir, { ["old.lua"] = "x", ["new.lua"] = "x", ["mid.lua"] = "x" })
    sh.run(("touch -d '2020-01-01' %s/old.lua && touch -d '2021-01-01' %s/mid.lua"):format(dir, dir))
    local sb = assert(sandbox.container { base_dir = dir, confine = not os.getenv("SANDBOX_TEST_UNCONFINED") })
    assert.same({ "new.lua", "mid.lua", "old.lua" }, sb:glob("*.{lua,c}", { sort = "mtime" }))
    assert.same({ "mid.lua", "new.lua", "old.lua" }, sb:glob("*.lua"))
    sb:dispose()
  end)
end)

-- ---- counts against ripgrep, any number of threads ----------------------------

describe("grep against ripgrep on a real source tree", function()
  local src = "/usr/include/linux"
  local have_rg = os.execute("command -v rg >/dev/null 2>&1")
  local dir, sbs

  setup(function()
    dir = backends.tmpdir("rgtree")
    sh.run(("cp -r %s %s/linux"):format(src, dir))
    sbs = { container = assert(sandbox.container { base_dir = dir, confine = not os.getenv("SANDBOX_TEST_UNCONFINED") }) }
  end)
  teardown(function()
    for _, sb in pairs(sbs) do sb:dispose() end
    backends.cleanup()
  end)

  local CASES = {
    { "literal", "static", { literal = true }, "-F" },
    { "ignore-case literal", "ERROR", { literal = true, ignore_case = true }, "-F -i" },
    { "regex", "struct \\w+ \\{", {}, "" },
    { "word", "\\bint\\b", {}, "" },
    { "anchored", "^#define [A-Z_]+ +0x", {}, "" },
    { "rare", "VIRTIO_NET_F_MQ", {}, "" },
  }
  for _, c in ipairs(CASES) do
    it(c[1] .. ": the same per-file counts as rg -c", function()
      assert.truthy(have_rg, "ripgrep is needed (apt-get install ripgrep)")
      local want = {}
      for _, l in ipairs(sh.lines(("cd %s && rg --no-config -c %s -e %s linux"):format(dir, c[4], sh.quote(c[2])))) do
        local p, n = l:match("^(.*):(%d+)$")
        want[p] = tonumber(n)
      end
      local o = { mode = "count", max_results = 100000 }
      for k, v in pairs(c[3]) do o[k] = v end
      local got = {}
      for _, h in ipairs(assert(sbs.container:grep(c[2], o))) do got[h.path] = h.count end
      assert.same(want, got)
      assert.truthy(next(want), "the case matches something")
      -- the same lines whether one thread or every CPU searched
      o.mode, o.threads = "content", 1
      local one = assert(sbs.container:grep(c[2], o))
      o.threads = 0
      assert.same(one, assert(sbs.container:grep(c[2], o)))
      o.max_results = 7
      assert.same({ table.unpack(one, 1, 7) }, { table.unpack(assert(sbs.container:grep(c[2], o)), 1, 7) })
      -- mode = "lines": rg -n --no-heading's very lines, with context too; rg
      -- --sort path orders by component (can/x.h before can.h), grep by the
      -- path's bytes (as git): rg's files are put in that order to compare
      for _, ctx in ipairs { 0, 2 } do
        local ok, out = sh.run(("cd %s && rg --no-config -n --no-heading --null --sort path -C%d %s -e %s linux"):format(
          dir, ctx, c[4], sh.quote(c[2])))
        assert(ok, out)
        local files, order = {}, {}
        for line in out:gmatch("([^\n]*)\n") do
          local path, rest = line:match("^([^%z]*)%z(.*)$")
          if path then
            if not files[path] then files[path], order[#order + 1] = {}, path end
            local cur = files[path]
            cur[#cur + 1] = path .. rest:match("^%d+([:%-])") .. rest
            cur.last = #cur
          elseif line == "--" and #order > 0 then
            local cur = files[order[#order]]
            cur[#cur + 1] = "--" -- a gap inside this file, or the end of it
          end
        end
        table.sort(order)
        local chunks = {}
        for _, p in ipairs(order) do chunks[#chunks + 1] = table.concat(files[p], "\n", 1, files[p].last) end
        local rg_lines = #chunks > 0 and table.concat(chunks, ctx > 0 and "\n--\n" or "\n") .. "\n" or ""
        local ours = assert(sbs.container:grep(c[2], { mode = "lines", max_results = 100000, context = ctx,
          literal = c[3].literal, ignore_case = c[3].ignore_case }))
        assert.is_true(ours == rg_lines,
          ("%s, context %d: not rg's lines (%d and %d bytes)"):format(c[1], ctx, #ours, #rg_lines))
      end
    end)
  end
end)

-- Patterns whose required literal is not plain text, or that can see past
-- the end of a line, are judged one line at a time, as rg -P does (both
-- were fuzz findings: a wrong prefilter literal, a lookahead at "\n", a
-- bracket taken for a POSIX class).
describe("grep's line semantics, against rg -P", function()
  local have_rg = os.execute("command -v rg >/dev/null 2>&1")
  local TEXTS = {
    ["t.txt"] = "x\nb\nya\nAB c12\n z\nfoo bar\n\tend\nxa\n",
    -- letters beyond ASCII are word characters (rg -P runs PCRE2 with
    -- Unicode properties), and bytes that are not UTF-8 sit between lines
    ["u.txt"] = "g\n" .. ("\158"):rep(40) .. "\nab \158\158 cd\nx\158y\n\195\169t\195\169\n",
    -- CRLF lines: a pattern that can match empty between a CR and its LF
    -- (PCRE2's whole-buffer search steps over the pair; a fuzz finding)
    ["w.txt"] = "g\r\n`z!k\19\r\nd\nab\r\n\r\nx y\r\n",
    -- runs of digits, which an ASCII file is searched for first
    ["d.txt"] = "id 12345\nab1234\n x 123456789 y\n\\ddddd\n{5}\n99 999 9999\nq\n12a345\n",
    -- Arabic-Indic digits: \d with Unicode properties, in text that is not ASCII
    ["e.txt"] = "\217\161\217\162\217\163\217\164\217\165\nx\n12345\n\217\161\217\16223\n",
  }
  local CASES = {
    ["t.txt"] = {
      "\\Pz", "\\p{Lu}B", "\\x41B", "(a)x\\1", "[xy](?![^a])", "[xy](?=[^a])", "x(?=\\n)",
      "(?<=\\n)b", "\\Ab", "c12\\z", "\\Kb", "[a-z]$", "^\\s", "o\\b",
      -- the other spellings of lookaround, and verbs that end a whole-buffer search
      "[xy](?*[^a])", "(*napla:[^a])[a-z]", "(*non_atomic_positive_lookahead:\\n)", "(*COMMIT)b",
      "(*SKIP)a", "(?<name>x)", "(*pla:\\n)",
      -- a quantifier's digits and a bracket that is not a POSIX class are no literals
      "o{2}", "(o){2} ", "a{1,}", "[[:[xy](?![^a]fff)", "[[:alpha:]]{2} b",
      -- \c( is one character, not a group: the '|' after it is at the top (a fuzz finding)
      "x(\\c(|)y|z", "x(\\Q)|\\E)y|z",
    },
    ["u.txt"] = { "\\B", "\\b", "\\bcd", "\\B\\w", "y\\b", "\\w\\b", "^\\w+$" },
    ["w.txt"] = { "\\B", "\\b", "(?=\\r)", "\\r$", "^", "$", "b?$", "x*" },
    ["d.txt"] = {
      "\\b\\d{5,}\\b", "\\d{4}", "[0-9]{3}", "\\d{3,}?a", "\\d{2}\\b", "\\d{40}", "[0-9]{3,5}\\b",
      -- no run is required: alternation at the top, an optional group, an
      -- escaped backslash, a class, a short run
      "\\d{3}|q", "(\\d{4})?q", "\\\\d{5}", "[\\d{5}]", "\\d{2}",
    },
    ["e.txt"] = { "\\b\\d{5,}\\b", "\\d{4}", "^\\d{3}$" },
  }
  local dir, sbs
  setup(function()
    dir = backends.tmpdir("rgline")
    sbs = {
      virtual = sandbox.virtual(),
      container = assert(sandbox.container { base_dir = dir, confine = false }),
    }
    for name, text in pairs(TEXTS) do
      local f = assert(io.open(dir .. "/" .. name, "wb"))
      f:write(text)
      f:close()
      assert(sbs.virtual:write_file(name, text))
    end
  end)
  teardown(function()
    for _, sb in pairs(sbs) do sb:dispose() end
    backends.cleanup()
  end)
  for _, file in ipairs { "t.txt", "u.txt", "w.txt", "d.txt", "e.txt" } do
    for _, pat in ipairs(CASES[file]) do
      it(("%s in %s: the lines rg -P reports"):format(pat, file), function()
        assert.truthy(have_rg, "ripgrep is needed (apt-get install ripgrep)")
        local want = {}
        for _, l in ipairs(sh.lines(("rg --no-config -P -a -n -e %s %s/%s; true"):format(sh.quote(pat), dir, file))) do
          want[#want + 1] = tonumber(l:match("^(%d+):"))
        end
        for name, sb in pairs(sbs) do
          local got = {}
          for _, h in ipairs(assert(sb:grep(pat, { path = file, mode = "content" }))) do got[#got + 1] = h.line end
          assert.same(want, got, name)
        end
      end)
    end
  end
end)
