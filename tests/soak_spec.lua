-- scripts/soak.lua: rounds of a sweep in one process with memory sampled per
-- round; passes when memory stays flat, fails (exit 1) when it grows, and
-- reports what it has when interrupted. The long runs are `make soak` (CPU,
-- in CI) and the GPU command in docs/RELIABILITY.md.
local sub = require 'helpers.subprocess'

local ROOT = sub.root()
local SOAK = ROOT .. '/scripts/soak.lua'
local LEAKY = ROOT .. '/tests/fixtures/soak/leaky_sweep.lua'

describe('scripts/soak.lua', function()
  it('repeats the real sweep and passes when memory stays flat', function()
    local r = sub.run({ '--backend', 'cpu', SOAK, '--seconds', '1', '--rounds', '3', '--sweep', 'hidden',
      '--seq', '128', '--rep-ms', '2', '--warmup-ms', '1', '--mode', 'forward', '--provider', 'fused' })
    assert.equal(0, r.code, r.err)
    assert.matches('soak: 3 rounds of llama4_rope.lua --sweep hidden', r.out, 1, true)
    assert.matches('round  seconds  points  host heap MiB', r.out, 1, true)
    assert.matches('forward fused hidden512%-kv_heads8%-q_heads32%-seq128%-bf16%s+3 ', r.out)
    if r.out:find('soak: host heap', 1, true) then -- absent under AddressSanitizer
      assert.matches('soak: host heap %+[%d.]+ MiB after round 1 %(limit 16%): ok', r.out)
    end
    assert.matches('soak: host RSS [-+][%d.]+ MiB after round 1 %(limit 256%): ok', r.out)
    local _, rounds = r.err:gsub('soak: round %d+: 3 points', '')
    assert.equal(3, rounds)
  end)

  it('fails with exit status 1 when the heap grows between rounds', function()
    -- rounds take no time: --rounds decides how many (8 MiB more each). The
    -- heap is the measure (absent under AddressSanitizer: then the RSS).
    local r = sub.run({ '--backend', 'cpu', SOAK, '--script', LEAKY, '--seconds', '0.001', '--rounds', '4',
      '--max-heap-growth-mb', '16', '--max-rss-growth-mb', '16' })
    assert.equal(1, r.code, r.err)
    if r.out:find('soak: host heap', 1, true) then
      assert.matches('soak: host heap %+24%.%d MiB after round 1 %(limit 16%): GREW', r.out)
    else
      assert.matches('soak: host RSS %+2%d%.%d MiB after round 1 %(limit 16%): GREW', r.out)
    end
    assert.matches('soak: FAILED: memory grew beyond the limit', r.err, 1, true)
    r = sub.run({ '--backend', 'cpu', SOAK, '--script', LEAKY, '--seconds', '0.001', '--rounds', '4',
      '--max-heap-growth-mb', '32', '--max-rss-growth-mb', '1000' })
    assert.equal(0, r.code, r.err)
  end)

  it('stops after the round in progress on SIGINT, prints the rounds so far and exits 130', function()
    local dir = sub.tmpdir()
    os.execute(string.format([[
      %s --backend cpu %s --script %s --seconds 60 --rounds 100 -- --no-leak --busy 0.3 > %s 2> %s & pid=$!
      sleep 1; kill -INT $pid; wait $pid; echo $? > %s]], sub.q(sub.bin()), sub.q(SOAK), sub.q(LEAKY),
      sub.q(dir .. '/out'), sub.q(dir .. '/err'), sub.q(dir .. '/rc')))
    assert.equal(130, tonumber(sub.slurp(dir .. '/rc')))
    assert.matches('soak: stopped in round %d+: interrupted by SIGINT', sub.slurp(dir .. '/err'))
    assert.matches('soak: %d+ rounds of leaky_sweep.lua', sub.slurp(dir .. '/out'))
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('refuses options it does not know and --format', function()
    local r = sub.run({ '--backend', 'cpu', SOAK, '--format', 'table' })
    assert.equal(2, r.code)
    assert.matches("option '--format' is the soak's own", r.err, 1, true)
  end)
end)
