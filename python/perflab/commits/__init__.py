"""The commits a bisect walks: a git repository's range read with plain git commands
(`git`), and where the search stands in it (`search`). Knows nothing of experiments."""
