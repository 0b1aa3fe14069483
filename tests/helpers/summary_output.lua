-- busted output handler: the usual terminal output, then one plain line
-- "N passed, N failed, N skipped" that CI reads (errors count as failed).
return function(options)
  local busted = require 'busted'
  local tty = io.type(io.stdout) == 'file' and require('term').isatty(io.stdout)
  local inner = require('busted.outputHandlers.' .. (tty and 'utfTerminal' or 'plainTerminal'))(options)
  local handler = {}

  function handler:subscribe(opts)
    inner:subscribe(opts)
    busted.subscribe({ 'suite', 'end' }, function()
      io.stdout:write(string.format('\n%d passed, %d failed, %d skipped\n', inner.successesCount,
        inner.failuresCount + inner.errorsCount, inner.pendingsCount))
      io.stdout:flush()
      return nil, true
    end)
    return self
  end

  return handler
end
