-- generate_from_template (SPEC §20, the seed's filegen): {{name}}
-- substitution in memory, written through the sandbox's own write rules
-- with the double overwrite gate; on every backend, as a method and a tool.
local sandbox = require "sandbox"
local backends = require "support.backends"
local template = require "sandbox.template"

describe("template rendering", function()
  -- { template, variables, result } or { template, variables, nil, error pattern, code }
  local cases = {
    { "plain text", nil, "plain text" },
    { "", {}, "" },
    { "Hello {{name}}!", { name = "Ann" }, "Hello Ann!" },
    { "{{ name }} and {{name}}", { name = "x" }, "x and x" },
    { "{{\tname\n}}", { name = "x" }, "x" },
    { "{{a}}{{b}}", { a = 1, b = true }, "1true" },
    { "{{a.b-c_d}}", { ["a.b-c_d"] = "ok" }, "ok" },
    { "\\{{name}} {{name}}", { name = "v" }, "{{name}} v" },
    { "{{v}}", { v = "{{v}} {{w}}" }, "{{v}} {{w}}" }, -- a value is never scanned again
    { "{{v}}", { v = "%1 %% $" }, "%1 %% $" }, -- nor taken as a pattern
    { "a}}b{", {}, "a}}b{" },
    { "{{a}} {{c}} {{b}} {{c}}", { b = 1 }, nil, "missing: a, c$", "EINVAL" },
    { "one\ntwo {{ a b }}", { a = 1 }, nil, "line 2:", "EINVAL" },
    { "x {{ a", { a = 1 }, nil, "line 1:", "EINVAL" },
    { "{{}}", {}, nil, "line 1:", "EINVAL" },
    { "{{1a}}", { ["1a"] = 1 }, nil, "not a name", "EINVAL" },
    { "{{a}}", { a = {} }, nil, "'a' is a table", "EINVAL" },
    { "{{a}}", "a=1", nil, "must be a table", "EINVAL" },
  }
  for i, c in ipairs(cases) do
    it(("case %d: %q"):format(i, c[1]), function()
      local out, msg, code = template.render(c[1], c[2])
      if c[3] then
        assert.equal(c[3], out, msg)
      else
        assert.is_nil(out)
        assert.equal(c[5], code)
        assert.matches(c[4], msg)
      end
    end)
  end

  it("builds no more than max_bytes", function()
    local out, msg, code = template.render(("{{v}}"):rep(1000), { v = ("z"):rep(1024) }, 64 * 1024)
    assert.same({ nil, "EFBIG" }, { out, code })
    assert.matches("would pass 65536 bytes", msg)
    assert.equal(64 * 1024, #template.render(("{{v}}"):rep(64), { v = ("z"):rep(1024) }, 64 * 1024))
  end)
end)

local FILES = { ["t.tmpl"] = "# {{title}}\nby {{ author }}\n", ["keep.txt"] = "old\n", ["secret.env"] = "{{x}}" }

for _, be in ipairs(backends.list) do
  describe(be.name .. ": generate_from_template", function()
    local new = backends.fresh(be, FILES, after_each)
    local vars = { title = "Notes", author = "Ann" }

    it("writes the rendered text, from a template text or a file in the sandbox, parents made", function()
      local sb = new()
      assert.is_true(sb:generate_from_template("out/a.md", { template_file = "t.tmpl", variables = vars }))
      assert.equal("# Notes\nby Ann\n", sb:read_file("out/a.md"))
      assert.is_true(sb:generate_from_template("b.txt", { template = "{{n}} items", variables = { n = 3 } }))
      assert.equal("3 items", sb:read_file("b.txt"))
    end)

    it("replaces a file only with overwrite = true in the call and allow_overwrite on the sandbox", function()
      local sb = new()
      local _, msg, code = sb:generate_from_template("keep.txt", { template = "new", variables = {} })
      assert.equal("EEXIST", code)
      assert.matches("overwrite = true", msg)
      assert.equal("old\n", sb:read_file("keep.txt"))
      assert.is_true(sb:generate_from_template("keep.txt", { template = "new", overwrite = true }))
      assert.equal("new", sb:read_file("keep.txt"))
      local locked = new { allow_overwrite = false }
      _, msg, code = locked:generate_from_template("keep.txt", { template = "new", overwrite = true })
      assert.equal("EEXIST", code)
      assert.matches("allow_overwrite = false", msg)
      assert.equal("old\n", locked:read_file("keep.txt"))
      assert.is_true(locked:generate_from_template("fresh.txt", { template = "new" })) -- a new file is fine
    end)

    it("names every missing variable and writes nothing", function()
      local sb = new()
      local ok, msg, code = sb:generate_from_template("c.md", { template_file = "t.tmpl", variables = { title = "x" } })
      assert.same({ nil, "EINVAL" }, { ok, code })
      assert.matches("^EINVAL: generate_from_template: template variables missing: author$", msg)
      assert.is_false(sb:exists("c.md"))
    end)

    it("writes through the write rules: deny rules, extensions, read_only, max_write_bytes", function()
      local sb = new { rules = { deny = { "*.env", "private/**" } }, extensions = { write = { ".md", ".txt" } } }
      assert.equal("EACCES", select(3, sb:generate_from_template("private/x.md", { template = "x" })))
      assert.equal("EACCES", select(3, sb:generate_from_template("x.sh", { template = "x" })))
      assert.is_false(sb:exists("x.sh"))
      assert.equal("EACCES", select(3, new { read_only = true }:generate_from_template("x.md", { template = "x" })))
      local small = new { max_write_bytes = 1000 }
      local _, msg, code = small:generate_from_template("big.md", { template = ("{{v}}"):rep(100), variables = { v = ("z"):rep(100) } })
      assert.equal("EFBIG", code)
      assert.matches("1000", msg)
      assert.is_false(small:exists("big.md"))
    end)

    it("reads template_file through the read rules and caps", function()
      local sb = new { rules = { deny = { "*.env" } } }
      local _, _, code = sb:generate_from_template("o.md", { template_file = "secret.env", variables = { x = 1 } })
      assert.equal("EACCES", code) -- as read_file answers for a denied file
      assert.is_false(sb:exists("o.md"))
      local capped = new { max_read_bytes = 10 }
      assert.equal("EFBIG", select(3, capped:generate_from_template("o.md", { template_file = "t.tmpl", variables = vars })))
      assert.equal("EESCAPE", select(3, sb:generate_from_template("o.md", { template_file = "../t.tmpl", variables = vars })))
      assert.equal("EESCAPE", select(3, sb:generate_from_template("../o.md", { template = "x" })))
    end)

    it("refuses bad calls with a clear error", function()
      local sb = new()
      for _, c in ipairs {
        { { template = "x", template_file = "t.tmpl" }, "exactly one" },
        { {}, "exactly one" },
        { { template = "x", vars = {} }, "unknown option 'vars'" },
        { { template = 7 }, "must be a string" },
      } do
        local ok, msg, code = sb:generate_from_template("o.md", c[1])
        assert.same({ nil, "EINVAL" }, { ok, code })
        assert.matches(c[2], msg)
      end
      assert.equal("EINVAL", select(3, sb:generate_from_template("o.md")))
      assert.is_false(sb:exists("o.md"))
    end)

    it("is a tool: created, an existing file needs overwrite=true and a read first", function()
      local sb = new()
      local t = sb:tools()
      local tool = t.generate_from_template
      assert.is_true(tool.destructive)
      local r = tool.execute { path = "n.md", template_file = "t.tmpl",
                               variables = { { name = "title", value = "T" }, { name = "author", value = "B" } } }
      assert.is_false(r.is_error, r.content)
      assert.equal("Created n.md from the template (9 bytes).", r.content)
      assert.equal("# T\nby B\n", sb:read_file("n.md"))
      r = tool.execute { path = "keep.txt", template = "x" }
      assert.is_true(r.is_error)
      assert.matches("pass overwrite=true", r.content)
      r = tool.execute { path = "keep.txt", template = "x", overwrite = true }
      assert.is_true(r.is_error)
      assert.matches("have not read it", r.content)
      assert.is_false(t.read_file.execute { path = "keep.txt" }.is_error)
      r = tool.execute { path = "keep.txt", template = "x", overwrite = true }
      assert.is_false(r.is_error, r.content)
      assert.equal("x", sb:read_file("keep.txt"))
      r = tool.execute { path = "m.md", template = "{{a}}", variables = { { name = "a", value = "1" }, { name = "a", value = "2" } } }
      assert.is_true(r.is_error)
      assert.matches("given twice", r.content)
      r = tool.execute { path = "m.md", template = "{{a}} {{b}}" }
      assert.is_true(r.is_error)
      assert.matches("missing: a, b", r.content)
      assert.is_false(sb:exists("m.md"))
    end)
  end)
end

describe("generate_from_template in a tool set", function()
  it("is asked about by approve (destructive) and left out of read_only sets", function()
    local sb = sandbox.virtual {}
    local asked = {}
    local t = sb:tools { approve = function(call) asked[#asked + 1] = call.name; return "no" end }
    local r = t.generate_from_template.execute { path = "x.md", template = "x" }
    assert.is_true(r.is_error)
    assert.same({ "generate_from_template" }, asked)
    assert.is_false(sb:exists("x.md"))
    assert.is_nil(sb:tools { read_only = true }.generate_from_template)
    sb:dispose()
  end)
end)
