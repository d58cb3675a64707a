"""Jinja templates of the generated scripts: one entry (`script.py.jinja`) for every strategy,
one partial per section; a partial specialises where a strategy's code differs."""
