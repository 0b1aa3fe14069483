-- Did-you-mean: kluabench.util.args, and the messages of a mistyped
-- command, option or benchmark axis that use it.
local suggest = require 'kluabench.util.args'
local sub = require 'helpers.subprocess'

describe('kluabench.util.args', function()
  it('finds the word one or two edits away, best first', function()
    assert.same({ 'seq' }, suggest.closest('seqs', { 'seq', 'hidden', 'q-heads', 'kv-heads' }))
    assert.same({ 'fused' }, suggest.closest('fsued', { 'fused', 'reference', 'copy' })) -- a swap is one edit
    assert.same({ 'protocol' }, suggest.closest('protocl', { 'protocol', 'provider', 'out' }))
    assert.same({ 'between' }, suggest.closest('betwen', { 'threshold', 'between' }))
    -- equally close: all, in alphabetical order; closer first
    assert.same({ 'cops', 'copy' }, suggest.closest('cop', { 'copy', 'seq', 'cops' }))
    assert.same({ 'hidden' }, suggest.closest('hiden', { 'hiddens', 'hidden' })) -- 1 edit; hiddens is 2
  end)

  it('takes a word the option starts with, or that starts with it', function()
    assert.same({ 'seq' }, suggest.closest('seq-len', { 'seq', 'hidden' }))
    assert.same({ 'hidden' }, suggest.closest('hid', { 'seq', 'hidden' }))
  end)

  it('suggests nothing for a word far from every candidate, or the word itself', function()
    assert.same({}, suggest.closest('zzz', { 'seq', 'hidden' }))
    assert.same({}, suggest.closest('seq', { 'seq' }))
    assert.same({}, suggest.closest('x', { 'y', 'seq' })) -- one or two characters: too short to guess from
    assert.equal('', suggest.hint('zzz', { 'seq' }, '--'))
  end)

  it('words the hint', function()
    assert.equal(" (did you mean '--seq'?)", suggest.hint('seqs', { 'seq', 'hidden' }, '--'))
    assert.equal(" (did you mean 'cops' or 'copy'?)", suggest.hint('cop', { 'copy', 'cops' }))
  end)

  it("takes -o for a script's --out and -h for --help (script_options), anywhere on the line", function()
    local opts = suggest.script_options('t.lua', 'usage\n', { '--n', '3', '-o', 'x.jsonl' }, { n = 'value', out = 'value' })
    assert.equal('x.jsonl', opts.out)
    assert.equal('3', opts.n)
    -- a script without --out has no -o
    local exit = os.exit
    os.exit = function(code) error('exit ' .. code, 0) end ---@diagnostic disable-line
    local stderr = io.stderr
    io.stderr = { write = function() end } ---@diagnostic disable-line
    local ok, err = pcall(suggest.script_options, 't.lua', 'usage\n', { '-o', 'x' }, { n = 'value' })
    os.exit, io.stderr = exit, stderr
    assert.is_false(ok)
    assert.equal('exit 2', err)
  end)

  it('checks its arguments', function()
    assert.has_error(function() suggest.closest(nil, {}) end, "bad argument #1 to 'closest' (string expected, got nil)")
    assert.has_error(function() suggest.closest('x', 'y') end,
      "bad argument #2 to 'closest' (list of strings expected, got string)")
  end)
end)

describe('did you mean, on the command line', function()
  it('a mistyped command: a usage error naming the command it most likely meant', function()
    local dir = sub.tmpdir()
    local r = sub.run({ 'verfy', 'x.jsonl' }, { cwd = dir })
    assert.equal(2, r.code)
    assert.matches("'verfy' is no command and no file (did you mean 'verify'?)", r.err, 1, true)
    r = sub.run({ 'hstory', 'list' }, { cwd = dir })
    assert.equal(2, r.code)
    assert.matches("(did you mean 'history'?)", r.err, 1, true)
    -- a file of that name is a script, as always
    sub.spit(dir .. '/verfy', 'print("the script ran")\n')
    r = sub.run({ 'verfy' }, { cwd = dir })
    assert.equal(0, r.code, r.err)
    assert.equal('the script ran\n', r.out)
    -- a word close to no command is a script that cannot be opened, as lua says it
    r = sub.run({ 'nothing-like-it' }, { cwd = dir })
    assert.equal(1, r.code)
    assert.matches('cannot open nothing%-like%-it', r.err)
  end)

  it("a mistyped option of a command or a benchmark's axis names the option", function()
    local r = sub.run({ 'compare', '--betwen', '0.01', 'a.jsonl', 'b.jsonl' })
    assert.equal(2, r.code)
    assert.matches("unrecognized option '--betwen' (did you mean '--between'?)", r.err, 1, true)
    local script = sub.root() .. '/scripts/llama4_rope.lua'
    for typo, meant in pairs { ['--seqs'] = '--seq', ['--seq-len'] = '--seq', ['--protocl'] = '--protocol',
      ['--q-head'] = '--q-heads' } do
      r = sub.run({ script, typo, '1' })
      assert.equal(2, r.code, typo)
      assert.matches(string.format("unrecognized option '%s' (did you mean '%s'", typo, meant), r.err, 1, true)
    end
    r = sub.run({ script, '--zzz', '1' })
    assert.equal(2, r.code)
    assert.no.matches('did you mean', r.err, 1, true)
  end)

  it('a mistyped option of run-all or slurm (options read before SCRIPT) names the option', function()
    for _, case in ipairs {
      { { 'run-all', '--proc', '2', 'x.lua' }, "'--proc' (did you mean '--procs'?)" },
      { { 'run-all', '--device', '0,1', 'x.lua' }, "'--device' (did you mean '--devices'?)" },
      { { 'slurm', '--gpu', '2', 'x.lua' }, "'--gpu' (did you mean '--cpu' or '--gpus'?)" },
      { { 'slurm', '--max-paralel', '2', 'x.lua' }, "'--max-paralel' (did you mean '--max-parallel'?)" },
    } do
      local r = sub.run(case[1])
      assert.equal(2, r.code, r.err)
      assert.matches('kluabench ' .. case[1][1] .. ': unrecognized option ' .. case[2], r.err, 1, true)
    end
    local r = sub.run({ 'run-all', '--zzzz', 'x.lua' })
    assert.equal(2, r.code)
    assert.no.matches('did you mean', r.err, 1, true)
  end)
end)
