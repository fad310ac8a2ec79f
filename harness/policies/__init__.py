"""Recovery policies: built-ins, composable blocks, retry controls, presets and the registry."""
