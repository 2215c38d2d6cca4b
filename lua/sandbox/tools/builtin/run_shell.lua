-- The run_shell tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"
local run_result = C.run_result
local exec_opts = C.exec_opts
local with = C.with

return {
  description = "Run a shell script with /bin/sh -c (pipes, redirections and globs work). Same sandbox, " ..
    "timeout and output rules as run_command; prefer run_command when no shell features are needed.",
  parameters = S.object(with { script = S.string("The shell script.") }, { "script" }),
  destructive = true,
  needs_exec = true,
  needs_shell = true,
  run = function(ctx, a)
    local o = exec_opts(ctx, a, "run_shell")
    o.allow_shell = true
    local r, msg, code = ctx.sb:exec_shell(a.script, o)
    return run_result(ctx, r, msg, code, a.timeout_seconds or ctx.cfg.timeout, "Running the script")
  end,
}
