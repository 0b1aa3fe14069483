-- The fuzz targets' checks (tests/fuzz/oracle.lua) on their seed corpora and
-- on every input that once failed them (tests/fuzz/regressions/): what
-- `make fuzz-run` found stays fixed. Fuzzing itself is `make fuzz-run`.
local sub = require 'helpers.subprocess'
local oracle = require 'fuzz.oracle'

local ROOT = sub.root()

local function files(dir)
  local out = {}
  local p = io.popen('ls -A ' .. sub.q(ROOT .. '/' .. dir) .. ' 2> /dev/null')
  for name in p:lines() do out[#out + 1] = dir .. '/' .. name end
  p:close()
  table.sort(out)
  return out
end

for _, target in ipairs { 'jcs', 'csv', 'records', 'merge', 'samples', 'history' } do
  describe('fuzz target ' .. target, function()
    it('holds on its seed corpus', function()
      local seeds = files('tests/fuzz/corpus/' .. target)
      assert.is_true(#seeds >= 8)
      for _, f in ipairs(seeds) do
        local ok, err = pcall(oracle[target], sub.slurp(ROOT .. '/' .. f))
        assert(ok, f .. ': ' .. tostring(err))
      end
    end)

    it('holds on every input it once failed on (tests/fuzz/regressions/' .. target .. ')', function()
      for _, f in ipairs(files('tests/fuzz/regressions/' .. target)) do
        local ok, err = pcall(oracle[target], sub.slurp(ROOT .. '/' .. f))
        assert(ok, f .. ': ' .. tostring(err))
      end
    end)
  end)
end

describe('the fuzz oracle', function()
  it('catches what it is there to catch', function()
    -- a bundle that does not verify is a finding; a CSV row that cannot be
    -- converted is not, as long as it says why
    local liger = require 'kluabench.liger'
    local saved = liger.row_to_bundle
    liger.row_to_bundle = function() error('boom') end
    local text = sub.slurp(ROOT .. '/tests/fuzz/corpus/csv/liger_speed.csv')
    local ok, err = pcall(oracle.csv, text)
    liger.row_to_bundle = saved
    assert.is_false(ok)
    assert.matches('^oracle: row_to_bundle raised: .*boom', err)
    assert.has_no_error(function() oracle.csv('a,b"c\n') end)
    assert.has_no_error(function() oracle.jcs('{"a": [1, 2') end)
    assert.has_no_error(function() oracle.jcs(string.rep('[', 5000)) end)
  end)

  it('sees a clean merge in the merge seed of a real run, and catches a gather that merges a bundle twice', function()
    local merge = require 'kluabench.dist.merge'
    local shards = require 'kluabench.dist.shards'
    local seed = sub.slurp(ROOT .. '/tests/fuzz/corpus/merge/valid.bin')
    local mtext, shard, samples = seed:match('^(.-)%z(.-)%z(.*)$')
    local m = assert(shards.parse_manifest(mtext))
    local dir = sub.tmpdir()
    sub.spit(dir .. '/shard-1.samples.jsonl', samples)
    local res = merge.gather(m, { { path = dir .. '/shard-1.jsonl', text = shard } })
    os.execute('rm -rf ' .. sub.q(dir))
    assert.equal(2, #res.bundles)
    assert.equal(1, res.complete)
    assert.equal(2, res.expected)
    for _, p in ipairs(res.problems) do assert.is_true(merge.NOTES[p.kind], p.message) end
    local saved = merge.gather
    merge.gather = function(...)
      local r = saved(...)
      r.bundles[#r.bundles + 1] = r.bundles[1]
      return r
    end
    local ok, err = pcall(oracle.merge, seed)
    merge.gather = saved
    assert.is_false(ok)
    assert.matches('^oracle: ', err)
  end)

  it('samples: the seeds resolve as a plain reading does, and an index that names a wrong line is caught', function()
    local evidence = require 'kluabench.record.evidence'
    local seed = sub.slurp(ROOT .. '/tests/fuzz/corpus/samples/entry_moved.bin')
    assert.has_no_error(function() oracle.samples(seed) end)
    local saved = evidence.resolve
    evidence.resolve = function(b, path)
      local entry, why = saved(b, path)
      if not entry and why then why = why:gsub(':(%d+) is not a ', function(n) return ':' .. (n + 1) .. ' is not a ' end) end
      return entry, why
    end
    local ok, err = pcall(oracle.samples, seed)
    evidence.resolve = saved
    assert.is_false(ok)
    assert.matches('^oracle: line %d+ by ', err)
  end)

  it('history: a clean seed adds its bundles once; a store that adds what verify refuses is caught', function()
    local history = require 'kluabench.history'
    local sum = oracle.history(sub.slurp(ROOT .. '/tests/fuzz/corpus/history/valid.bin'))
    assert.same({ 2, 0, 0 }, { sum.added, sum.present, #sum.refused })
    local forged = sub.slurp(ROOT .. '/tests/fuzz/corpus/history/claims_provider.bin')
    sum = oracle.history(forged)
    assert.same({ 0, 0, 1 }, { sum.added, sum.present, #sum.refused })
    local verify = require 'kluabench.record.verify'
    local saved = verify.problems
    verify.problems = function(b, path)
      if path == nil then return {} end -- the store's check sees nothing wrong: it adds the forgery
      return saved(b, path)
    end
    local ok, err = pcall(oracle.history, forged)
    verify.problems = saved
    assert.is_false(ok)
    assert.matches('^oracle: bundle 1 was added, and verify refuses it', err)
  end)

  it('imports the rows of each regression input it can, and says why for the others', function()
    local liger = require 'kluabench.liger'
    local rows = assert(liger.parse(sub.slurp(ROOT .. '/tests/fuzz/regressions/csv/invalid_utf8_in_a_column.csv')))
    local _, reason, why = liger.row_to_bundle(rows[1])
    assert.equal('invalid', reason)
    assert.equal('gpu_name is not valid UTF-8', why)
    rows = assert(liger.parse(sub.slurp(ROOT .. '/tests/fuzz/regressions/csv/integer_beyond_2p53.csv')))
    -- (its provider and config are broken too: mended, so that the x value is what is judged)
    rows[1].kernel_provider = 'liger'
    rows[1].extra_benchmark_config_str = '{"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, '
      .. '"num_kv_heads": 8}'
    _, reason, why = liger.row_to_bundle(rows[1])
    assert.equal('invalid', reason)
    assert.equal("x_value is beyond +-2^53 ('00000000000004553682020284002672')", why)
    rows = assert(liger.parse(sub.slurp(ROOT .. '/tests/fuzz/regressions/csv/string_parameter_in_config.csv')))
    -- a kernel kernelindex does not curate is skipped, as its importer skips it
    assert.equal('uncurated_kernel', select(2, liger.row_to_bundle(rows[1])))
    -- the x value that once reached the cost model as a string is refused now (issue 14)
    _, reason, why = liger.row_to_bundle(rows[2])
    assert.equal('invalid', reason)
    assert.equal("x_value is not a decimal number ('20iiiiiiii48')", why)
  end)
end)
