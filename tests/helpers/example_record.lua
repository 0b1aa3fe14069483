-- The text of the example record, tests/fixtures/kernelindex-record-example.json
-- (the record kernelindex.dev publishes for a Liger-Kernel run), byte for byte.
local dir = debug.getinfo(1, 'S').source:match('^@(.*)/helpers/[^/]*$') or 'tests'
local f = assert(io.open(dir .. '/fixtures/kernelindex-record-example.json', 'rb'))
local text = f:read('a')
f:close()
return text
