-- luacheck (make lint, run by CI): the Lua layer and the command line.
std = "max"
max_line_length = false -- descriptions and help texts are long strings, kept whole
exclude_files = { "build*/**" }
-- the Neovim modules run inside Neovim, whose API is the global `vim`
files["lua/sandbox/nvim.lua"] = { read_globals = { "vim" } }
files["lua/sandbox/health.lua"] = { read_globals = { "vim" } }
files["lua/sandbox/adapters/*.lua"] = { read_globals = { "vim" } }
files["plugin/*.lua"] = { read_globals = { "vim" }, globals = { "vim.g" } }
