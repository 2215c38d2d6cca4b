-- The built-in tools (SPEC §7), one file each in tools/builtin/. Each
-- `run(ctx, args)` gets checked arguments and returns the text for the
-- model, or nil, error text; the tools module adds validation, approval,
-- error capture and exporters.
local B = {}

B.ORDER = { "read_file", "write_file", "edit_file", "list_files", "find_files", "search_code",
  "file_exists", "delete_file", "create_directory", "move_file", "generate_from_template", "run_command", "run_shell",
  "process_output", "process_kill", "process_list", "http_get" }

for _, name in ipairs(B.ORDER) do B[name] = require("sandbox.tools.builtin." .. name) end

return B
