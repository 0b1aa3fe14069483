-- The text of the example record (a copy of shared/reference/kernelindex-record-example.json
-- in tests/data, since CI's checkout need not have shared/), byte for byte.
local dir = debug.getinfo(1, 'S').source:match('^@(.*)/helpers/[^/]*$') or 'tests'
local f = assert(io.open(dir .. '/data/kernelindex-record-example.json', 'rb'))
local text = f:read('a')
f:close()
return text
