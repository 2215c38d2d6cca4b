-- The generate_from_template tool (SPEC §20, the seed's filegen): checked
-- arguments in, the text for the model out. The variables are a list of
-- {name, value} pairs (a free-form map is not a schema every provider's
-- strict mode takes).
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local template = require "sandbox.template"
local fmt = string.format

return {
  description = "Write a file from a template: every {{name}} in it is replaced by the value given for that " ..
    "name (write \\{{ for a literal '{{'). Give the template as text (template) or as a file in the sandbox " ..
    "(template_file). A variable the template uses and the call does not give is an error naming it. " ..
    C.PATHS .. " Parent directories are created. An existing file is replaced only with overwrite=true, " ..
    "and only after you have read it.",
  parameters = S.object({
    path = S.string("The file to write."),
    template = S.string("The template text (or give template_file)."),
    template_file = S.string("A file in the sandbox to use as the template (or give template)."),
    variables = S.array(S.object({
      name = S.string("The variable's name, as written between {{ and }}."),
      value = S.string("What replaces it."),
    }, { "name", "value" }), "The values, one {name, value} per variable."),
    overwrite = S.boolean("Replace an existing file (default false)."),
  }, { "path" }),
  destructive = true,
  run = function(ctx, a)
    local vars = {}
    for _, v in ipairs(a.variables or {}) do
      if vars[v.name] ~= nil then return nil, fmt("Variable %s is given twice.", v.name) end
      vars[v.name] = v.value
    end
    local refused = a.overwrite and C.stale(ctx, a.path, "Writing")
    if refused then return nil, refused end
    local existed = ctx.sb:exists(a.path)
    local ok, msg, code = template.generate(ctx.sb, a.path, { template = a.template, template_file = a.template_file,
      variables = vars, overwrite = a.overwrite == true })
    if not ok and code == "EEXIST" then
      return nil, a.overwrite and fmt("Generating %s failed: it exists and this sandbox does not allow replacing files.", a.path)
        or fmt("Generating %s failed: it already exists; pass overwrite=true to replace it.", a.path)
    end
    if not ok then return C.fail("Generating " .. a.path, msg, code) end
    C.remember(ctx, a.path)
    local st = ctx.sb:stat(a.path)
    return fmt("%s %s from the template (%d bytes).", existed and "Replaced" or "Created", a.path, st and st.size or 0)
  end,
}
