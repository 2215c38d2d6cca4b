-- The run_command tool (SPEC §7): checked arguments in, the text for the model out.
local S = require "sandbox.tools.schema"
local C = require "sandbox.tools.common"

local function rest_of(argv)
  local rest = {}
  for i = 2, #argv do rest[#rest + 1] = argv[i] end
  return rest
end

return {
  description = "Run a program with arguments, without a shell: command is the argument vector, e.g. " ..
    "[\"ls\", \"-la\"] or [\"python3\", \"test.py\"]; there are no pipes, redirections or wildcards. The " ..
    "command runs inside the sandbox: it can read system directories and the sandbox, write only inside " ..
    "the sandbox, and its network is limited. Returns the exit code and output (long output keeps its " ..
    "start and end). A command that runs past its timeout is killed with everything it started.",
  parameters = S.object(C.with {
    command = S.array(S.string("one argument"), "Program and its arguments.", { minItems = 1 }),
  }, { "command" }),
  destructive = true,
  needs_exec = true,
  run = function(ctx, a)
    local argv = a.command
    local r, msg, code = ctx.sb:exec(argv[1], rest_of(argv), C.exec_opts(ctx, a, "run_command"))
    return C.run_result(ctx, r, msg, code, a.timeout_seconds or ctx.cfg.timeout, "Running " .. argv[1])
  end,
  start = function(ctx, a, done)
    local argv = a.command
    C.start_command(ctx, a, "Running " .. argv[1], function(o) return ctx.sb:exec(argv[1], rest_of(argv), o) end, done)
  end,
}
