"""Reports read from generated sets (manifest.json): tables for people, JSON for tools."""
