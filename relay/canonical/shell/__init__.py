"""Shell commands as bash reads them, so rules match what runs, not what was typed. Pure.

``parse`` reads a command line as bash does (``relay.canonical.shell.words``: words split on
space, tab and newline only, quotes and escapes removed as bash removes them) into its
simple commands, those that substitutions, wrappers (``sudo``, ``env``, ``timeout``…) and
``sh -c``-like programs run included (``relay.canonical.shell.commands``). A part is *opaque*
unless relay can prove it a plain command with plain arguments: a ``$`` expansion, a
backtick, a brace expansion, a here-document, output to a file, a comment, a hidden
character, a construct relay does not follow (``case``, ``for``, ``[[``, functions,
``coproc``…), a program that runs text or other commands (``eval``, ``sh -c``, ``xargs``,
``find -exec``, ``su``…; ``relay.canonical.shell.programs``) or a builtin that changes later
commands (``export``, ``read``, ``set``…) each make it so. Deny and ask rules match any part
loosely; allow rules and grants must match every part word for word and never an opaque one
(``relay.canonical.shell.globs``). Built on the standard library alone: a hook imports it on
every tool call.
"""

from relay.canonical.shell.commands import parse
from relay.canonical.shell.globs import CommandGlob, glob_error
from relay.canonical.shell.parts import Parsed, Simple

__all__ = ["CommandGlob", "Parsed", "Simple", "glob_error", "parse"]
