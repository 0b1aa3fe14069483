-- The test runner: busted, run by this binary, on the specs under tests/ (or
-- those named), ending with the line "N passed, N failed, N skipped".
-- Specs tagged `gpu` run only when the default backend is cuda; on the GPU
-- machine `kluabench tests/run.lua --tags=gpu` runs just those.
local kb = require 'kluabench'
local dir = (arg[0]:match('^(.*)/[^/]*$') or '.')

local args = { '--output=' .. dir .. '/helpers/summary_output.lua', '--lpath=' .. dir .. '/?.lua' }
local has_target, has_tags = false, false
for _, a in ipairs(arg) do
  if not a:match('^%-') then has_target = true end
  if a:match('^%-%-tags') or a:match('^%-%-exclude%-tags') then has_tags = true end
  args[#args + 1] = a
end
if not has_tags and kb.backend() ~= 'cuda' then args[#args + 1] = '--exclude-tags=gpu' end
if not has_target then args[#args + 1] = dir end

arg = args
require('busted.runner')({ standalone = false })
