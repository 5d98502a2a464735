"""``python -m scenemetrics`` is the ``scenemetrics`` command."""

from scenemetrics.cli import main

raise SystemExit(main())
