-- Schema checks of documents in a spec: the independent validator (python3-jsonschema, draft
-- 2020-12, and kernelindex's field rules: tests/helpers/validate_kernelindex.py) against the
-- vendored schemas in tests/fixtures/kernelindex-schemas/.
local json = require 'kluabench.util.json'
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local M = {}

M.PYTHON = '/usr/bin/python3' -- Debian's, where python3-jsonschema is installed
M.SCHEMAS = sub.root() .. '/tests/fixtures/kernelindex-schemas'

--- Whether python3-jsonschema is there (a spec skips its schema checks and says so otherwise).
function M.available()
  local ok = os.execute(M.PYTHON .. ' -c "import jsonschema; jsonschema.Draft202012Validator" >/dev/null 2>&1')
  return ok == true or ok == 0
end

--- The validator's complaints about a document or a bundle ({} when valid).
function M.check(value)
  local dir = util.tmpdir()
  local path = dir .. '/doc.json'
  util.spit(path, assert(json.encode_pretty(value)))
  local p = assert(io.popen(table.concat({ M.PYTHON, util.q(sub.root() .. '/tests/helpers/validate_kernelindex.py'),
    util.q(M.SCHEMAS), util.q(path) }, ' ') .. ' 2>&1'))
  local out = p:read('a')
  p:close()
  os.execute('rm -rf ' .. util.q(dir))
  local problems = {}
  for line in out:gmatch('[^\n]+') do
    if line:match('^INVALID') then problems[#problems + 1] = line end
  end
  if not out:match('%d+ documents: %d+ valid') then problems[#problems + 1] = 'validator: ' .. out end
  return problems
end

return M
