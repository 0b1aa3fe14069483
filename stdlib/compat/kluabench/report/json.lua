-- Moved to kluabench.io.json; this name is kept for one release.
return require 'kluabench.io.json'
