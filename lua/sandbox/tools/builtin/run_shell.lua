-- The run_shell tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"

return {
  description = "Run a shell script with /bin/sh -c (pipes, redirections and globs work). Same sandbox, " ..
    "timeout and output rules as run_command; prefer run_command when no shell features are needed.",
  parameters = S.object(C.with { script = S.string("The shell script.") }, { "script" }),
  destructive = true,
  needs_exec = true,
  needs_shell = true,
  run = function(ctx, a)
    local o = C.exec_opts(ctx, a, "run_shell")
    o.allow_shell = true
    local r, msg, code = ctx.sb:exec_shell(a.script, o)
    return C.run_result(ctx, r, msg, code, a.timeout_seconds or ctx.cfg.timeout, "Running the script")
  end,
  start = function(ctx, a, done)
    C.start_command(ctx, a, "Running the script", function(o)
      o.allow_shell = true
      return ctx.sb:exec_shell(a.script, o)
    end, done)
  end,
}
