-- Moved to kluabench.io.suggest; this name is kept for one release.
return require 'kluabench.io.suggest'
