"""Capture from Hugging Face transformers models: one module per route or job."""
