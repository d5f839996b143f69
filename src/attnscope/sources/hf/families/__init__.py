"""Per-family capture for model code that predates transformers' AttentionInterface."""
