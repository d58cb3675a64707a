"""Jinja templates of the generated scripts: one entry per variant, one partial per section."""
