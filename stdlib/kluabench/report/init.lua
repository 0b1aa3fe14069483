--- kb.report: the writers and readers a script needs in one table. JSON,
-- CSV and files are the base layer (io/json.lua, io/files.lua, io/csv.lua);
-- the results table is this layer's (report/table.lua). This module only
-- gathers their functions, so kb.report.encode_pretty and
-- require('kluabench.io.json').encode_pretty are the same function.
local M = {}

local json, files, csv = require 'kluabench.io.json', require 'kluabench.io.files', require 'kluabench.io.csv'
local results_table = require 'kluabench.report.table'

for _, part in ipairs { json, files, csv, results_table } do
  for k, v in pairs(part) do
    assert(M[k] == nil, 'kluabench.report: ' .. k .. ' defined twice')
    M[k] = v
  end
end

return M
