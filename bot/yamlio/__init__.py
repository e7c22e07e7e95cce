"""Every YAML byte the bot reads or writes, and line-preserving edits of hand-kept files."""
