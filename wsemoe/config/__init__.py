"""Reading and validating inputs: strict YAML, the sweep config and its axes, presets, Hugging Face import."""
