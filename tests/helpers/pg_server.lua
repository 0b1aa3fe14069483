-- A real PostgreSQL server for the history specs: initdb and pg_ctl (Debian's
-- postgresql package) in a temporary folder, listening on a Unix socket in
-- that folder only (no TCP port), as the postgres user when the tests run
-- as root (the server refuses root). start() returns the server or nil and
-- why it cannot run here; stop() ends it and removes the folder.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local M = {}

-- The newest installed server's bin folder, or nil.
local function bindir()
  local out = util.run('ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1')
  local dir = out:match('^(%S+)')
  if dir and util.run('test -x ' .. util.q(dir .. '/initdb') .. ' && echo yes'):match('yes') then return dir end
  return nil
end

local function is_root() return util.run('id -u'):match('^0') ~= nil end

--- Starts a server; returns {uri, dir, port, stop = function} or nil, why.
function M.start()
  local bin = bindir()
  if not bin then return nil, 'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; make deps installs it)' end
  local dir = sub.tmpdir()
  local as = ''
  if is_root() then
    if not util.run('id -u postgres 2>/dev/null'):match('%d') then
      return nil, 'running as root and there is no postgres user to run the server as'
    end
    util.run('chown postgres ' .. util.q(dir) .. ' && chmod 755 ' .. util.q(dir))
    as = 'runuser -u postgres -- '
  end
  local port = 20000 + (tonumber(tostring(os.time()):sub(-4)) or 0) % 20000
  local _, code = util.run(string.format('%s%s/initdb -D %s/data -A trust -U kb -E UTF8 --locale=C --no-sync '
    .. '> %s/initdb.log 2>&1', as, bin, util.q(dir), util.q(dir)))
  if code ~= 0 then return nil, 'initdb failed: ' .. (sub.slurp(dir .. '/initdb.log') or '') end
  local opts = string.format("-c listen_addresses='' -k %s -p %d -c fsync=off -c max_connections=20", dir, port)
  _, code = util.run(string.format('%s%s/pg_ctl -D %s/data -o %s -w -t 60 -l %s/server.log start > /dev/null 2>&1',
    as, bin, util.q(dir), util.q(opts), util.q(dir)))
  if code ~= 0 then return nil, 'pg_ctl start failed: ' .. (sub.slurp(dir .. '/server.log') or '') end
  local server = { dir = dir, port = port, uri = string.format('postgresql:///postgres?host=%s&port=%d&user=kb', dir, port) }
  function server.stop()
    util.run(string.format('%s%s/pg_ctl -D %s/data -m fast -w -t 60 stop > /dev/null 2>&1', as, bin, util.q(dir)))
    util.run('rm -rf ' .. util.q(dir))
  end
  --- A fresh, empty database on the server; its URI.
  function server.database(name)
    util.run(string.format('%s%s/createdb -h %s -p %d -U kb %s', as, bin, util.q(dir), port, name))
    return string.format('postgresql:///%s?host=%s&port=%d&user=kb', name, dir, port)
  end
  --- Runs SQL with psql as the superuser; its output.
  function server.psql(db, sql)
    return util.run(string.format('%s%s/psql -h %s -p %d -U kb -d %s -At -c %s 2>&1', as, bin, util.q(dir), port, db,
      util.q(sql)))
  end
  return server
end

return M
