--- kb.output: the report writers in one table, for scripts. Each part lives
-- in its own file under report/ (json, files, csv, table); this module only
-- gathers their functions, so kb.output.encode_pretty and
-- require('kluabench.report.json').encode_pretty are the same function.
local M = {}

for _, part in ipairs { 'json', 'files', 'csv', 'table' } do
  for k, v in pairs(require('kluabench.report.' .. part)) do
    assert(M[k] == nil, 'kluabench.report: ' .. k .. ' defined twice')
    M[k] = v
  end
end

return M
