"""``python -m relay.cli``: the same as the ``relay`` command."""

from relay.cli import main

raise SystemExit(main())
