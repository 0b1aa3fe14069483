-- Moved to kluabench.cli.shards; this name is kept for one release.
return require 'kluabench.cli.shards'
