-- Moved to kluabench.suite.shard; this name is kept for one release.
return require 'kluabench.suite.shard'
