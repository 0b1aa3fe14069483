-- bench/rope_flat_judge.lua, the rule that judges rope_tune's kernel variants against the production
-- path (docs/perf-notes.md, "The flat kernel" and "The token kernel"), on tune CSVs written here.
local sub = require 'helpers.subprocess'

local ROOT = sub.root()
local HEADER = 'point,style,mode,variant,median_us,p20_us,p80_us,check\n'
local POINTS = { 'H512_T2048', 'H2048_T2048', 'H8192_T1024' }

-- One process's CSV: fused prod at 10 us at every cell, and each variant at ratio(point, style,
-- mode) x 10 us. variants: {name = function(point, style, mode) -> ratio or nil (no row)}.
local function tune_csv(variants)
  local rows = { HEADER }
  for _, pt in ipairs(POINTS) do
    for _, style in ipairs { 'llama4', 'neox' } do
      for _, mode in ipairs { 'forward', 'full' } do
        rows[#rows + 1] = string.format('%s,%s,%s,fused prod,10.000,9.9,10.1,ok\n', pt, style, mode)
        for name, ratio in pairs(variants) do
          local r = ratio(pt, style, mode)
          if r then
            rows[#rows + 1] = string.format('%s,%s,%s,%s waves=1.00,%.3f,9.9,10.1,ok\n', pt, style, mode,
              name(pt), 10 * r)
          end
        end
      end
    end
  end
  return table.concat(rows)
end

-- The token kernel's K follows from the shape, so each point names its own.
local function token(table_kind)
  return function(pt) return string.format('token %s T=128 K=%d', table_kind, pt == 'H8192_T1024' and 5 or 2) end
end
local function flat(pt) return 'flat regs T=128 VPT=1' end

describe('bench/rope_flat_judge.lua', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  local function judge(args, csvs)
    local files = {}
    for i, text in ipairs(csvs) do
      files[i] = dir .. '/tune-' .. i .. '.csv'
      sub.spit(files[i], text)
    end
    local argv = { ROOT .. '/bench/rope_flat_judge.lua' }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    for _, f in ipairs(files) do argv[#argv + 1] = f end
    return sub.run(argv)
  end

  it('adopts the token kernel at the neox cells only when one table kind is within the limit at all 4', function()
    -- smem at 0.97 on neox (llama4 slower, not judged), regs at 0.99
    local text = tune_csv {
      [token 'smem'] = function(_, style) return style == 'neox' and 0.97 or 1.2 end,
      [token 'regs'] = function() return 0.99 end,
    }
    local r = judge({ '--family', 'token', '--limit', '0.98', '--styles', 'neox' }, { text, text })
    assert.equal(0, r.code, r.out .. r.err)
    assert.matches('token kernel: ADOPT: token smem T=128 is within 0.98 x fused prod at all 4 cells', r.out)
    -- the same files under the flat kernel's rule: no flat configuration there
    r = judge({}, { text, text })
    assert.equal(2, r.code)
    assert.matches('no flat configuration', r.err)
  end)

  it('rejects when one judged cell misses in one process, and when a judged cell is missing', function()
    local good = tune_csv { [token 'smem'] = function() return 0.95 end }
    local miss = tune_csv {
      [token 'smem'] = function(pt, style, mode)
        return (pt == 'H8192_T1024' and style == 'neox' and mode == 'full') and 0.985 or 0.95
      end,
    }
    local r = judge({ '--family', 'token', '--limit', '0.98', '--styles', 'neox' }, { good, miss })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('token kernel: REJECT: no one configuration is within 0.98', r.out)
    local gone = tune_csv { [token 'smem'] = function() return 0.95 end }:gsub('\nH8192_T1024,neox,full,[^\n]*', '')
    -- in one process only: not eligible there
    r = judge({ '--family', 'token', '--limit', '0.98', '--styles', 'neox' }, { good, gone })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('| H8192_T1024 neox full | 10.000 | none eligible | - | yes |', r.out, 1, true)
    -- in no process
    r = judge({ '--family', 'token', '--limit', '0.98', '--styles', 'neox' }, { gone, gone })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('token kernel: REJECT: 3 of the 4 judged cells', r.out)
  end)

  it('keeps the flat rule as registered: 0.97 at the 8 cells of both styles', function()
    local text = tune_csv { [flat] = function(_, style) return style == 'neox' and 0.96 or 0.975 end }
    local r = judge({}, { text, text })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('flat kernel: REJECT: no one configuration is within 0.97 x fused prod at all 8 cells', r.out)
    r = judge({ '--styles', 'neox' }, { text, text })
    assert.equal(0, r.code, r.out .. r.err)
    assert.matches('flat kernel: ADOPT', r.out)
  end)

  it('refuses unknown options and values', function()
    local r = judge({ '--family', 'fused' }, { HEADER, HEADER })
    assert.equal(2, r.code)
    assert.matches("%-%-family must be flat or token, got 'fused'", r.err)
    r = judge({ '--limit', '2' }, { HEADER, HEADER })
    assert.equal(2, r.code)
    assert.matches('%-%-limit must be a number in %(0, 1%]', r.err)
    r = judge({ '--frobnicate' }, { HEADER, HEADER })
    assert.equal(2, r.code)
    assert.matches("unknown option '%-%-frobnicate'", r.err)
  end)
end)
