-- Moved to kluabench.io.files; this name is kept for one release.
return require 'kluabench.io.files'
