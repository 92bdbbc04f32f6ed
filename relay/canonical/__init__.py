"""A tool use in canonical form, and the patterns rules and grants match on it. Pure.

``shell`` reads a Bash command as bash does (what cannot be proven plain is asked, never
allowed), ``paths`` normalises a path, and ``match`` turns a tool's input into the
``Subject`` rules and grants look at, and holds the ``Pattern`` both are written in. Rules
(``relay.gate``) and grants (``relay.grants``) both stand on this package.
"""
