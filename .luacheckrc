-- luacheck (make lint, run by CI): the Lua layer and the command line.
std = "max"
max_line_length = false -- descriptions and help texts are long strings, kept whole
exclude_files = { "build*/**" }
